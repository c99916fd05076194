"""Venue bytes decoded without trusting their shape: nesting is bounded before any recursive decoder runs."""

from __future__ import annotations

import json
import sys

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caerus.net.untrusted import MAX_DEPTH, decode_untrusted, nesting_depth, string_mask
from caerus.venuekit.frames import FrameKind
from caerus.venues.binance import data as binance
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


# -- the scan itself is linear and exact (issue 26) ---------------------------------------------------------------


def _reference_depth(data: bytes) -> tuple[int, bool]:
    """A left-to-right JSON tokenizer's deepest nesting, and whether it stopped early (a backslash outside a
    string, which a decoder rejects at once: beyond that byte the decoder never recurses)."""
    depth = best = 0
    inside = escaped = False
    for c in data:
        if inside:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                inside = False
        elif c == 0x5C:
            return best, True
        elif c == 0x22:
            inside = True
        elif c in (0x5B, 0x7B):
            depth += 1
            best = max(best, depth)
        elif c in (0x5D, 0x7D):
            depth -= 1
    return best, False


def _scan_depth(data: bytes) -> int:
    arr = np.frombuffer(data, dtype=np.uint8)
    outside = ~string_mask(arr)
    step = (np.isin(arr, [0x5B, 0x7B]) & outside).astype(np.int64) - (np.isin(arr, [0x5D, 0x7D]) & outside)
    return int(np.cumsum(step).max(initial=0))


_TOKENS = st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b'\\"', b"\\\\", b"a", b":", b","])
_JSONISH = st.lists(_TOKENS, max_size=60).map(b"".join)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(data=_JSONISH)
def test_the_string_scan_agrees_with_a_tokenizer_wherever_a_decoder_would_read(data: bytes) -> None:
    expected, stopped = _reference_depth(data)
    got = _scan_depth(data)
    if stopped:  # malformed: the bound may only be higher than what the decoder reaches before it gives up
        assert got >= expected
    else:
        assert got == expected


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(doc=st.recursive(st.none() | st.text(alphabet='[]{}"\\ab', max_size=8),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text('[]{}"\\', max_size=3), c,
                                                                           max_size=3), max_leaves=30))
def test_valid_json_with_brackets_and_escapes_in_strings_measures_its_true_depth(doc: object) -> None:
    raw = json.dumps(doc).encode()
    assert _scan_depth(raw) == _reference_depth(raw)[0]


@pytest.mark.parametrize("size", [10_000, 40_000, 1 << 20], ids=["10k", "40k", "1MiB"])
def test_the_backtracking_family_is_refused(size: int) -> None:
    """More than MAX_DEPTH brackets, then an unterminated ``\\"`` run: the frame that froze the old regex scan.
    (That the scan does not hold the process is tested over a real connection with a heartbeat thread, in
    tests/integration/transports/test_transports_pathological_frame.py.)"""
    frame = b"[" * (MAX_DEPTH + 1) + b'"' + b'\\"' * (size // 2)
    assert nesting_depth(frame) == MAX_DEPTH + 1
    with pytest.raises(msgspec.DecodeError, match="nested 65 levels"):
        decode_untrusted(frame)
