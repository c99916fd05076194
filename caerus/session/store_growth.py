"""How much disk a session's capture store takes: its size sampled during the session, and at the end (capture
exited) what it keeps per hour recorded.

chDB writes one part per table per flush (every 2 s) and merges them later, keeping merged-away parts on disk for
several minutes (ClickHouse's old-parts lifetime, 8 min) before removing them. So while recording, the folder holds
the data plus a transient of small and outdated parts, and its size over a short session says nothing about an
hour: on the 350 s replay of real USD-M BTCUSDT it peaked at 43 MB and ended at 2.7 MB once capture exited
(docs/sessions.md, Recording). The summary (``summary.json`` ``capture_store``) gives both: ``peak_bytes`` (the
headroom a host needs) and ``bytes`` after capture exited, with ``mb_per_hour`` = that over the seconds recorded
(the store's fixed size, ~0.2 MB, included: a session of a few minutes overstates it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

SAMPLE_S = 10.0  # how often the store's size is read (a walk of a folder of a few hundred files)


def store_bytes(store: Path) -> int:
    """Bytes the store's files take on disk (allocated blocks, as ``du`` counts them); 0 when it is not there.

    chDB creates and removes part folders while this walks them (a merge's ``tmp_merge_*``): a folder or a file gone
    between the listing and the read is skipped, never an error (os.walk ignores unreadable folders)."""
    total = 0
    for folder, _, files in os.walk(store):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name), follow_symlinks=False).st_blocks * 512
            except OSError:
                continue
    return total


class StoreGrowth:
    """Samples ``store``'s size every ``every_s`` from ``start`` (time.monotonic()) on; :meth:`finish` reads it once
    more after capture exited and says over how many seconds it was recorded."""

    def __init__(self, store: Path, start: float, every_s: float = SAMPLE_S) -> None:
        self.store, self.start, self.every_s = store, start, every_s
        self.samples: list[tuple[float, int]] = []  # (seconds since start, bytes) while recording
        self._next = start
        self.final: int | None = None
        self.recorded_s: float | None = None

    def sample(self, now: float | None = None, force: bool = False) -> None:
        now = time.monotonic() if now is None else now
        if not force and now < self._next:
            return
        self._next = now + self.every_s
        self.samples.append((now - self.start, store_bytes(self.store)))

    def finish(self, recorded_s: float) -> None:
        """The store as capture left it (call after capture exited), recorded over ``recorded_s`` seconds."""
        self.final = store_bytes(self.store)
        self.recorded_s = recorded_s

    def summary(self) -> dict[str, Any] | None:
        """Size after capture exited, the peak while recording, and what the end size is per hour recorded; None
        when :meth:`finish` was not called."""
        if self.final is None or not self.recorded_s:
            return None
        return {"bytes": self.final, "seconds": round(self.recorded_s, 1),
                "peak_bytes": max([b for _, b in self.samples] + [self.final]),
                "mb_per_hour": round(self.final / 1e6 / self.recorded_s * 3600, 2),
                "series": [[round(t, 1), b] for t, b in self.samples]}
