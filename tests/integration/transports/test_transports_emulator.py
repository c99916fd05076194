"""Live transports against the real venue emulator process (`caerus venue-sim`), which answers order entry with
caerus.sim.orders and fills against its own moving market: test credentials go to the emulator through its
CAERUS_SIM_* environment and to the transports through a 0600 credentials file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from eth_account import Account

from caerus import wire
from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.credentials import Secret
from caerus.venuekit.order_transport import VenueReply
from caerus.venues.binance import SPEC as BINANCE
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.hyperliquid import SPEC as HYPERLIQUID
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials
from tests.fixtures.transports_orders import next_reply
from tests.kit import records
from tests.kit.sim_account import start_sim_account

pytestmark = pytest.mark.integration


def _order(order_id: int, venue: int, px: float, qty: float) -> tuple:
    now = time.time_ns()
    return records.order(order_id, venue=venue, px=px, qty=qty, trigger_venue=venue, trigger_seq=1,
                         trigger_t_recv=now, trigger_t_publish=now, t_seen=now, t_decision=now, seq=order_id)


def _reply(transport) -> VenueReply:  # the emulator answers through its market model: longer bound
    return next_reply(transport, timeout=15.0)


def _until_filled(t, venue: int, first_id: int, px: float) -> VenueReply:
    """IOC buys at ``px`` (through the ask, inside the venues' price bands) until one fills."""
    deadline = time.monotonic() + 20
    oid = first_id
    while time.monotonic() < deadline:
        assert t.send_msg(_order(oid, venue, px, 0.002)).outcome == wire.Outcome.SENT
        r = _reply(t)
        assert r.order_id == oid
        if r.outcome != wire.Outcome.NOT_FILLED:
            return r
        oid += 1
        time.sleep(0.1)
    pytest.fail(f"no fill from the emulator within 20 s: {t.stats()}")


def test_both_live_transports_against_emulator_process(venue_sim_factory, tmp_path: Path) -> None:
    acct = start_sim_account(venue_sim_factory, tmp_path)
    sim, creds_file, api_key, secret = acct.sim, acct.creds, acct.api_key, acct.secret

    b = make_live_transport(BINANCE, network="testnet", credentials=load_credentials(BINANCE, creds_file),
                            enable_live=True, url=sim["binance_order_url"], ca_file=sim["ca_file"])
    h = make_live_transport(HYPERLIQUID, network="testnet",
                            credentials=load_credentials(HYPERLIQUID, creds_file), enable_live=True,
                            url=sim["hyperliquid_url"], ca_file=sim["ca_file"])  # base URL: path added
    bad_b = make_live_transport(BINANCE, network="testnet", enable_live=True, url=sim["binance_order_url"],
                                ca_file=sim["ca_file"],
                                credentials=BinanceCredentials(api_key=Secret(api_key), hmac_secret=Secret("0" * 64)))
    bad_h = make_live_transport(HYPERLIQUID, network="testnet", enable_live=True, url=sim["hyperliquid_url"] + "/ws",
                                ca_file=sim["ca_file"],
                                credentials=HyperliquidCredentials(private_key=Secret(Account.create().key.hex())))
    transports = (b, h, bad_b, bad_h)
    try:
        for t in transports:
            t.start()
        # A buy limit far above any emulated price crosses the ask: fills at the emulator's best ask once the
        # emulated market has published a book (before that there is no liquidity: NOT_FILLED, then retry).
        through = float(round(sim.mid() * 1.02))  # through the ask, inside both venues' price bands
        rb, rh = _until_filled(b, wire.Venue.BINANCE, 100, through), _until_filled(h, wire.Venue.HYPERLIQUID, 200,
                                                                                    through)
        assert rb.outcome in (wire.Outcome.FILLED, wire.Outcome.PARTIAL), rb
        assert rh.outcome in (wire.Outcome.FILLED, wire.Outcome.PARTIAL), rh
        assert 0 < rb.fill_px < through and 0 < rh.fill_px < through  # the emulated ask, not our limit
        # Shadow orders: built, signed and encoded like these, then dropped. Had any left the host, its reply
        # would come before the next real order's (which _until_filled checks by order id).
        for i in range(3):
            b.rehearse(_order(300 + i, wire.Venue.BINANCE, 10_000_000.0, 0.002))
            h.rehearse(_order(300 + i, wire.Venue.HYPERLIQUID, 10_000_000.0, 0.002))
        assert (b.stats()["rehearsed"], h.stats()["rehearsed"]) == (3, 3)
        sent = (b.stats()["sent"], h.stats()["sent"])
        _until_filled(b, wire.Venue.BINANCE, 400, through), _until_filled(h, wire.Venue.HYPERLIQUID, 500, through)
        assert b.stats()["sent"] > sent[0] and h.stats()["sent"] > sent[1]  # real orders still go, nonces still ok
        assert b.stats()["in_flight"] == 0 == h.stats()["in_flight"]
        # Every order frame sent has its kernel transmit stamp (t_wire_out), keyed by order id; rehearsals none.
        for t, first in ((b, 400), (h, 500)):
            stamps: dict[int, int] = {}
            deadline = time.monotonic() + 10
            while first not in stamps and time.monotonic() < deadline:
                stamps.update(t.tx_stamps())
                time.sleep(0.01)
            assert first in stamps and not set(stamps) & {300, 301, 302}, stamps
            assert abs(stamps[first] - time.time_ns()) < 60 * 10**9  # CLOCK_REALTIME ns, like t_sent
            assert t.stats()["tx_stamps"] >= 1 and t.stats()["tx_unavailable"] == 0
        bad_b.send_msg(_order(3, wire.Venue.BINANCE, 10_000_000.0, 0.002))
        bad_h.send_msg(_order(4, wire.Venue.HYPERLIQUID, 10_000_000.0, 0.002))
        r3, r4 = _reply(bad_b), _reply(bad_h)
        assert (r3.outcome, r3.venue_code) == (wire.Outcome.VENUE_REJECTED, -1022)
        assert r4.outcome == wire.Outcome.VENUE_REJECTED and "does not exist" in r4.message
    finally:
        for t in transports:
            t.close()
    assert sim.proc.alive(), sim.output()
    assert api_key not in sim.output() and secret not in sim.output()
