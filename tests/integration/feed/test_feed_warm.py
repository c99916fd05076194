"""The feed's warm path (caerus.feed.warm): a real shadow connection read into the venue loop's rehearsal while the
feed is idle, never into its ring."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caerus.feed.warm import FeedWarmer, synthetic_frames
from caerus.net.ws import WsSession
from caerus.venuekit.feed_loop import FeedSink
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues import registry
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import Venue

WAIT_S = 10.0  # bound on waiting for the loop's timer to fire (a busy machine is slow, never this slow)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _sink(shm_dir: Path, venue: str) -> Iterator[tuple[FeedOutputs, FeedSink]]:
    out = FeedOutputs(venue, f"w.book.{venue}", f"w.events.{venue}", f"w.stats.feed-{venue}", capacity=1024,
                      log_stream=io.StringIO(), venue_code=int(Venue[venue.upper()]))
    sink = (BinanceSink if venue == "binance" else HyperliquidSink)(out)
    out.sink = sink
    try:
        yield out, sink
    finally:
        out.close()


@pytest.fixture(params=["binance", "hyperliquid"])
def feed(shm_dir: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, FeedOutputs, FeedSink]]:
    for out, sink in _sink(shm_dir, request.param):
        yield request.param, out, sink


def _frames(venue: str, symbol: str) -> list[bytes]:
    book_frame = registry.get(venue).feed.book_frame
    assert book_frame is not None
    return synthetic_frames(book_frame, symbol, n=4)


def test_idle_ticks_read_the_shadow_into_the_rehearsal_and_busy_ticks_skip(feed, loop) -> None:
    venue, out, sink = feed
    warmer = FeedWarmer(sink, _frames(venue, sink.symbol), 100.0, loop)
    try:
        assert warmer.reads == 4 and sink.rehearsals == 4  # every frame once at start
        warmer._tick()
        warmer._tick()
        assert (warmer.reads, warmer.skipped, sink.rehearsals) == (6, 0, 6)
        # the feed publishes: the next tick sees the real path ran and skips, the one after reads again
        session = WsSession("wss://x/ws", 1, sink.on_message)
        sink.active = session
        real = _frames(venue, sink.symbol)[0]
        assert sink.on_message(real, 1, session)
        warmer._tick()
        assert (warmer.reads, warmer.skipped) == (6, 1)
        warmer._tick()
        assert (warmer.reads, warmer.skipped) == (7, 1)
        assert out.books.published == 1  # only the real message reached the ring
        assert warmer.error is None
    finally:
        warmer.close()


def _run_until(loop: asyncio.AbstractEventLoop, done: Callable[[], bool]) -> None:
    async def wait() -> None:
        while not done():
            await asyncio.sleep(0.001)

    loop.run_until_complete(asyncio.wait_for(wait(), WAIT_S))


def test_started_it_reads_on_the_loops_timer_until_closed(feed, loop) -> None:
    venue, out, sink = feed
    warmer = FeedWarmer(sink, _frames(venue, sink.symbol), 200.0, loop)
    warmer.start()
    _run_until(loop, lambda: warmer.reads >= 4 + 5)
    warmer.close()
    reads = warmer.reads
    loop.run_until_complete(asyncio.sleep(0.01))
    assert warmer.reads == reads  # closed: no timer left
    assert out.books.published == 0


def test_a_sink_that_refuses_its_synthetic_frames_stops_the_warmer_at_start(shm_dir: Path, loop) -> None:
    for _out, sink in _sink(shm_dir, "binance"):
        with pytest.raises(ValueError, match=r"BinanceSink.rehearse refused 4 of its 4 synthetic frames"):
            FeedWarmer(sink, _frames("binance", "ETHUSDT"), 100.0, loop)  # not an instrument of this feed


def test_a_broken_shadow_stops_the_warmer_and_names_why(feed, loop) -> None:
    venue, _out, sink = feed
    warmer = FeedWarmer(sink, _frames(venue, sink.symbol), 100.0, loop)
    warmer.start()
    sock = warmer.shadow.venue._sock
    assert sock is not None
    sock.sendall(b"\x17\x03\x03\x00\x05garbage")  # a record the shadow's client cannot decrypt
    warmer.shadow.session._on_readable()
    warmer._tick()
    assert warmer.error is not None and "shadow connection ended" in warmer.error
    assert warmer._timer is None
    warmer.close()
