"""Property-based fuzzing of both live transports' reply readers (issue 12): whatever the order connection carries,
the reader never raises, and every in-flight order is either resolved by a reply that parsed (one VenueReply with
finite, non-negative numbers) or stays tracked (``in_flight`` counts it) -- an order is never lost to a reply.

In-process: the transports are built but not started (no connection); replies go straight to their reader-side
``_on_message``, as the session's reader thread hands them over after the bounded-depth decode. Fixed example budget
and seed (``CAERUS_FUZZ_EXAMPLES=N`` for a longer hunt with fresh examples).
"""

from __future__ import annotations

import math
import os
import secrets
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caerus import wire
from caerus.venuekit.credentials import Secret
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.execution import BinanceTransport
from tests.kit.transports import drain_replies, hl_transport

EXAMPLES = int(os.environ.get("CAERUS_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="CAERUS_FUZZ_EXAMPLES" not in os.environ,
                database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_numbers = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from(["NaN", "inf", "-1", "0", "0.010", "100000.0", "1e400", "", "x"]))
_scalars = st.one_of(st.none(), st.booleans(), _numbers, st.text(max_size=8))
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c,
                                                                                     max_size=3), max_leaves=8)


def _maybe(value: Any) -> st.SearchStrategy[Any]:
    """The documented value, or anything at all, or (as a sentinel) absent."""
    return st.one_of(st.just(value), _values, st.just(_ABSENT))


_ABSENT = object()


def _drop_absent(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not _ABSENT}


_binance_result = st.fixed_dictionaries({
    "status": _maybe("FILLED") | st.sampled_from(["NEW", "PARTIALLY_FILLED", "EXPIRED", "CANCELED",
                                                   "EXPIRED_IN_MATCH"]),
    "executedQty": _maybe("0.010") | _numbers, "avgPrice": _maybe("100000.0") | _numbers,
    "cumQuote": _maybe("1000.0") | _numbers}).map(_drop_absent)
_binance_replies = st.fixed_dictionaries({
    "id": st.one_of(st.integers(1, 4), _values), "status": _maybe(200) | st.sampled_from([400, 401, 503]),
    "result": _binance_result | _values, "error": st.just(_ABSENT) | _values}).map(_drop_absent)

_hl_status = st.one_of(
    st.fixed_dictionaries({"filled": st.fixed_dictionaries({"totalSz": _numbers, "avgPx": _numbers,
                                                            "oid": _scalars}) | _values}),
    st.fixed_dictionaries({"resting": st.fixed_dictionaries({"oid": _scalars}) | _values}),
    st.fixed_dictionaries({"error": _scalars}),
    st.sampled_from(["waitingForFill", "waitingForTrigger", "success"]), _values)
_hl_response = st.one_of(
    st.fixed_dictionaries({"type": st.just("action"), "payload": st.fixed_dictionaries({
        "status": _maybe("ok") | st.just("err"),
        "response": st.fixed_dictionaries({"type": st.just("order"), "data": st.fixed_dictionaries({
            "statuses": st.lists(_hl_status, max_size=2) | _values}) | _values}) | _values}).map(_drop_absent)
        | _values}),
    st.fixed_dictionaries({"type": st.just("error"), "payload": _values}), _values)
_hl_replies = st.one_of(
    st.fixed_dictionaries({"channel": st.just("post"), "data": st.fixed_dictionaries({
        "id": st.one_of(st.integers(1, 4), _values), "response": _hl_response}) | _values}),
    st.fixed_dictionaries({"channel": st.sampled_from(["error", "pong", "subscriptionResponse"]), "data": _values}),
    _values)


def _binance() -> BinanceTransport:
    creds = BinanceCredentials(Secret(secrets.token_hex(16)), hmac_secret=Secret(secrets.token_hex(16)))
    return BinanceTransport(network="testnet", enable_live=True, url="wss://127.0.0.1:9/ws-fapi/v1",
                            credentials=creds)


