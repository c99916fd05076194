"""Resident memory of each fleet process over a session: sampled from outside (psutil), summarised per process.

The session runner calls ``sample()`` from its progress loop (it throttles itself to ``interval_s``); ``summary()``
gives, per process, the RSS at the first and last sample, the maximum, and the least-squares slope in MB/min over
the samples after ``warmup_s`` (start-up allocations are not growth). A process whose loops keep nothing shows a
slope near zero; a leak shows as a steady positive slope.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import psutil

MB = 1024 * 1024


class RssSampler:
    def __init__(self, interval_s: float = 5.0, warmup_s: float = 30.0) -> None:
        self.interval_s = interval_s
        self.warmup_s = warmup_s
        self._procs: dict[str, psutil.Process] = {}
        self._t0: float | None = None
        self._last = -float("inf")
        self.samples: dict[str, list[tuple[float, int]]] = {}

    def watch(self, pids: Mapping[str, int]) -> None:
        """Track these processes (name -> pid); a name already tracked keeps its first pid."""
        for name, pid in pids.items():
            if name in self._procs:
                continue
            try:
                self._procs[name] = psutil.Process(pid)
            except psutil.Error:
                continue  # already gone: nothing to sample
            self.samples[name] = []

    def sample(self, force: bool = False) -> None:
        """Read every tracked process's RSS, at most once per ``interval_s`` unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last < self.interval_s:
            return
        self._last = now
        if self._t0 is None:
            self._t0 = now
        for name, proc in self._procs.items():
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                continue  # ended: its series stops here
            self.samples[name].append((now - self._t0, rss))

    def summary(self) -> dict[str, dict[str, Any]]:
        return {name: summarise(series, self.warmup_s) for name, series in self.samples.items() if series}


def summarise(series: list[tuple[float, int]], warmup_s: float) -> dict[str, Any]:
    """start/end/max MB and the MB/min slope after warm-up (None with fewer than 3 samples past warm-up)."""
    t = np.array([s[0] for s in series], dtype=float)
    mb = np.array([s[1] for s in series], dtype=float) / MB
    out: dict[str, Any] = {
        "samples": len(series),
        "span_s": round(float(t[-1] - t[0]), 1),
        "start_mb": round(float(mb[0]), 2),
        "end_mb": round(float(mb[-1]), 2),
        "max_mb": round(float(mb.max()), 2),
        "slope_mb_per_min": None,
        "slope_from_s": warmup_s,
    }
    past = t >= warmup_s
    if past.sum() >= 3 and np.ptp(t[past]) > 0:
        slope_per_s = float(np.polyfit(t[past], mb[past], 1)[0])
        out["slope_mb_per_min"] = round(slope_per_s * 60.0, 4)
    return out
