"""Hyperliquid's ``userFills`` in the account-stream ledger (issue 32): the venue's fills settle an order whose
reply has not come, confirm what a reply said, and a disagreement (more filled, or less after the grace period)
is a mismatch naming the instrument and both sides. A real transport object, fed the frames its reader thread
would read (no connection: the frames are what the emulator sends, see tests/integration/transports)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from caerus.instruments import Instrument, InstrumentSet
from caerus.venues.hyperliquid.execution import HyperliquidTransport, cloid
from caerus.wire import Outcome, Venue
from tests.kit import records
from tests.kit.transports import drain_replies, hl_transport

BTC = Instrument(id=0, name="BTC", binance_symbol="BTCUSDT", hl_coin="BTC", tick_size=0.1, lot_size=0.001,
                 min_qty=0.001, min_notional=100.0, hl_asset=0, sz_decimals=5)
ETH = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                 min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)


def _transport(grace_s: float = 5.0) -> HyperliquidTransport:
    return hl_transport(instruments=InstrumentSet([BTC, ETH]), fills_grace_s=grace_s)


def _fills(order_id: int, *sizes: str, px: str = "3500", snapshot: bool = False) -> dict[str, Any]:
    fills = [{"coin": "ETH", "px": px, "sz": sz, "side": "B", "time": 1, "oid": 50, "tid": i, "cloid": cloid(order_id)}
             for i, sz in enumerate(sizes)]
    data: dict[str, Any] = {"user": "0x0", "fills": fills}
    if snapshot:
        data["isSnapshot"] = True
    return {"channel": "userFills", "data": data}


def _reply(req: int, total: str) -> dict[str, Any]:
    return {"channel": "post", "data": {"id": req, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": total, "avgPx": "3500", "oid": 50}}]}}}}}}


def _await(t: HyperliquidTransport, req: int, order_id: int, size: float, ioc: bool = True) -> None:
    t._pending[req] = (order_id, size)
    t.ledger.awaiting(cloid(order_id), req, ioc, "ETH", size)


def test_fills_that_complete_an_order_settle_it_before_its_reply() -> None:
    t = _transport()
    _await(t, 1, 7, 0.01)
    t._on_message(_fills(7, "0.004"), 1)  # part of it: not settled yet
    assert drain_replies(t) == [] and t._pending
    t._on_message(_fills(7, "0.006", px="3510"), 2)  # the rest
    (r,) = drain_replies(t)
    assert (r.order_id, r.outcome, r.fill_qty) == (7, Outcome.FILLED, pytest.approx(0.01))
    assert r.fill_px == pytest.approx(3506.0)  # the fills' size-weighted price
    assert t.reply_counts["fills_resolved"] == 1 and not t._pending
    assert t.summary()["fills_by_instrument"] == {"BTC": 0, "ETH": 2}  # each fill under its coin's instrument
    t._on_message(_reply(1, "0.01"), 3)  # the late reply finds nothing pending: never settled twice
    assert drain_replies(t) == [] and t.ledger.mismatches == 0


def test_fills_agreeing_with_the_reply_are_confirmed_and_a_snapshot_is_skipped() -> None:
    t = _transport()
    _await(t, 1, 7, 0.01)
    t._on_message(_reply(1, "0.01"), 1)
    assert [r.outcome for r in drain_replies(t)] == [Outcome.FILLED]
    t._on_message(_fills(7, "0.01"), 2)
    t._on_message(_fills(7, "0.01", snapshot=True), 3)  # the history on (re)subscribing: counted when it happened
    assert (t.reply_counts["fills_confirmed"], t.reply_counts["fills_snapshot"], t.ledger.mismatches) == (1, 1, 0)


def test_more_filled_than_the_reply_said_is_a_mismatch_naming_the_instrument() -> None:
    t = _transport()
    _await(t, 1, 7, 0.01)
    t._on_message(_reply(1, "0.004"), 1)  # PARTIAL 0.004 (an IOC)
    t._on_message(_fills(7, "0.004", "0.002"), 2)
    assert t.ledger.mismatches == 1 and t.reply_counts["fills_mismatch"] == 1
    assert t.ledger.last_mismatch == ("hyperliquid ETH order 7: the reply said PARTIAL 0.004, the account stream "
                                      "says userFills show 0.006 filled")


def test_fills_short_of_the_reply_are_a_mismatch_only_after_the_grace_period() -> None:
    t = _transport(grace_s=0.05)
    _await(t, 1, 7, 0.01)
    t._on_message(_reply(1, "0.01"), 1)
    t._on_message(_fills(7, "0.004"), 2)
    t.pump(time.time_ns())
    assert t.ledger.mismatches == 0  # within the grace period: the rest may still come
    time.sleep(0.1)
    t.pump(time.time_ns())
    assert t.ledger.mismatches == 1 and t.reply_counts["fills_mismatch"] == 1
    assert "ETH order 7: the reply said FILLED 0.01" in t.ledger.last_mismatch
    assert "userFills show 0.004 filled after 0.05 s" in t.ledger.last_mismatch
    t.pump(time.time_ns())
    assert t.ledger.mismatches == 1  # reported once


def test_an_order_for_an_instrument_outside_the_list_is_refused_before_it_is_signed() -> None:
    t = _transport()
    res = t.send_msg(records.order(3, venue=int(Venue.HYPERLIQUID), px=3500.0, qty=0.01, symbol=2))
    # no nonce taken (build_request takes one before it signs), nothing pending, nothing awaited
    assert res.outcome == Outcome.SEND_FAILED and t._signer.last_nonce == 0
    assert t.reply_counts["unknown_instrument"] == 1 and not t._pending and not t.ledger._awaiting
    with pytest.raises(IndexError, match="instrument id 2 is not in the session's list of 2"):
        t.build_request(records.order(3, px=3500.0, qty=0.01, symbol=2), 1, 1)


@pytest.mark.parametrize(("px", "qty"), [(3500.0, 0.00004), (3500.0, 0.001)], ids=["size-0-on-szDecimals", "$3.5"])
def test_an_order_below_the_venues_minimum_is_refused_before_it_is_signed(px: float, qty: float) -> None:
    """0.00004 ETH is 0 on ETH's 4 szDecimals; 0.001 ETH at 3,500 is $3.5, under Hyperliquid's $10 minimum (a
    many-instrument session sizing ETH as BTC sent these and the venue refused every one)."""
    t = _transport()
    res = t.send_msg(records.order(3, venue=int(Venue.HYPERLIQUID), px=px, qty=qty, symbol=1))
    assert res.outcome == Outcome.SEND_FAILED and t._signer.last_nonce == 0  # no nonce taken, nothing signed
    assert t.reply_counts["below_minimum"] == 1 and t.send_failed == 1 and not t._pending and not t.ledger._awaiting


def test_the_venues_rejections_are_counted_by_their_text() -> None:
    t = _transport()
    for req, order_id in ((1, 7), (2, 8)):
        _await(t, req, order_id, 0.001)
        t._on_message({"channel": "post", "data": {"id": req, "response": {"type": "action", "payload": {
            "status": "ok", "response": {"type": "order", "data": {"statuses": [
                {"error": "Order must have minimum value of $10. asset=1"}]}}}}}}, 1)
    assert [r.outcome for r in drain_replies(t)] == [Outcome.VENUE_REJECTED] * 2
    assert t.summary()["rejects_by_reason"] == {"Order must have minimum value of $10. asset=1": 2}
