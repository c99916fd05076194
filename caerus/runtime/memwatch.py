"""Opt-in memory growth report: ``CAERUS_TRACEMALLOC=DIR`` makes a process trace its allocations and write, at
exit, the source lines whose retained memory grew most since a baseline taken after warm-up.

For finding what a long-running process keeps (its loops must keep nothing): run a session with the variable
set, then read ``DIR/<process>.tracemalloc.txt``. Tracing slows every allocation, so it is never on by default
and its numbers are not latency numbers; the exit report takes seconds, so give the session a longer stop grace
(``caerus session --stop-grace 60``) or the runner kills the process before it is written. The baseline is taken
``warmup_s`` after the loop starts (first-time caches and buffers fill during warm-up and are not growth).
"""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

ENV = "CAERUS_TRACEMALLOC"


class MemWatch:
    """Does nothing unless ``CAERUS_TRACEMALLOC`` names a folder."""

    def __init__(self, process: str, *, warmup_s: float = 10.0, frames: int = 1, top: int = 25) -> None:
        folder = os.environ.get(ENV, "")
        self.path = Path(folder) / f"{process}.tracemalloc.txt" if folder else None
        self.process = process
        self.warmup_s = warmup_s
        self.top = top
        self._baseline: tracemalloc.Snapshot | None = None
        self._baseline_at = 0.0
        self._started = 0.0
        if self.path is not None and not tracemalloc.is_tracing():
            tracemalloc.start(frames)

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def start(self) -> None:
        """The loop starts now; the baseline follows ``warmup_s`` later (from ``tick``)."""
        self._started = time.monotonic()

    def tick(self) -> None:
        """From housekeeping: take the baseline once warm-up is over."""
        if self.path is None or self._baseline is not None or not self._started:
            return
        if time.monotonic() - self._started >= self.warmup_s:
            self._baseline = self._snapshot()
            self._baseline_at = time.monotonic()

    def report(self) -> None:
        """At exit: write the call sites that grew most since the baseline (nothing if none was taken)."""
        if self.path is None or self._baseline is None:
            return
        final = self._snapshot()
        span = time.monotonic() - self._baseline_at
        stats = final.compare_to(self._baseline, "lineno")
        total = sum(s.size_diff for s in stats)
        lines = [f"# {self.process}: retained memory growth over {span:.1f} s after a {self.warmup_s:g} s warm-up: "
                 f"{total / 1024:+.1f} KiB in {sum(s.count_diff for s in stats):+d} blocks"]
        for s in stats[: self.top]:
            lines.append(f"\n{s.size_diff / 1024:+.1f} KiB {s.count_diff:+d} blocks (now {s.size / 1024:.1f} KiB)")
            lines.extend(f"    {line}" for line in s.traceback.format())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(lines) + "\n")

    @staticmethod
    def _snapshot() -> tracemalloc.Snapshot:
        return tracemalloc.take_snapshot().filter_traces((
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
        ))
