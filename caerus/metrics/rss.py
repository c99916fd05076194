"""Resident memory of each fleet process over a session: sampled from outside (psutil), summarised per process.

The session runner calls ``sample()`` from its progress loop (it throttles itself to ``interval_s``); ``summary()``
gives, per process, the RSS at the first and last sample, the maximum, and the least-squares slope in MB/min over
the samples after ``warmup_s`` (start-up allocations are not growth). A process whose loops keep nothing shows a
slope near zero; a leak shows as a steady positive slope.

RSS alone cannot tell a leak from a bounded structure filling up: a ring's shared-memory pages count once a
process first touches them (a 4096-slot book ring is ~330 KB, touched over the minutes the slower venue takes to
wrap it). So each sample also reads the kernel's split of RSS (``/proc/<pid>/status``: RssAnon = heap, RssFile =
mapped files and libraries, RssShmem = the rings) and the summary gives the slope of each part, plus the slope
over the second half of the post-warm-up samples: a filling structure flattens there, a leak does not.

The samples themselves go to ``<session>/rss.csv`` (``write_series``; ``read_series`` for the report's chart), so a
run of any length can be drawn as RSS over time, not only summarised.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil

MB = 1024 * 1024
PARTS = ("anon", "file", "shmem")  # the kernel's split of RSS (RssAnon, RssFile, RssShmem), in this order
SERIES_FILE = "rss.csv"
SERIES_COLUMNS = ("process", "t_s", "rss_bytes", *(f"{p}_bytes" for p in PARTS))
_STATUS_KEYS = {b"RssAnon:": 0, b"RssFile:": 1, b"RssShmem:": 2}


def rss_parts(pid: int) -> tuple[int, int, int] | None:
    """(anon, file, shmem) resident bytes of ``pid`` from /proc/<pid>/status; None when unavailable (not Linux,
    or the process is gone)."""
    out = [0, 0, 0]
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                key, _, rest = line.partition(b"\t")
                i = _STATUS_KEYS.get(key)
                if i is not None:
                    out[i] = int(rest.split()[0]) * 1024  # "kB"
    except (OSError, ValueError, IndexError):
        return None
    return out[0], out[1], out[2]


class RssSampler:
    def __init__(self, interval_s: float = 5.0, warmup_s: float = 30.0) -> None:
        self.interval_s = interval_s
        self.warmup_s = warmup_s
        self._procs: dict[str, psutil.Process] = {}
        self._t0: float | None = None
        self._last = -float("inf")
        # name -> [(t, rss)] or [(t, rss, anon, file, shmem)] where /proc gives the split
        self.samples: dict[str, list[tuple[float, ...]]] = {}

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
            parts = rss_parts(proc.pid)
            if (parts[1] if parts is not None else rss) == 0:
                # No file-backed page resident, not even its interpreter: the process is not running its program
                # (caught mid-exec, before the loader mapped anything: 16 KiB seen; or a zombie, all zeros). That
                # is no reading of its memory, and it would make the series start or end at ~0 MB.
                continue
            self.samples[name].append((now - self._t0, rss) if parts is None else (now - self._t0, rss, *parts))

    def summary(self) -> dict[str, dict[str, Any]]:
        return {name: summarise(series, self.warmup_s) for name, series in self.samples.items() if series}

    def write_series(self, path: Path) -> int:
        """Every sample as one CSV row (``SERIES_COLUMNS``; the split columns empty where /proc gave none), written
        whole (a temporary file renamed); returns the number of rows."""
        tmp = path.with_name(path.name + ".tmp")
        rows = 0
        with open(tmp, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(SERIES_COLUMNS)
            for name, series in self.samples.items():
                for sample in series:
                    parts = [str(v) for v in sample[2:]] or [""] * len(PARTS)
                    out.writerow([name, f"{sample[0]:.3f}", str(sample[1]), *parts])
                    rows += 1
        tmp.replace(path)
        return rows


def read_series(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """process -> (seconds since the first sample, RSS in MB) from a ``write_series`` file, in file order.

    Raises ValueError naming the file and line for a row that is not ``SERIES_COLUMNS``-shaped."""
    points: dict[str, tuple[list[float], list[float]]] = {}
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header is None or tuple(header) != SERIES_COLUMNS:
            raise ValueError(f"{path}: header is {header!r}, expected {','.join(SERIES_COLUMNS)}")
        for line, row in enumerate(rows, start=2):
            try:
                name, t_s, rss = row[0], float(row[1]), int(row[2])
            except (IndexError, ValueError) as exc:
                raise ValueError(f"{path}:{line}: not a process,t_s,rss_bytes row: {row!r}") from exc
            ts, mbs = points.setdefault(name, ([], []))
            ts.append(t_s)
            mbs.append(rss / MB)
    return {name: (np.array(ts), np.array(mbs)) for name, (ts, mbs) in points.items()}


def summarise(series: Sequence[tuple[float, ...]], warmup_s: float) -> dict[str, Any]:
    """start/end/max MB and the MB/min slope after warm-up (None with fewer than 3 samples past warm-up).

    Samples carrying the (anon, file, shmem) split also give ``<part>_end_mb`` and ``<part>_slope_mb_per_min``;
    ``late_slope_mb_per_min`` is the RSS slope over the second half of the post-warm-up samples.
    """
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
    out["slope_mb_per_min"] = _slope(t[past], mb[past])
    tp = t[past]
    late = past & (t >= (tp[0] + tp[-1]) / 2) if tp.size else past
    out["late_slope_mb_per_min"] = _slope(t[late], mb[late])
    if all(len(s) == 2 + len(PARTS) for s in series):
        for k, part in enumerate(PARTS):
            pmb = np.array([s[2 + k] for s in series], dtype=float) / MB
            out[f"{part}_end_mb"] = round(float(pmb[-1]), 2)
            out[f"{part}_slope_mb_per_min"] = _slope(t[past], pmb[past])
    return out


def _slope(t: np.ndarray, mb: np.ndarray) -> float | None:
    """Least-squares MB/min over the points (None with fewer than 3 or no time span)."""
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    return round(float(np.polyfit(t, mb, 1)[0]) * 60.0, 4)
