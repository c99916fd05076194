"""Venue bytes decoded without trusting their shape: nesting is bounded before any recursive decoder runs."""

from __future__ import annotations

import sys

import msgspec
import pytest

from caerus.net.untrusted import MAX_DEPTH, decode_untrusted, nesting_depth
from caerus.venues.binance import data as binance
from caerus.venues.frames import FrameKind
from caerus.venues.hyperliquid import data as hyperliquid

DEEP = [b"[" * 1_000_000, b'{"a":' * 100_000, b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)]


@pytest.fixture
def signing_stack_recursion_limit():
    """What importing eth-account/py_ecc does to the interpreter: recursion limit 100000."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    yield
    sys.setrecursionlimit(old)


@pytest.mark.parametrize("frame", DEEP, ids=["list-1M", "object-100k", "just-over-limit"])
def test_deep_nesting_is_refused_as_a_decode_error(frame: bytes, signing_stack_recursion_limit) -> None:
    with pytest.raises(msgspec.DecodeError, match="nested"):
        decode_untrusted(frame)


def test_ordinary_replies_and_brackets_inside_strings_decode() -> None:
    assert decode_untrusted(b'{"id":3,"result":{"orderId":1,"avgPrice":"1.5"}}') == {
        "id": 3, "result": {"orderId": 1, "avgPrice": "1.5"}}
    nested_text = b'{"msg":"' + b"[" * 500 + b'"}'
    assert decode_untrusted(nested_text) == {"msg": "[" * 500}
    assert nesting_depth(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) == MAX_DEPTH
    with pytest.raises(msgspec.DecodeError):
        decode_untrusted(b"{not json")


@pytest.mark.parametrize("classify", [binance.classify, hyperliquid.classify], ids=["binance", "hyperliquid"])
def test_control_classifiers_call_a_deep_frame_malformed(classify, signing_stack_recursion_limit) -> None:
    for frame in DEEP:
        kind, _ = classify(frame)
        assert kind == FrameKind.MALFORMED
