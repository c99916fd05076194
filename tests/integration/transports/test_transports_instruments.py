"""Live order entry for many instruments (issue 32 item 1), end to end against a ``caerus venue-sim`` process
emulating BTC, ETH and SOL: the session's instrument list comes from the emulator's own listings (as a session
reads them), the engine trades every instrument through the live transport of each venue, and

* each instrument's position in the engine equals the venue's, and the position watch compares them while
  trading goes on;
* when another client trades one instrument on the same account, the watch halts trading naming that
  instrument (and not the others);
* an order for an instrument outside the list is refused before it reaches the transport (and the transport
  itself refuses one before signing: the unit tests of each venue);
* on Hyperliquid, every fill of ours arrives on ``userFills`` and agrees with the reply that settled it."""

from __future__ import annotations

import json
import math
import os
import secrets
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.credentials import load_credentials
from caerus.execution.engine import Engine
from caerus.execution.reconcile import PositionWatch, reconcile_at_start
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.live import make_live_transport
from caerus.instruments import InstrumentSet, parse_symbols
from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.session.instruments import fetch_listings, join
from caerus.wire import ORDER, RiskReject, Venue
from tests.fixtures.pipeline import make_book
from tests.fixtures.transports_orders import next_reply
from tests.kit import records

pytestmark = pytest.mark.integration

WAIT_S = 30.0
SYMBOLS = "BTC,ETH,SOL"


