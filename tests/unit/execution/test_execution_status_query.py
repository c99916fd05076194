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
