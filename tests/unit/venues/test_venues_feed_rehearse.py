"""The venue loops' rehearsal (FeedSink.rehearse, for the feed's warm path): the same decode, checks and record as
on_message, and nothing of the feed's state moves."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from caerus.feed.warm import synthetic_frames
from caerus.ipc.swmr import SwmrReader
from caerus.net.ws import WsSession
from caerus.records.book import BOOK_FLAGS, BOOK_T_PUBLISH, BOOK_T_RECV
from caerus.venuekit.feed_loop import FeedSink
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues import registry
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import BOOK, Venue

VENUES = ("binance", "hyperliquid")


@pytest.fixture(params=VENUES)
def feed(shm_dir: Path, request: pytest.FixtureRequest):
    venue = request.param
    out = FeedOutputs(venue, f"r.book.{venue}", f"r.events.{venue}", f"r.stats.feed-{venue}", capacity=1024,
                      log_stream=io.StringIO(), venue_code=int(Venue[venue.upper()]))
    sink = (BinanceSink if venue == "binance" else HyperliquidSink)(out)
    out.sink = sink
    session = WsSession("wss://x/ws", 7, sink.on_message)
    session.t_wire = 123
    sink.active = session
    books = SwmrReader.attach(f"r.book.{venue}", BOOK, timeout=1)
    yield venue, out, sink, session, books
    books.close()
    out.close()


def frames(venue: str, sink: FeedSink, n: int = 8) -> list[bytes]:
    book_frame = registry.get(venue).feed.book_frame
    assert book_frame is not None
    return synthetic_frames(book_frame, sink.symbol, n=n, t_ms=1_700_000_000_000)


def state(out: FeedOutputs, sink: FeedSink) -> tuple:
    st = next(iter(sink.books.values()))
    return (out.books.published, out.events.published, sink.n_samples, st.last_key, st.last_t_ex, st.seq,
            st.n_books, st.rejects, st.pending, out.counters.snapshot())


def test_rehearsal_moves_no_book_ring_counter_or_sample(feed) -> None:
    venue, out, sink, session, _ = feed
    before = state(out, sink)
    assert all(sink.rehearse(f, 1_000 + k, session) for k, f in enumerate(frames(venue, sink)))
    assert sink.rehearsals == 8
    assert state(out, sink) == before


def test_rehearsal_packs_the_record_on_message_publishes(feed) -> None:
    """The scratch record equals the ring's record for the same frame (the clock read aside): the two stay in step."""
    venue, _out, sink, session, books = feed
    for k, f in enumerate(frames(venue, sink, n=3)):
        assert sink.rehearse(f, 5_000 + k, session)
        rehearsed = list(BOOK.struct.unpack(bytes(sink._rehearsal_record)))
        assert sink.on_message(f, 5_000 + k, session)
        published = list(books.read_next())  # type: ignore[arg-type]
        for rec in (rehearsed, published):
            assert rec[BOOK_T_PUBLISH] >= rec[BOOK_T_RECV]
            rec[BOOK_T_PUBLISH] = 0
        if k == 0:  # the first publish after a fresh connection carries its first-publish flags
            published[BOOK_FLAGS] = rehearsed[BOOK_FLAGS]
        assert rehearsed == published, (venue, k)


@pytest.mark.parametrize("kind", ["garbage", "other symbol", "crossed", "depth"])
def test_rehearsal_refuses_what_on_message_would_not_publish(feed, kind: str) -> None:
    venue, out, sink, session, _ = feed
    good = json.loads(frames(venue, sink, n=1)[0])
    if kind == "garbage":
        raw = b"{not json"
    elif kind == "other symbol":
        if venue == "binance":
            good["s"] = "ETHUSDT"
        else:
            good["data"]["coin"] = "ETH"
        raw = json.dumps(good).encode()
    elif kind == "crossed":
        if venue == "binance":
            good["a"] = str(float(good["b"]) - 1)
        else:
            good["data"]["bbo"][1]["px"] = str(float(good["data"]["bbo"][0]["px"]) - 1)
        raw = json.dumps(good).encode()
    else:  # a depth message is not what the shadow sends: refused, not half-handled
        raw = (json.dumps({"e": "depthUpdate", "E": 1, "T": 1, "s": "BTCUSDT", "U": 1, "u": 2, "pu": 0,
                           "b": [["1", "1"]] * 5, "a": [["2", "1"]] * 5}) if venue == "binance" else
               json.dumps({"channel": "l2Book", "data": {"coin": "BTC", "time": 1, "levels": [[], []]}})).encode()
    before = state(out, sink)
    assert sink.rehearse(raw, 1, session) is False
    assert sink.rehearsals == 0
    assert state(out, sink) == before
