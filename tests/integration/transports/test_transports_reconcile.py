"""Start-up reconciliation (issue 14 item 3) against a ``caerus venue-sim`` process: a fresh transport reads the
position (and, on Hyperliquid, the open orders) an earlier session left at the venue, and the execution process
trades from that state or refuses to start when the venue cannot be read."""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from caerus import wire
from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.order_session import LiveTransportError
from caerus.venues import registry
from tests.fixtures.common import Started
from tests.fixtures.transports_orders import next_reply
from tests.kit import records
from tests.kit.sim_account import start_sim_account, venue_code

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def desk(venue_sim_factory: Any, tmp_path: Path) -> tuple[Any, Path, Any]:
    acct = start_sim_account(venue_sim_factory, tmp_path)
    return acct.sim, acct.creds, acct.hl


def _transport(sim: Any, creds: Path, venue: str, **options: Any) -> Any:
    url = sim["binance_order_url"] if venue == "binance" else sim["hyperliquid_url"]
    spec = registry.get(venue)
    return make_live_transport(spec, network="testnet", credentials=load_credentials(spec, creds), enable_live=True,
                               url=url, ca_file=sim["ca_file"], **options)


def _order(oid: int, venue: int, side: int, px: float, tif: int = int(wire.Tif.IOC)) -> tuple:
    now = time.time_ns()
    # 0.002: above Binance's 100 USDT minimum notional at a price inside its band (about 95,000)
    return records.order(oid, venue=venue, side=side, px=px, qty=0.002, tif=tif, t_decision=now, seq=oid)


def _fill(t: Any, venue: int, side: int, first_id: int, mid: float) -> float:
    """Send IOCs through the book (2% past ``mid``, inside the venues' price bands) until one fills; the signed
    quantity filled."""
    deadline = time.monotonic() + 30
    oid = first_id
    px = float(round(mid * (1.02 if side > 0 else 0.98)))
    while time.monotonic() < deadline:
        assert t.send_msg(_order(oid, venue, side, px)).outcome == wire.Outcome.SENT
        r = next_reply(t, timeout=15.0)
        if r.outcome in (wire.Outcome.FILLED, wire.Outcome.PARTIAL):
            return side * r.fill_qty
        oid += 1
        time.sleep(0.1)
    pytest.fail(f"no fill from the emulator within 30 s: {t.stats()}")


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_a_fresh_transport_reads_the_position_an_earlier_session_left(desk: tuple, venue: str) -> None:
    sim, creds, _ = desk
    wire_venue = venue_code(venue)
    first = _transport(sim, creds, venue)
    first.start()
    try:
        held = _fill(first, wire_venue, +1, 100, sim.mid()) + _fill(first, wire_venue, +1, 200, sim.mid())
        if venue == "hyperliquid":  # a resting buy far below the market: an open order the restart must count
            assert first.send_msg(_order(300, wire_venue, +1, 50_000.0, int(wire.Tif.GTC))).outcome \
                == wire.Outcome.SENT
            assert next_reply(first, timeout=15.0).outcome == wire.Outcome.SENT  # acknowledged, resting
        # Venue truth: the account stream (Hyperliquid orderUpdates on the order connection, Binance's user-data
        # stream on its own connection) agrees with every reply: each order sent is confirmed, none contradicted.
        # Binance's two connections have a reader thread each, so an order's update may be read before its reply:
        # then the update settles the order (resolved) and the reply comes second -- the venue said it once either
        # way.
        def vouched(s: dict[str, int]) -> int:
            return s["stream_confirmed"] + s["stream_resolved"]

        deadline = time.monotonic() + 15
        while vouched(first.stats()) < first.stats()["sent"] and time.monotonic() < deadline:
            time.sleep(0.05)
        stats = first.stats()
        assert vouched(stats) == stats["sent"] >= 2, stats
        assert stats["stream_mismatch"] == 0 and stats["stream_unmatched"] == 0, stats
    finally:
        first.close()
    second = _transport(sim, creds, venue)  # the restart
    second.start()
    try:
        state = second.venue_state(10.0)
    finally:
        second.close()
    assert state.position == pytest.approx(held) and held > 0
    assert state.resting == pytest.approx(0.002 if venue == "hyperliquid" else 0.0)


def test_a_venue_that_refuses_the_position_query_is_named(desk: tuple, tmp_path: Path) -> None:
    sim, _, _ = desk
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(f'[binance]\napi_key = "{secrets.token_hex(32)}"\nsecret = "{secrets.token_hex(32)}"\n')
    os.chmod(wrong, 0o600)
    # With its user-data stream (the default) the transport refuses to start: no listen key for this key.
    with pytest.raises(LiveTransportError, match=r"user-data stream refused: .*-2015"):
        _transport(sim, wrong, "binance").start()
    t = _transport(sim, wrong, "binance", user_stream=False)
    t.start()
    try:
        with pytest.raises(LiveTransportError, match="position query refused: -2015"):
            t.venue_state(10.0)
    finally:
        t.close()


def test_the_execution_process_trades_from_the_venue_state_or_refuses_to_start(desk: tuple, shm_dir: Path,
                                                                               tmp_path: Path) -> None:
    sim, creds, _ = desk
    first = _transport(sim, creds, "hyperliquid")
    first.start()
    try:
        held = _fill(first, wire.Venue.HYPERLIQUID, +1, 100, sim.mid())
    finally:
        first.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def execution(creds_file: Path, name: str, venue: str) -> Started:
        url = sim["hyperliquid_url"] if venue == "hyperliquid" else sim["binance_order_url"]
        return Started([sys.executable, "-m", "caerus", "execution", "--segment", f"rc.{name}.orders", "--transport",
                        venue, "--enable-live", "--network", "testnet", "--credentials", str(creds_file), "--url",
                        url, "--ca-file", sim["ca_file"], "--wait-policy", "sleep", "--state-dir",
                        str(tmp_path / "state"),
                        "--book-segment", f"rc.{name}.book"],  # never created: it waits there after reconciling
                       env=env, cwd=ROOT, log=tmp_path / f"{name}.log")

    ok = execution(creds, "ok", "hyperliquid")
    try:
        deadline = time.monotonic() + 30
        while "reconciled with hyperliquid" not in ok.output():
            assert ok.alive() and time.monotonic() < deadline, ok.output()
            time.sleep(0.1)
        assert f"venue position {held:+g} BTC" in ok.output()
    finally:
        assert ok.stop(grace=10) == 0, ok.output()
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(f'[binance]\napi_key = "{secrets.token_hex(32)}"\nsecret = "{secrets.token_hex(32)}"\n')
    os.chmod(wrong, 0o600)
    refused = execution(wrong, "refused", "binance")
    try:
        deadline = time.monotonic() + 30
        while refused.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert refused.proc.poll() == 1, refused.output()
        # A key the venue does not know: refused before any trading, naming the venue's error (the listen key of
        # the user-data stream is the first thing it asks for, then the position).
        assert "refused" in refused.output() and "-2015" in refused.output(), refused.output()
    finally:
        refused.stop(grace=5)
