"""Event loops per wait policy: a busy-polling asyncio loop (spin / hybrid) or the normal sleeping one.

Measured here (DESIGN.md): a sleeping client pays 30-60 us to be woken for a WebSocket message, a loop that
polls its selector with timeout 0 on its own core ~16 us. asyncio's loop computes how long it may sleep and passes
that to ``selector.select(timeout)``; wrapping the selector so every ``select`` is a non-blocking poll turns the
ordinary loop into a busy-polling one without touching asyncio internals. Timers still fire (the loop checks them
on every iteration) and everything else (websockets, tasks, signal handlers) is unchanged.

- ``spin``: ``select(0)`` always. Only for a process with a core to itself: it uses 100% of that core.
- ``hybrid``: ``select(0)``; after ``spins`` consecutive empty polls, ``os.sched_yield()`` on each further empty
  poll so a process sharing the core gets to run (still ~100% CPU, but polite).
- ``sleep``: the standard loop (epoll with the computed timeout).
"""

from __future__ import annotations

import asyncio
import os
import selectors
from typing import Any

from caerus.ipc.wait import POLICIES


class PollingSelector(selectors.DefaultSelector):
    """A selector whose ``select`` never blocks (optionally yielding the CPU after a run of empty polls)."""

    def __init__(self, yield_after: int | None = None) -> None:
        super().__init__()
        self._yield_after = yield_after
        self._empty = 0
        self.polls = 0

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        self.polls += 1
        ready = super().select(0)
        if ready:
            self._empty = 0
        elif self._yield_after is not None:
            self._empty += 1
            if self._empty > self._yield_after:
                os.sched_yield()
        return ready


def new_event_loop(policy: str, spins: int = 2000) -> asyncio.AbstractEventLoop:
    """An event loop implementing ``policy`` (spin | hybrid | sleep)."""
    if policy not in POLICIES:
        raise ValueError(f"wait policy {policy!r} is not one of {', '.join(POLICIES)}")
    if policy == "sleep":
        return asyncio.new_event_loop()
    selector = PollingSelector(yield_after=None if policy == "spin" else spins)
    return asyncio.SelectorEventLoop(selector)


def run(main: Any, policy: str) -> Any:
    """``asyncio.run`` equivalent on a loop for ``policy``."""
    with asyncio.Runner(loop_factory=lambda: new_event_loop(policy)) as runner:
        return runner.run(main)
