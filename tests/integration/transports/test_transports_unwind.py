"""Leaving the venue clean (issue 33 item 6), end to end over TLS against a ``caerus venue-sim`` process: the
engine's resting order is cancelled at shutdown through the live transport (the venue's own open-orders list is
then empty and the account stream says CANCELED), and with ``flatten_on_halt`` a halt brings the venue's
position back to 0 with one reduce-only order."""

from __future__ import annotations

import hashlib
import hmac
import json
import ssl
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.engine import Engine
from caerus.execution.risk import RiskChecker
from caerus.execution.unwind import FlattenOnHalt, cancel_resting
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.venuekit.order_transport import VenueReply
from caerus.wire import Tif
from tests.fixtures.pipeline import make_book
from tests.kit import records
from tests.kit.rings import order_ring
from tests.kit.sim_account import https_base, sim_mid, start_sim_account, until, venue_code

pytestmark = pytest.mark.integration

WAIT_S = 30.0


def _venue_open_orders(sim: dict[str, Any], venue: str, api_key: str, secret: str, address: str) -> list[Any]:
    """The venue's own list of the account's open orders, over its REST API (not through the transport)."""
    ctx = ssl.create_default_context(cafile=sim["ca_file"])
    base = https_base(sim, venue)
    if venue == "hyperliquid":
        req = urllib.request.Request(base + "/info", method="POST",
                                     data=json.dumps({"type": "openOrders", "user": address}).encode())
    else:
        qs = urllib.parse.urlencode({"symbol": "BTCUSDT", "timestamp": int(time.time() * 1000)})
        sig = hmac.new(secret.encode(), qs.encode(), hashlib.sha256).hexdigest()
        req = urllib.request.Request(f"{base}/fapi/v1/openOrders?{qs}&signature={sig}",
                                     headers={"X-MBX-APIKEY": api_key})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        out = json.loads(r.read())
    assert isinstance(out, list), out
    return out


@pytest.fixture
def rig(venue_sim_factory, shm_dir: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    venue = request.param
    acct = start_sim_account(venue_sim_factory, tmp_path)
    sim, api_key, secret, hl = acct.sim, acct.api_key, acct.secret, acct.hl
    wire_venue = venue_code(venue)
    replies: list[VenueReply] = []
    box: dict[str, Any] = {}

    def on_reply(reply: VenueReply) -> None:
        replies.append(reply)
        box["engine"].on_reply(reply)

    transport = acct.transport(venue, on_reply=on_reply)
    mid = sim_mid(sim, venue)
    books = LatestBooks()
    books.put(make_book(wire_venue, mid - 0.5, mid + 0.5, time.time_ns()))
    risk = RiskChecker(RiskConfig(price_band_bps=500.0), books)
    consumer, producer = order_ring("uw.orders", 8)
    engine = box["engine"] = Engine(consumer, transport, risk, books, reply_timeout_ms=5000.0)
    transport.start()
    try:
        yield {"venue": venue, "wire_venue": wire_venue, "sim": sim, "transport": transport, "engine": engine,
               "producer": producer, "replies": replies, "mid": mid, "risk": risk,
               "open_orders": lambda: _venue_open_orders(sim, venue, api_key, secret, hl.address)}
    finally:
        transport.close()
        producer.close()
        consumer.close(unlink=True)


def _place(rig: Any, oid: int, px: float, tif: Tif) -> None:
    assert rig["producer"].try_push(*records.order(oid, venue=rig["wire_venue"], px=px, qty=0.002, tif=tif,
                                                   t_decision=time.time_ns(), seq=oid))
    assert rig["engine"].step()


@pytest.mark.parametrize("rig", ["binance", "hyperliquid"], indirect=True)
def test_shutdown_cancels_the_resting_order_through_the_transport(rig: Any) -> None:
    engine = rig["engine"]
    tick = lambda: engine.idle_work(time.time_ns())  # noqa: E731
    px = round(rig["mid"] * 0.97, 0)  # well under the bid: it rests
    _place(rig, 1, px, Tif.GTC)
    until("the resting acknowledgement", lambda: any(r.order_id == 1 for r in rig["replies"]), tick)
    assert 1 in engine.pending, rig["replies"]
    assert len(rig["open_orders"]()) == 1
    report = cancel_resting(engine, rig["transport"], 10.0)
    assert report == {"asked": 1, "canceled": 1, "gone": 0, "failed": 0}
    assert rig["open_orders"]() == []
    until("the stream's CANCELED", lambda: not engine.pending, tick)
    last = [r for r in rig["replies"] if r.order_id == 1][-1]
    assert "CANCELED" in last.message.upper() and last.fill_qty == 0.0, last
    # a second pass has nothing left to cancel; the venue would say the order is gone
    assert cancel_resting(engine, rig["transport"], 10.0)["asked"] == 0
    assert rig["transport"].cancel(1, 0, 10.0) is False


@pytest.mark.parametrize("rig", ["binance", "hyperliquid"], indirect=True)
def test_a_halt_with_flatten_on_brings_the_venue_position_to_zero(rig: Any) -> None:
    engine, transport = rig["engine"], rig["transport"]
    tick = lambda: engine.idle_work(time.time_ns())  # noqa: E731
    _place(rig, 1, round(rig["mid"] * 1.01, 0), Tif.IOC)  # through the ask: a position
    _place(rig, 2, round(rig["mid"] * 0.97, 0), Tif.GTC)  # and a resting order that could add to it later
    until("both replies", lambda: {1, 2} <= {r.order_id for r in rig["replies"]}, tick)
    held = transport.venue_state(10.0).position
    assert held > 0
    sup = Supervisor(on_halt=lambda cause: setattr(rig["risk"], "kill", True))
    off = FlattenOnHalt(False, engine, transport, sup, 10.0)
    on = FlattenOnHalt(True, engine, transport, sup, 10.0)
    on.tick()
    assert on.report is None  # not halted yet: nothing done
    sup.halt(HaltCause.KILL_FILE)
    off.tick()
    assert off.report is None and transport.venue_state(10.0).position == held  # off: the position stays
    on.tick()
    report = on.report
    assert report is not None and report["failed"] == 0, report
    assert report["cancels"]["canceled"] == 1 and report["positions"] == {0: held}
    assert report["filled"][0] == pytest.approx(held)
    state = transport.venue_state(10.0)
    assert state.position == 0.0 and rig["open_orders"]() == []
    # the engine's projected position follows: the cancelled order's CANCELED settles it, the flatten's fill moves it
    until("the stream's CANCELED", lambda: not engine.pending, tick)
    assert rig["risk"].positions[0] == pytest.approx(0.0, abs=1e-12)
    on.tick()  # once: a second tick sends nothing
    assert on.report is report and transport.venue_state(10.0).position == 0.0
