"""Property-based fuzzing of everything a venue's market-data bytes reach (issue 12): decoders, control classifiers and
the feed loops with a real SWMR ring behind them.

Inputs: random bytes; the venues' documented frames with fields dropped, retyped, given huge / negative /
non-finite numbers or another instrument, plus extra fields; truncated frames; pathological nesting; the
family that made a backtracking scan quadratic (many brackets, then an unterminated run of ``\\"``). Properties:
nothing raises (not even into the receive loop's safety net, ``frames_failed``); no VALID record is ever published
for a book that breaks the rules or belongs to another instrument; every frame is accounted for exactly once
(published, or counted under one reason). A fixed example budget and a fixed seed keep ``invoke test`` bounded and
reproducible; ``CAERUS_FUZZ_EXAMPLES=N`` runs a longer hunt with fresh random examples.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caerus.ipc.swmr import SwmrReader
from caerus.net.ws import WsSession
from caerus.records.book import BOOK_ASK_PX, BOOK_ASK_QTY, BOOK_BID_PX, BOOK_BID_QTY, BOOK_FLAGS, BOOK_REASON
from caerus.venuekit.book_rules import check_levels
from caerus.venuekit.feed_loop import FeedSink
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venuekit.frames import FrameKind
from caerus.venues.binance import data as binance
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid import data as hyperliquid
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import BOOK, BookFlags, Venue

EXAMPLES = int(os.environ.get("CAERUS_FUZZ_EXAMPLES", "300"))
HUNT = "CAERUS_FUZZ_EXAMPLES" in os.environ  # a longer hunt draws fresh examples; the default run is reproducible
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not HUNT, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

# Every way a frame can be accounted for: exactly one of these moves per frame.
OUTCOMES = ("books", "rejects", "frames_dropped", "frames_failed", "acks", "pongs", "greetings", "venue_errors",
            "sub_errors", "overlap_dropped")

# -- generators --------------------------------------------------------------------------------------------------

_numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["NaN", "inf", "-inf", "1e400", "-1", "0", "0.0", "100000.1", "99999.9", "", " 1", "0x10"]),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, st.text(max_size=10),
                     st.sampled_from(["BTCUSDT", "ETHUSDT", "BTC", "ETH", "bookTicker", "depthUpdate", "bbo"]))
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c,
                                                                                     max_size=3), max_leaves=8)
_MISSING = object()


def _mutated(base: dict[str, Any], fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with each field kept, dropped, or replaced by an adversarial value (per-field strategy or any JSON)."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out = dict(base)
        for key in list(base):
            choice = draw(st.sampled_from(["keep", "keep", "drop", "field", "any"]))
            if choice == "drop":
                del out[key]
            elif choice == "field" and key in fields:
                out[key] = draw(fields[key])
            elif choice == "any":
                out[key] = draw(_values)
        if draw(st.booleans()):
            out.update(draw(st.dictionaries(st.text(min_size=1, max_size=4), _values, max_size=2)))
        return out

    return build()


_levels = st.lists(st.tuples(_numbers, _numbers).map(list), max_size=7)
_BT = {"e": "bookTicker", "u": 5_000_000_100, "E": 1_796_000_000_000, "T": 1_796_000_000_000, "s": "BTCUSDT",
       "b": "100000.0", "B": "1.5", "a": "100000.1", "A": "2.5"}
_DEPTH = {"e": "depthUpdate", "E": 1_796_000_000_000, "T": 1_796_000_000_000, "s": "BTCUSDT", "U": 5_000_000_090,
          "u": 5_000_000_100, "pu": 5_000_000_089, "b": [[str(100_000 - i), "1"] for i in range(5)],
          "a": [[str(100_001 + i), "1"] for i in range(5)]}
_ids = st.one_of(st.integers(min_value=-(2**65), max_value=2**65), st.integers(5_000_000_000, 5_000_001_000))
_BINANCE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "u": _ids, "E": _ids, "s": st.sampled_from(["BTCUSDT", "ETHUSDT", "btcusdt", ""]), "b": _numbers, "B": _numbers,
    "a": _numbers, "A": _numbers, "e": st.sampled_from(["bookTicker", "depthUpdate", "aggTrade"])}
_DEPTH_FIELDS = _BINANCE_FIELDS | {"b": _levels, "a": _levels}

_level = st.fixed_dictionaries({"px": _numbers, "sz": _numbers, "n": st.integers(-3, 10)})
_side = st.one_of(st.none(), _level, _values)
_BBO = {"coin": "BTC", "time": 1_796_000_000_000,
        "bbo": [{"px": "100000", "sz": "1", "n": 1}, {"px": "100001", "sz": "2", "n": 1}]}
_L2 = {"coin": "BTC", "time": 1_796_000_000_000,
       "levels": [[{"px": "100000", "sz": "1", "n": 1}], [{"px": "100001", "sz": "2", "n": 1}]]}
_HL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "coin": st.sampled_from(["BTC", "ETH", "btc", ""]), "time": _ids, "bbo": st.lists(_side, max_size=3),
    "levels": st.lists(st.lists(_level, max_size=3), max_size=3)}


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


@st.composite
def _framed(draw: st.DrawFn, documents: st.SearchStrategy[Any]) -> bytes:
    """A document as JSON, sometimes truncated, sometimes buried in deep nesting; or random bytes."""
    kind = draw(st.sampled_from(["doc", "doc", "doc", "truncated", "nested", "bytes", "backtrack"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    raw = _encode(draw(documents))
    if kind == "backtrack":  # issue 26: > MAX_DEPTH brackets, then a string that never ends in a run of \"
        brackets = draw(st.integers(65, 300))
        run = b'\\"' * draw(st.integers(1, 20_000))
        return draw(st.sampled_from([b"[" * brackets + b'"' + run, raw[:-1] + b"[" * brackets + b'"' + run,
                                     b"{" * brackets + b'"a' + run + b"\\"]))
    if kind == "truncated":
        return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    if kind == "nested":
        depth = draw(st.integers(100, 50_000))
        return raw[:-1] + b',"x":' + b"[" * depth + b"]" * depth + b"}" if raw.endswith(b"}") else b"[" * depth
    return raw


BINANCE_FRAMES = _framed(st.one_of(_mutated(_BT, _BINANCE_FIELDS), _mutated(_DEPTH, _DEPTH_FIELDS), _values))
HL_FRAMES = _framed(st.one_of(
    _mutated(_BBO, _HL_FIELDS).map(lambda d: {"channel": "bbo", "data": d}),
    _mutated(_L2, _HL_FIELDS).map(lambda d: {"channel": "l2Book", "data": d}),
    st.fixed_dictionaries({"channel": st.sampled_from(["error", "pong", "subscriptionResponse", "trades"]),
                           "data": _values}),
    _values))

# -- the feed under test -----------------------------------------------------------------------------------------


class _Feed:
    def __init__(self, venue: str) -> None:
        self.out = FeedOutputs(venue, f"fz.book.{venue}", f"fz.events.{venue}", f"fz.stats.feed-{venue}",
                               capacity=1 << 16, log_stream=io.StringIO(), venue_code=int(Venue[venue.upper()]))
        sink_cls: type[FeedSink] = BinanceSink if venue == "binance" else HyperliquidSink
        self.sink = sink_cls(self.out)  # type: ignore[call-arg]
        self.out.sink = self.sink
        self.session = WsSession("wss://x/ws", 1, self.sink.on_message)
        self.sink.active = self.session
        # A connection that has delivered data for a long time: an error frame now is a venue error, and garbage
        # is a small share of what it received (the PARSE_ERROR restart rule is tested on its own elsewhere).
        self.session.data_count = 1
        self.session.msg_count = 10**12
        self.session.subscribed = True
        self.books = SwmrReader.attach(f"fz.book.{venue}", BOOK, timeout=1)
        self.symbol = self.sink.symbol

    def outcomes(self) -> dict[str, int]:
        self.out.housekeeping()
        snap = self.out.counters.snapshot()
        return {k: int(snap[k]) for k in OUTCOMES}

    def feed(self, raw: bytes) -> None:
        before = self.outcomes()
        self.session.msg_count += 1
        if self.sink.on_message(raw, 1_796_000_000_000_000_000, self.session):
            self.session.data_count += 1
        after = self.outcomes()
        moved = {k: after[k] - before[k] for k in OUTCOMES if after[k] != before[k]}
        assert list(moved.values()) == [1], f"frame {raw[:200]!r} accounted as {moved}"
        assert "frames_failed" not in moved, f"frame {raw[:200]!r} raised inside the loop"
        while (rec := self.books.read_next()) is not None:
            check_record(rec)

    def close(self) -> None:
        self.books.close()
        self.out.close()


def check_record(rec: tuple) -> None:
    flags = rec[BOOK_FLAGS]
    if flags & BookFlags.VALID:
        prices = (rec[BOOK_BID_PX], rec[BOOK_BID_QTY], rec[BOOK_ASK_PX], rec[BOOK_ASK_QTY])
        assert all(math.isfinite(x) for x in prices) and check_levels(*prices) == 0, rec
        assert rec[BOOK_REASON] == 0, rec
    else:
        assert flags in (BookFlags.REJECTED, BookFlags.STALE), rec
        assert (rec[BOOK_REASON] != 0) == (flags == BookFlags.REJECTED), rec


@pytest.fixture
def sane_recursion() -> Iterator[None]:
    # A feed process runs at CPython's default recursion limit (caerus.feed.app caps it); this test process may
    # have imported the signing stack, which raises it to 100000 (then msgspec's nesting guard comes too late).
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


@pytest.fixture
def binance_feed(shm_dir: Path, sane_recursion: None) -> Iterator[_Feed]:
    f = _Feed("binance")
    yield f
    f.close()


@pytest.fixture
def hl_feed(shm_dir: Path, sane_recursion: None) -> Iterator[_Feed]:
    f = _Feed("hyperliquid")
    yield f
    f.close()


# -- properties --------------------------------------------------------------------------------------------------


@pytest.mark.slow
@FUZZ
@given(raw=BINANCE_FRAMES)
def test_binance_feed_loop_accounts_for_every_frame_and_never_publishes_a_bad_book(binance_feed: _Feed,
                                                                                     raw: bytes) -> None:
    binance_feed.feed(raw)


@FUZZ
@given(raw=HL_FRAMES)
def test_hyperliquid_feed_loop_accounts_for_every_frame_and_never_publishes_a_bad_book(hl_feed: _Feed,
                                                                                         raw: bytes) -> None:
    hl_feed.feed(raw)


@FUZZ
@given(raw=st.one_of(BINANCE_FRAMES, HL_FRAMES))
def test_classifiers_name_any_bytes(sane_recursion: None, raw: bytes) -> None:
    for classify in (binance.classify, hyperliquid.classify):
        kind, detail = classify(raw)
        assert isinstance(kind, FrameKind) and isinstance(detail, str) and len(detail) <= 200


def test_a_valid_frame_of_each_kind_is_published(binance_feed: _Feed, hl_feed: _Feed) -> None:
    # The generators start from these documents: make sure they are what the loops accept, or the fuzz would only
    # ever exercise the refusal paths.
    for raw in (_encode(_BT), _encode(_DEPTH | {"u": _BT["u"] + 1})):
        binance_feed.feed(raw)
    for raw in (_encode({"channel": "bbo", "data": _BBO}), _encode({"channel": "l2Book", "data": _L2})):
        hl_feed.feed(raw)
    assert binance_feed.sink.n_books == 2 and hl_feed.sink.n_books == 2
