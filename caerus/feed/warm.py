"""The feed's warm path: a shadow connection read every ``warm_every_us`` while the real ones are quiet.

Issue 30's "keep the parse path warm between messages", the feed-side twin of the strategy's shadow orders.
``benchmarks.rx_idle`` measured the busy client's path after ~10 ms of idle (Binance's bookTicker spacing outside
bursts) at 7.0 / 35.8 us p50 / p99, against 6.4 / 12.0 us when a shadow read a record every 100 us of the gap; up to
~1 ms of idle the path stays warm by itself.

:class:`FeedWarmer` owns one :class:`caerus.net.shadow.ShadowConnection` (a busy-client session on a TLS venue in
this process) whose messages go to the sink's ``rehearse``, never to ``on_message``: no book state, ring, counter
or sample moves. The frames are the venue's own top-of-book messages (its ``book_frame``, as capture replay makes
them) for the feed's first instrument. On each tick the warmer reads one record, unless the feed published since
the previous tick (the real path ran: it is warm). A tick is a loop timer: it runs between the loop's polls, never
inside the receive -> publish path of a real message. Only for the busy client on a busy-polling loop (spin,
hybrid): a sleeping loop would be woken for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from caerus.net.shadow import ShadowConnection
from caerus.net.ws import WsSession
from caerus.venuekit.feed_loop import FeedSink

FRAMES = 64  # distinct synthetic frames, cycled (prices and ids vary: no one value the code could settle on)


def synthetic_frames(book_frame: Callable[[int, int, str, float, float, float, float], str], symbol: str,
                     n: int = FRAMES, t_ms: int | None = None) -> list[bytes]:
    """``n`` top-of-book messages of the venue (``book_frame``, from its FeedSpec) for ``symbol``: a tight book
    around 100 000 with varying prices and sizes, update ids 1..n."""
    t_ms = t_ms if t_ms is not None else time.time_ns() // 1_000_000
    return [book_frame(k + 1, t_ms + k, symbol, 100_000.0 + k * 0.1, 1.0 + k % 7, 100_000.1 + k * 0.1, 2.0 + k % 5)
            .encode() for k in range(n)]


class FeedWarmer:
    """Reads the shadow connection every ``every_us`` while the feed published nothing since the previous tick."""

    def __init__(self, sink: FeedSink, frames: Sequence[bytes], every_us: float,
                 loop: asyncio.AbstractEventLoop) -> None:
        if every_us <= 0:
            raise ValueError(f"warm_every_us must be > 0, got {every_us}")
        self.sink = sink
        self.every_s = every_us / 1e6
        self.loop = loop
        self.refused = 0  # synthetic frames the sink's rehearsal refused (a bug: the warmer stops)
        self.skipped = 0  # ticks without a read: the feed had published since the previous one
        self.error: str | None = None  # why the warmer stopped, if it did
        self._published = sink.out.books.published
        self._timer: asyncio.TimerHandle | None = None
        self.shadow = ShadowConnection(frames, self._on_shadow, loop)
        try:
            # every frame once, now: a venue loop that refuses its own synthetic frame stops the feed at start
            for _ in frames:
                self.shadow.read_one()
        except BaseException:
            self.shadow.close()
            raise
        if self.refused:
            self.shadow.close()
            raise ValueError(f"{type(sink).__name__}.rehearse refused {self.refused} of its {len(frames)} synthetic "
                             f"frames (first: {bytes(frames[0])[:120]!r})")

    @property
    def reads(self) -> int:
        return self.shadow.reads

    def _on_shadow(self, raw: bytes, t_recv: int, session: WsSession) -> bool:
        if self.sink.rehearse(raw, t_recv, session):
            return True
        self.refused += 1
        return False

    def start(self) -> None:
        self._timer = self.loop.call_later(self.every_s, self._tick)

    def _tick(self) -> None:
        published = self.sink.out.books.published
        if published == self._published:
            try:
                self.shadow.read_one()
            except Exception as exc:  # the shadow broke: the real feed goes on cold, and says so
                self.error = f"{type(exc).__name__}: {exc}"
                self.close()
                return
            if self.refused:
                self.error = f"{type(self.sink).__name__}.rehearse refused a synthetic frame"
                self.close()
                return
        else:
            self.skipped += 1
            self._published = published
        self._timer = self.loop.call_later(self.every_s, self._tick)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.shadow.close()
