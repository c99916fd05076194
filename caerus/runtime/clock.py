"""The housekeeping clock: when a process's off-path work (metrics drain, counters, heartbeat, kill file) is due.

One object per process, so the next-due time survives a loop re-entry after an error (a loop that keeps
raising must not starve housekeeping, nor run it on every error). Hot loops read the clock once per
``CHECK_MASK + 1`` passes and compare against ``next_ns`` bound through this object.
"""

from __future__ import annotations

CHECK_MASK = 1023  # hot loops read the wall clock for housekeeping once per 1024 passes


class HousekeepingClock:
    __slots__ = ("next_ns", "period_ns")

    def __init__(self, period_ms: float) -> None:
        if not period_ms > 0:
            raise ValueError(f"housekeeping period must be > 0 ms, got {period_ms}")
        self.period_ns = int(period_ms * 1e6)
        self.next_ns = 0  # due at once until started

    def start(self, now_ns: int) -> None:
        """Housekeeping just ran at ``now_ns``: the next one is a period away."""
        self.next_ns = now_ns + self.period_ns

    def due(self, now_ns: int) -> bool:
        """True (and the next period scheduled) when housekeeping is due at ``now_ns``."""
        if now_ns < self.next_ns:
            return False
        self.next_ns = now_ns + self.period_ns
        return True
