"""Reading the venues' answers to a status query (issue 14 item 4): Hyperliquid ``orderStatus`` and Binance
``order.status`` (the same parser as an order reply). Any bytes in, a clear result or None (the order stays
UNKNOWN and is asked again), never an exception."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caerus.venues.binance.execution import parse_order_reply
from caerus.venues.hyperliquid.execution import cloid, parse_order_status
from caerus.wire import Outcome
from tests.kit.transports import drain_replies, hl_transport


def _hl(status: str, orig: str = "0.002", left: str = "0.0", px: str = "95000") -> dict[str, Any]:
    order = {"coin": "BTC", "side": "B", "limitPx": px, "sz": left, "oid": 1, "timestamp": 1, "origSz": orig,
             "cloid": cloid(7)}
    return {"type": "info", "payload": {"type": "orderStatus",
                                        "data": {"status": "order", "order": {"order": order, "status": status,
                                                                              "statusTimestamp": 2}}}}


@pytest.mark.parametrize(("response", "want"), [
    (_hl("filled"), (Outcome.FILLED, 95000.0, 0.002)),
    (_hl("open", left="0.002"), (Outcome.SENT, 0.0, 0.0)),
    (_hl("open", left="0.0015"), (Outcome.PARTIAL, 95000.0, 0.0005)),
    (_hl("canceled", left="0.002"), (Outcome.NOT_FILLED, 0.0, 0.0)),
    (_hl("canceled", left="0.0005"), (Outcome.PARTIAL, 95000.0, 0.0015)),
    (_hl("iocCancelRejected", left="0.002"), (Outcome.NOT_FILLED, 0.0, 0.0)),
    ({"type": "info", "payload": {"type": "orderStatus", "data": {"status": "unknownOid"}}},
     (Outcome.NOT_FILLED, 0.0, 0.0)),
], ids=["filled", "open", "open-partial", "canceled", "canceled-partial", "rejected", "unknownOid"])
def test_hyperliquid_order_status_answers(response: dict[str, Any], want: tuple) -> None:
    parsed = parse_order_status(response)
    assert parsed is not None
    assert (parsed[0], parsed[1], pytest.approx(parsed[2])) == want


@pytest.mark.parametrize("response", [
    None, "text", {"type": "action"}, {"type": "info", "payload": {"data": {"status": "order"}}},
    _hl("filled", left="0.003"),  # more left than ordered
    _hl("filled", px="-1"), _hl("filled", orig="nan"), _hl("somethingNew"),
], ids=["none", "str", "not-info", "no-order", "left>orig", "negative-px", "nan", "unknown-status"])
def test_hyperliquid_unreadable_order_status_resolves_nothing(response: Any) -> None:
    assert parse_order_status(response) is None


def test_cloid_is_the_documented_128_bit_hex() -> None:
    assert cloid(7) == "0x" + "0" * 31 + "7" and len(cloid(2**130)) == 34


def test_binance_order_does_not_exist_means_nothing_filled() -> None:
    parsed = parse_order_reply({"id": 3, "status": 400, "error": {"code": -2013, "msg": "Order does not exist."}})
    assert parsed is not None and parsed[0] == Outcome.VENUE_REJECTED and parsed[2] == 0.0 and parsed[3] == -2013


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=20)


@settings(max_examples=300, deadline=None)
@pytest.mark.slow
@given(status=st.text(max_size=20) | st.sampled_from(["filled", "open", "canceled", "triggered"]),
       orig=_json, left=_json, px=_json)
def test_hyperliquid_order_status_never_raises_and_reports_only_sane_numbers(status: str, orig: Any, left: Any,
                                                                             px: Any) -> None:
    response = _hl(status)
    order = response["payload"]["data"]["order"]["order"]
    order.update(origSz=orig, sz=left, limitPx=px)
    parsed = parse_order_status(response)
    if parsed is not None:
        outcome, fpx, fqty = parsed[0], parsed[1], parsed[2]
        assert math.isfinite(fpx) and math.isfinite(fqty) and fpx >= 0 and fqty >= 0
        if outcome in (Outcome.FILLED, Outcome.PARTIAL):
            assert fpx > 0 and fqty > 0


def test_a_filled_order_of_size_zero_resolves_nothing() -> None:
    assert parse_order_status(_hl("filled", orig="0", left="0")) is None


# -- venue truth: the account's orderUpdates on the order connection -------------------------------------------
def _update(order_id: int, status: str, left: str, orig: str = "0.002") -> dict[str, Any]:
    order = {"coin": "BTC", "side": "B", "limitPx": "95000", "sz": left, "oid": 55, "timestamp": 1, "origSz": orig,
             "cloid": cloid(order_id)}
    return {"channel": "orderUpdates", "data": [{"order": order, "status": status, "statusTimestamp": 2}]}


def test_an_order_update_settles_an_order_whose_reply_has_not_come() -> None:
    t = hl_transport()
    t._pending[1] = (7, 0.002)
    t.ledger.awaiting(cloid(7), 1, True)
    t._on_message(_update(7, "open", "0.002"), 1)  # resting: not final, nothing settled
    assert drain_replies(t) == [] and t._pending
    t._on_message(_update(7, "canceled", "0.0005"), 2)  # an IOC that filled 0.0015 and had its rest canceled
    (r,) = drain_replies(t)
    assert (r.order_id, r.outcome, r.fill_qty, r.by_query) == (7, Outcome.PARTIAL, pytest.approx(0.0015), False)
    assert t._pending == {} and t.reply_counts["stream_resolved"] == 1
    # The late reply then finds nothing pending: it can never settle the order twice.
    t._on_message({"channel": "post", "data": {"id": 1, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": "0.0015", "avgPx": "95000", "oid": 55}}]}}}}}}, 3)
    assert drain_replies(t) == [] and t.reply_counts["unmatched"] == 1


def test_an_order_update_is_checked_against_the_reply_that_settled_it(caplog: pytest.LogCaptureFixture) -> None:
    t = hl_transport()
    for req, oid in ((1, 7), (2, 8)):
        t._pending[req] = (oid, 0.002)
        t.ledger.awaiting(cloid(oid), req, True)
        t._on_message({"channel": "post", "data": {"id": req, "response": {"type": "action", "payload": {
            "status": "ok", "response": {"type": "order", "data": {"statuses": [
                {"filled": {"totalSz": "0.002", "avgPx": "95000", "oid": 50 + oid}}]}}}}}}, 1)
    assert len(drain_replies(t)) == 2
    t._on_message(_update(7, "filled", "0.0"), 2)  # agrees with the reply
    t._on_message(_update(8, "canceled", "0.002"), 3)  # says nothing filled: the reply said 0.002 filled
    t._on_message(_update(99, "filled", "0.0"), 4)  # not an order of this session
    assert (t.reply_counts["stream_confirmed"], t.reply_counts["stream_mismatch"],
            t.reply_counts["stream_unmatched"]) == (1, 1, 1)
    assert "order 8: the reply said FILLED" in caplog.text and "NOT_FILLED" in caplog.text
    assert drain_replies(t) == []  # a mismatch is reported, never turned into a second settlement


def test_the_fills_of_a_resting_order_come_from_the_account_stream() -> None:
    t = hl_transport()
    t._pending[1] = (9, 0.002)
    t.ledger.awaiting(cloid(9), 1, False)  # a GTC
    t._on_message({"channel": "post", "data": {"id": 1, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [{"resting": {"oid": 59}}]}}}}}}, 1)
    (ack,) = drain_replies(t)
    assert ack.outcome == Outcome.SENT
    t._on_message(_update(9, "open", "0.002"), 2)  # the stream agrees: it rests
    assert drain_replies(t) == [] and t.reply_counts["stream_confirmed"] == 1
    t._on_message(_update(9, "open", "0.0005"), 3)  # 0.0015 of it filled on the book
    t._on_message(_update(9, "open", "0.0005"), 4)  # the same state again: nothing new
    t._on_message(_update(9, "filled", "0.0"), 5)  # the rest filled
    got = [(r.order_id, r.outcome, r.fill_qty, r.by_query) for r in drain_replies(t)]
    assert got == [(9, Outcome.PARTIAL, pytest.approx(0.0015), False), (9, Outcome.FILLED, 0.002, False)]
    assert t.reply_counts["stream_resolved"] == 2 and t.reply_counts["stream_mismatch"] == 0


# -- Binance: ORDER_TRADE_UPDATE on the user-data stream ----------------------------------------------------------
def _bn_transport() -> Any:
    import secrets

    from caerus.venuekit.credentials import Secret
    from caerus.venues.binance.credentials import BinanceCredentials
    from caerus.venues.binance.execution import BinanceTransport

    creds = BinanceCredentials(Secret(secrets.token_hex(32)), Secret(secrets.token_hex(32)))
    return BinanceTransport(network="testnet", enable_live=True, url="wss://127.0.0.1:9/ws-fapi/v1",
                            credentials=creds)


def _otu(order_id: int, status: str, filled: str, avg: str = "95000.0", tif: str = "IOC") -> dict[str, Any]:
    return {"e": "ORDER_TRADE_UPDATE", "E": 1, "T": 1, "o": {
        "s": "BTCUSDT", "c": f"caerus-{order_id}", "S": "BUY", "o": "LIMIT", "f": tif, "q": "0.002",
        "p": "95000.0", "ap": avg, "x": "TRADE", "X": status, "i": 55, "l": filled, "z": filled}}


def test_a_binance_user_data_update_settles_checks_and_never_doubles(caplog: pytest.LogCaptureFixture) -> None:
    from caerus.venues.binance.execution import parse_order_update

    assert parse_order_update({"e": "ACCOUNT_UPDATE"}) is None
    assert parse_order_update(_otu(1, "FILLED", "nan")) is None  # unreadable numbers never settle anything
    t = _bn_transport()
    assert t._user_base == "wss://127.0.0.1:9"  # the override's host serves the user-data route (the emulator)
    t._pending[1] = 7
    t.ledger.awaiting("caerus-7", 1, True)
    t._on_user_event(_otu(7, "NEW", "0"), 1)
    t._on_user_event(_otu(7, "PARTIALLY_FILLED", "0.0015"), 2)  # an IOC still matching: not the end
    assert drain_replies(t) == [] and t._pending == {1: 7}
    t._on_user_event(_otu(7, "EXPIRED", "0.0015"), 3)  # the rest expired: PARTIAL 0.0015, settled now
    (r,) = drain_replies(t)
    assert (r.order_id, r.outcome, r.fill_qty, r.fill_px) == (7, Outcome.PARTIAL, pytest.approx(0.0015), 95000.0)
    t._on_message({"id": 1, "status": 200, "result": {"status": "EXPIRED", "executedQty": "0.0015",
                                                      "avgPrice": "95000.0"}}, 4)
    assert drain_replies(t) == []  # the late reply finds nothing pending: never a second settlement
    # A reply that settled an order first, then the stream: agrees, or is named as a mismatch.
    for req, oid in ((2, 8), (3, 9)):
        t._pending[req] = oid
        t.ledger.awaiting(f"caerus-{oid}", req, True)
        t._on_message({"id": req, "status": 200, "result": {"status": "FILLED", "executedQty": "0.002",
                                                            "avgPrice": "95000.0"}}, 5)
    assert len(drain_replies(t)) == 2
    t._on_user_event(_otu(8, "FILLED", "0.002"), 6)
    t._on_user_event(_otu(9, "EXPIRED", "0.000"), 7)
    t._on_user_event(_otu(99, "FILLED", "0.002"), 8)  # another client's order on the account
    t._on_user_event({"e": "listenKeyExpired", "E": 9}, 9)
    c = t.reply_counts
    assert (c["stream_resolved"], c["stream_confirmed"], c["stream_mismatch"], c["stream_unmatched"],
            c["listen_key_expired"]) == (1, 1, 1, 1, 1)
    assert t._renew  # idle work takes a new listen key
    assert t.ledger.last_mismatch == ("binance order 9: the reply said FILLED 0.002, "
                                      "the account stream says NOT_FILLED 0")
    assert drain_replies(t) == []


def test_an_account_stream_that_contradicts_a_reply_halts_trading(capsys: pytest.CaptureFixture[str]) -> None:
    from caerus.execution.reconcile import PositionWatch
    from caerus.runtime.supervisor import HaltCause, Supervisor

    t = hl_transport()
    halts: list[HaltCause] = []
    sup = Supervisor(on_halt=halts.append)
    watch = PositionWatch(t, None, sup, interval_s=0, timeout_s=1.0, process="execution")  # stream check only
    t._pending[1] = (8, 0.002)
    t.ledger.awaiting(cloid(8), 1, True)
    t._on_message({"channel": "post", "data": {"id": 1, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": "0.002", "avgPx": "95000", "oid": 58}}]}}}}}}, 1)
    t._on_message(_update(8, "filled", "0.0"), 2)  # agrees
    watch.tick()
    assert halts == [] and not sup.halted
    t._pending[2] = (9, 0.002)
    t.ledger.awaiting(cloid(9), 2, True)
    t._on_message({"channel": "post", "data": {"id": 2, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": "0.002", "avgPx": "95000", "oid": 59}}]}}}}}}, 3)
    t._on_message(_update(9, "canceled", "0.002"), 4)  # the venue says nothing filled
    watch.tick()
    assert halts == [HaltCause.VENUE_MISMATCH]
    assert "hyperliquid order 9: the reply said FILLED 0.002, the account stream says NOT_FILLED 0" in watch.mismatch
    assert "trading halted" in capsys.readouterr().err
