"""Latency state built from the processes' .hlog interval histograms: running totals and trailing windows.

Each 1 s interval line a process writes is added to its tag's running histogram (the Prometheus histogram's
buckets, sum and count) and kept in a deque for the trailing windows (10 s, 60 s) whose percentiles are served as
gauges. Windows are anchored on the newest interval's end, not the exporter's clock, so a scrape between two
intervals does not empty a window.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from caerus.metrics import hdr
from caerus.monitoring.names import BUCKETS_US, QUANTILES, WINDOWS_S

NS_PER_S = 1e9


@dataclass
class TagLatency:
    """One tag of one process. Each window's histogram is kept as a running sum (an interval is added once and
    subtracted once when it leaves), so a scrape costs a cumulative sum per window, not a merge of 60 intervals."""

    total: HdrHistogram = field(default_factory=hdr.new_histogram)
    intervals: collections.deque[hdr.Interval] = field(default_factory=collections.deque)
    windows: dict[int, HdrHistogram] = field(default_factory=lambda: {w: hdr.new_histogram() for w in WINDOWS_S})
    first_in: dict[int, int] = field(default_factory=lambda: dict.fromkeys(WINDOWS_S, 0))  # deque offset per window
    dropped: int = 0  # intervals popped off the deque's left
    newest_end_s: float = 0.0
    # bumped whenever a count changes (an interval with samples comes in or leaves a window): what buckets() and
    # window_quantiles() computed stays valid until then, so idle tags cost nothing per refresh
    changes: int = 0
    _buckets: tuple[int, tuple[list[tuple[str, int]], float]] | None = field(default=None, repr=False)
    _quantiles: tuple[int, dict[int, dict[float, float] | None]] | None = field(default=None, repr=False)

    def add(self, iv: hdr.Interval) -> None:
        if iv.hist.total_count:
            self.changes += 1
        hdr.add_into(self.total, iv.hist)
        self.intervals.append(iv)
        for h in self.windows.values():
            _add_counts(h, iv.hist, 1)
        self.newest_end_s = max(self.newest_end_s, iv.start_s + iv.length_s)
        for w, h in self.windows.items():
            horizon = self.newest_end_s - w
            while self.first_in[w] - self.dropped < len(self.intervals):
                old = self.intervals[self.first_in[w] - self.dropped]
                if old.start_s + old.length_s > horizon:
                    break
                _add_counts(h, old.hist, -1)
                self.changes += old.hist.total_count > 0
                self.first_in[w] += 1
        while self.dropped < min(self.first_in.values()):
            self.intervals.popleft()
            self.dropped += 1

    def window(self, seconds: int) -> HdrHistogram:
        return self.windows[seconds]

    def window_quantiles(self) -> dict[int, dict[float, float] | None]:
        """window seconds -> quantile -> seconds (None: no sample in that window)."""
        if self._quantiles is not None and self._quantiles[0] == self.changes:
            return self._quantiles[1]
        out: dict[int, dict[float, float] | None] = {}
        for w in WINDOWS_S:
            h = self.window(w)
            if h.total_count == 0:
                out[w] = None
                continue
            vals = hdr.percentiles(h, [q * 100 for q in QUANTILES])
            out[w] = {q: vals[q * 100] / NS_PER_S for q in QUANTILES}
        self._quantiles = (self.changes, out)
        return out

    def buckets(self) -> tuple[list[tuple[str, int]], float]:
        """Cumulative (le, count) pairs ending with +Inf, and the sum in seconds (HDR median-equivalent values)."""
        if self._buckets is not None and self._buckets[0] == self.changes:
            return self._buckets[1]
        counts = hdr.counts_view(self.total)
        _, highest, median = hdr.index_values(self.total)
        cum = np.cumsum(counts)
        out = []
        for us in BUCKETS_US:
            # a counts index belongs to a bucket when its whole value range is at or under the bound
            i = int(np.searchsorted(highest, us * 1000, side="right"))
            out.append((_le(us), int(cum[i - 1]) if i > 0 else 0))
        out.append(("+Inf", int(self.total.total_count)))
        total_ns = float((counts.astype(np.float64) * median).sum())
        self._buckets = (self.changes, (out, total_ns / NS_PER_S))
        return self._buckets[1]


def _add_counts(dst: HdrHistogram, src: HdrHistogram, sign: int) -> None:
    """dst += sign * src on the counts alone (percentiles read counts only; min/max are not kept for windows)."""
    if src.total_count == 0:
        return
    if dst.counts_len != src.counts_len or dst.unit_magnitude != src.unit_magnitude:
        raise ValueError("interval histogram layout differs from the exporter's")
    if sign > 0:
        hdr.counts_view(dst)[:] += hdr.counts_view(src)
    else:
        hdr.counts_view(dst)[:] -= hdr.counts_view(src)  # src was added before: no count goes below zero
    dst.total_count += sign * src.total_count


def _le(us: int) -> str:
    return repr(us / 1e6)


class HlogFollower:
    """Every tag of one process's .hlog, read incrementally."""

    def __init__(self, path: Path) -> None:
        self.tail = hdr.HlogTail(path)
        self.tags: dict[str, TagLatency] = {}

    def poll(self) -> None:
        for iv in self.tail.poll():
            self.tags.setdefault(iv.tag, TagLatency()).add(iv)

    @property
    def bad_lines(self) -> int:
        return self.tail.bad_lines