_BUILT: dict[str, Any] = {}


def _once(make: Any) -> Any:
    """One transport per kind for the whole run (building the signer dominates an example otherwise)."""
    if make.__name__ not in _BUILT:
        _BUILT[make.__name__] = make()
    t = _BUILT[make.__name__]
    t._pending.clear()
    while t.poll_reply() is not None:
        pass
    return t


def _check(transport: Any, replies: list[Any], pending: dict[int, Any]) -> None:
    transport._pending.update(pending)
    before = len(transport._pending)
    for msg in replies:
        counts = dict(transport.reply_counts)
        transport._on_message(msg, 1)  # must not raise, whatever msg is
        moved = {k: transport.reply_counts[k] - counts[k] for k in counts if transport.reply_counts[k] != counts[k]}
        assert sum(moved.values()) <= 1, moved
    delivered = drain_replies(transport)
    # no order lost: each one either got exactly one reply or is still tracked
    assert len(delivered) + len(transport._pending) == before
    assert len({r.order_id for r in delivered}) == len(delivered)
    for r in delivered:
        assert isinstance(r.outcome, wire.Outcome)
        assert math.isfinite(r.fill_px) and math.isfinite(r.fill_qty) and r.fill_px >= 0 and r.fill_qty >= 0, r
        if r.outcome in (wire.Outcome.FILLED, wire.Outcome.PARTIAL):
            assert r.fill_px > 0 and r.fill_qty > 0, r


@pytest.mark.slow
@FUZZ
@given(replies=st.lists(_binance_replies, min_size=1, max_size=6))
def test_binance_reply_reader_never_raises_and_never_loses_an_order(replies: list[Any]) -> None:
    _check(_once(_binance), replies, {1: 101, 2: 102, 3: 103})


@pytest.mark.slow
@FUZZ
@given(replies=st.lists(_hl_replies, min_size=1, max_size=6))
def test_hyperliquid_reply_reader_never_raises_and_never_loses_an_order(replies: list[Any]) -> None:
    _check(_once(hl_transport), replies, {1: (101, 0.01), 2: (102, 0.01), 3: (103, 0.01)})


@pytest.mark.parametrize("make, reply, pending", [
    (_binance, {"id": 1, "status": 200, "result": {"status": "FILLED", "executedQty": "0.010",
                                                   "avgPrice": "100000.0"}}, {1: 101}),
    (hl_transport, {"channel": "post", "data": {"id": 1, "response": {"type": "action", "payload": {
        "status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": "0.01", "avgPx": "100000", "oid": 9}}]}}}}}}, {1: (101, 0.01)}),
], ids=["binance", "hyperliquid"])
def test_the_documented_fill_reply_resolves_its_order(make: Any, reply: dict[str, Any],
                                                      pending: dict[int, Any]) -> None:
    # The generators start from these shapes: make sure the reader accepts them, or the fuzz would only ever
    # exercise the refusal paths.
    t = make()
    t._pending.update(pending)
    t._on_message(reply, 1)
    r = t.poll_reply()
    assert r is not None and (r.order_id, r.outcome, r.fill_px, r.fill_qty) == (101, wire.Outcome.FILLED,
                                                                               100_000.0, 0.01)
    assert t._pending == {}


def test_a_partial_fill_reply_without_a_filled_quantity_leaves_the_order_tracked() -> None:
    # Found by the fuzz above: PARTIALLY_FILLED with a price but no executedQty read as a partial fill of 0 at that
    # price. A reply that contradicts itself resolves nothing: the order stays tracked (a status query, a later
    # reply or a disconnect resolves it).
    t = _binance()
    t._pending.update({1: 101})
    t._on_message({"id": 1, "status": 200, "result": {"status": "PARTIALLY_FILLED", "avgPrice": "100000.0",
                                                      "cumQuote": "1000.0"}}, 1)
    assert t.poll_reply() is None and t._pending == {1: 101}
