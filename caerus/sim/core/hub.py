"""Fan-out of frames to connected subscribers, with the per-connection fault behaviour scenarios ask for.

A ``Subscriber`` is one client connection. Healthy connections get each frame written straight to the
transport (``broadcast``: no task switch, no awaiting). A connection hit by a fault switches to a private queue
drained by its own task (stall holds the queue, slow-drip sends fragments with pauses) and switches back once
the queue is empty, so the frames' exchange timestamps reveal the backlog as information age.

``Topics`` maps a topic key (``binance:btcusdt@bookTicker``, ``hyperliquid:bbo:BTC``...) to its subscribers and
how each wants the frame (Binance raw or combined-stream wrapper).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast

from caerus.sim.core import frames
from caerus.sim.core.scenarios import FaultBudget, Scenario

log = logging.getLogger("caerus.sim")

_background: set[asyncio.Task[None]] = set()


def spawn(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` as a task whose reference is held until it finishes (asyncio keeps only weak ones)."""
    task = asyncio.get_running_loop().create_task(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)


# Scenarios acted out on a data connection after its first subscription.
CONNECTION_FAULTS = frozenset(
    {"drop", "stall", "slow-drip", "malformed-json", "oversized-frame", "error-frames", "hostile-frames",
     "wrong-route"}
)


class Subscriber:
    """One client connection's outbound side: direct sends, or a fault queue while a fault is active."""

    def __init__(self, conn: ServerConnection, venue: str, scenario: Scenario, budget: FaultBudget) -> None:
        self.conn = conn
        self.venue = venue
        self.scenario = scenario
        self._budget = budget
        self.silent = False
        self.fault: str | None = None  # the fault this connection was picked for
        self.sent = 0
        self._armed = False
        self._queue: collections.deque[str] | None = None
        self._hold = False
        self._drip = False
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self.last_top: str | None = None  # newest top-of-book frame sent (kept only for hostile-frames)

    # -- sending ---------------------------------------------------------------------------------------------
    def send(self, text: str, control: bool = False) -> None:
        """Queue or write one frame. ``control`` frames (acks) get through even on a silent connection."""
        if self.silent and not control:
            return
        self.sent += 1
        if self.fault == "hostile-frames" and text.startswith(frames.TOP_OF_BOOK_PREFIXES):
            self.last_top = text
        if self._queue is not None:
            self._queue.append(text)
            self._wake.set()
            return
        broadcast((self.conn,), text)

    # -- faults ----------------------------------------------------------------------------------------------
    def arm(self) -> None:
        """Called when the connection first subscribes to data: maybe pick it for the scenario's fault."""
        if self._armed:
            return
        self._armed = True
        name = self.scenario.name
        if name not in CONNECTION_FAULTS or not self._budget.claim(self.venue):
            return
        self.fault = name
        log.info("%s connection picked for fault %s (in %.1f s)", self.venue, name, self.scenario.after_s)
        if name == "wrong-route":
            self.silent = True
            return
        self._later(self.scenario.after_s, self._start_fault)

    def _later(self, delay: float, fn: Callable[[], None]) -> None:
        self._timers.append(asyncio.get_running_loop().call_later(delay, fn))

    def _start_fault(self) -> None:
        s, name = self.scenario, self.fault
        log.info("%s fault %s starts", self.venue, name)
        if name == "drop":
            self.conn.transport.abort()
        elif name == "stall":
            self._hold = True
            self._queue_mode()
            self._later(s.duration_s, self._release)
        elif name == "slow-drip":
            self._drip = True
            self._queue_mode()
            self._later(s.duration_s, self._release)
        elif name == "malformed-json":
            for i in range(s.count):
                self.send(frames.malformed_frame(self.venue, i))
        elif name == "error-frames":
            for i in range(s.count):
                self.send(frames.error_frame(self.venue, i))
        elif name == "hostile-frames":
            if self.last_top is None:  # nothing to derive them from yet: try again shortly
                self._later(0.2, self._start_fault)
                return
            for text in frames.hostile_frames(self.venue, self.last_top):
                self.send(text)
        elif name == "oversized-frame":
            self.send(frames.oversized_frame(self.venue, s.size_bytes))

    def _queue_mode(self) -> None:
        if self._queue is None:
            self._queue = collections.deque()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._drain())

    def _release(self) -> None:
        log.info("%s fault %s ends (%d frames queued)", self.venue, self.fault, len(self._queue or ()))
        self._hold = False
        self._drip = False
        self._wake.set()

    async def _fragments(self, text: str) -> AsyncIterator[str]:
        step, gap = self.scenario.chunk_bytes, self.scenario.chunk_gap_s
        for i in range(0, len(text), step):
            if i:
                await asyncio.sleep(gap)
            yield text[i : i + step]

    async def _drain(self) -> None:
        queue = self._queue
        assert queue is not None
        try:
            while True:
                while queue and not self._hold:
                    text = queue.popleft()
                    if self._drip:
                        await self.conn.send(self._fragments(text))
                    else:
                        await self.conn.send(text)
                if not queue and not self._hold and not self._drip:
                    self._queue = None  # back to direct sends; nothing can be appended in between
                    return
                self._wake.clear()
                await self._wake.wait()
        except Exception:  # the connection went away mid-fault: nothing left to deliver
            self._queue = None

    def close(self) -> None:
        for t in self._timers:
            t.cancel()
        if self._sender is not None and not self._sender.done():
            self._sender.cancel()


class Topics:
    """topic key -> {subscriber: combined-stream name or None for raw}; plus a listener for new subscriptions."""

    def __init__(self) -> None:
        self._subs: dict[str, dict[Subscriber, str | None]] = collections.defaultdict(dict)
        self.on_subscribe: Callable[[str, Subscriber], None] | None = None

    def add(self, key: str, sub: Subscriber, stream: str | None = None) -> None:
        self._subs[key][sub] = stream
        if self.on_subscribe is not None:
            self.on_subscribe(key, sub)

    def remove(self, key: str, sub: Subscriber) -> None:
        subs = self._subs.get(key)
        if subs is not None:
            subs.pop(sub, None)

    def remove_all(self, sub: Subscriber) -> None:
        for subs in self._subs.values():
            subs.pop(sub, None)

    def has(self, key: str) -> bool:
        return bool(self._subs.get(key))

    def keys_with_prefix(self, prefix: str) -> list[str]:
        return [k for k, v in self._subs.items() if v and k.startswith(prefix)]

    def subscribers(self, key: str) -> dict[Subscriber, str | None]:
        return self._subs.get(key) or {}

    def publish(self, key: str, raw: str) -> None:
        """Send ``raw`` to every subscriber of ``key`` (combined-stream subscribers get the wrapper)."""
        subs = self._subs.get(key)
        if not subs:
            return
        wrapped: str | None = None
        for sub, stream in list(subs.items()):
            if stream is None:
                sub.send(raw)
            else:
                if wrapped is None:
                    wrapped = frames.binance_combined(stream, raw)
                sub.send(wrapped)