def _until(what: str, cond: Any, tick: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        tick()
        time.sleep(0.02)


def _mids(sim: Any, venue: str, insts: InstrumentSet) -> list[float]:
    """Each instrument's current mid on ``venue``, over the emulator's REST API (what its order entry fills
    against); bounded retry while the market starts."""
    ctx = ssl.create_default_context(cafile=sim["ca_file"])
    base = "https" + sim[f"{venue}_url"].removeprefix("wss")
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            if venue == "hyperliquid":
                req = urllib.request.Request(base + "/info", data=b'{"type":"allMids"}', method="POST")
                with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                    mids = json.loads(r.read())
                return [float(mids[i.hl_coin]) for i in insts]
            out = []
            for i in insts:
                with urllib.request.urlopen(f"{base}/fapi/v1/ticker/bookTicker?symbol={i.binance_symbol}",
                                            context=ctx, timeout=5) as r:
                    t = json.loads(r.read())
                out.append((float(t["bidPrice"]) + float(t["askPrice"])) / 2)
            return out
        except (KeyError, OSError, ValueError):
            assert time.monotonic() < deadline, f"no {venue} market from the emulator within {WAIT_S} s"
            time.sleep(0.2)


def _qty(inst: Any, mid: float) -> float:
    """A size both venues accept: a whole number of both steps, worth more than both minimums ($10 on
    Hyperliquid)."""
    step = max(inst.lot_size, 10.0 ** -inst.sz_decimals)
    return round(math.ceil(max(inst.min_notional, 10.0) * 1.5 / mid / step) * step, 8)


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_three_instruments_trade_reconcile_and_halt_by_name(venue_sim_factory: Any, shm_dir: Path,
                                                            tmp_path: Path, venue: str) -> None:
    api_key, secret, hl = secrets.token_hex(32), secrets.token_hex(32), Account.create()
    sim = venue_sim_factory(args=["--symbols", SYMBOLS],
                            env={"CAERUS_SIM_BINANCE_API_KEY": api_key, "CAERUS_SIM_BINANCE_SECRET": secret,
                                 "CAERUS_SIM_HL_ADDRESS": hl.address})
    creds = tmp_path / "credentials.toml"
    creds.write_text(f'[binance]\napi_key = "{api_key}"\nsecret = "{secret}"\n\n'
                     f'[hyperliquid]\nprivate_key = "{hl.key.hex()}"\n')
    os.chmod(creds, 0o600)
    info, meta = fetch_listings(sim["binance_url"], sim["hyperliquid_url"], ca_file=sim["ca_file"])
    insts = join(parse_symbols(SYMBOLS), info, meta)  # the venues' own rules: asset index, szDecimals, filters
    assert insts.names == ("BTC", "ETH", "SOL") and len({i.hl_asset for i in insts}) == 3
    url = sim["binance_order_url"] if venue == "binance" else sim["hyperliquid_url"]
    wire_venue = Venue.BINANCE if venue == "binance" else Venue.HYPERLIQUID
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    def transport(**kw: Any) -> Any:
        return make_live_transport(venue, network="testnet", credentials=load_credentials(venue, creds),
                                   enable_live=True, url=url, ca_file=sim["ca_file"], instruments=insts, **kw)

    ours, other = transport(on_reply=on_reply), transport()
    mids = _mids(sim, venue, insts)
    qtys = [_qty(i, m) for i, m in zip(insts, mids, strict=True)]
    books = LatestBooks(instruments=len(insts))
    risk = RiskChecker(RiskConfig(price_band_bps=500.0, max_orders_per_s=100), books, instruments=insts)
    sup = Supervisor(on_halt=lambda cause: setattr(risk, "kill", True))
    consumer = MpscConsumer.create("mi.orders", ORDER, 16)
    producer = MpscProducer.attach("mi.orders", ORDER, timeout=1)
    engine = Engine(consumer, ours, risk, books, reply_timeout_ms=5000.0)
    watch = PositionWatch(ours, engine, sup, interval_s=0.2, timeout_s=10.0, process="execution")
    seq = [0]

    def step() -> None:  # housekeeping, condensed
        engine.idle_work(time.time_ns())
        watch.tick()

    def push(k: int, px: float, qty: float) -> None:
        seq[0] += 1
        now = time.time_ns()
        books.put(make_book(wire_venue, px * 0.999, px * 1.001, now, symbol=k) if k < len(insts) else
                  make_book(wire_venue, px * 0.999, px * 1.001, now))
        assert producer.try_push(*records.order(seq[0], venue=wire_venue, px=px, qty=qty, t_decision=now,
                                                seq=seq[0], symbol=k))
        assert engine.step()

    try:
        ours.start()
        other.start()
        assert reconcile_at_start(ours, risk, 10.0, "execution") is not None
        assert risk.positions == [0.0, 0.0, 0.0]  # a fresh account
        for k in range(len(insts)):  # a buy through each instrument's ask: the IOC fills (maybe in part)
            push(k, mids[k] * 1.01, qtys[k])
            _until(f"{insts[k].name}'s reply", lambda: not engine.pending, step)
        held = list(risk.positions)
        assert all(p > 0 for p in held), (held, ours.stats())
        # Each instrument's position is the venue's, and the watch compares them while trading goes on.
        state = ours.venue_state(10.0)
        assert state.positions == pytest.approx(held) and state.resting_by == (0.0, 0.0, 0.0)
        _until("position checks", lambda: watch.checks >= 2, step)
        assert not sup.halted and watch.mismatch == "", watch.summary()
        if venue == "hyperliquid":  # every fill arrived on userFills and agrees with its reply
            _until("userFills", lambda: ours.stats()["fills_confirmed"] + ours.stats()["fills_resolved"] >= 3,
                   step)
            assert ours.ledger.mismatches == 0 and ours.stats()["fills_mismatch"] == 0, ours.stats()
        # An instrument outside the list: refused before the transport, nothing sent.
        sent = ours.stats()["sent"]
        push(len(insts), mids[0], qtys[0])
        assert risk.rejects[RiskReject.UNKNOWN_INSTRUMENT] == 1 and ours.stats()["sent"] == sent
        # Another client on the same account buys ETH: that instrument's venue position moves, the engine's
        # does not; the next check halts trading naming ETH.
        assert other.send_msg(records.order(900, venue=wire_venue, px=mids[1] * 1.01, qty=qtys[1], symbol=1,
                                            t_decision=time.time_ns(), seq=1)).outcome.name == "SENT"
        assert next_reply(other, timeout=WAIT_S).fill_qty > 0
        _until("the halt", lambda: sup.halted, step)
        assert sup.halt_cause == HaltCause.VENUE_MISMATCH
        assert f"position mismatch with {venue} on ETH" in watch.mismatch, watch.mismatch
        assert f"the engine's position from confirmed fills is {held[1]:+g} ETH" in watch.mismatch
        assert "BTC" not in watch.mismatch and "SOL" not in watch.mismatch
        # Every later order, whatever its instrument, is refused by the kill switch, never sent.
        sent = ours.stats()["sent"]
        push(2, mids[2] * 1.01, qtys[2])
        assert risk.rejects[RiskReject.KILL_SWITCH] == 1 and ours.stats()["sent"] == sent
        assert ours.stats()["stream_mismatch"] == 0  # the other client's order is not ours: unmatched, not wrong
    finally:
        watch.close()
        ours.close()
        other.close()
        producer.close()
        consumer.close(unlink=True)
