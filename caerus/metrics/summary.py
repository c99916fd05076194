"""A session's metrics, computed from the ``.hlog`` files its processes wrote (for collect, reports, regress).

``load_metrics(session_dir)`` decodes every ``*.hlog`` in a session folder, merges intervals per tag (a tag
written by several files is merged too), keeps a per-interval series (count, max, p99) for latency-over-time
charts, and folds in the sidecar counts (clock artifacts, clamped, buffer-full). ``MetricData.stats()`` is the
headline dict (n, p50 .. max in ns) that goes into ``summary.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hdrh.codec import HdrHistogramEncoder
from hdrh.histogram import HdrHistogram

from caerus.metrics import hdr

HEADLINE_PCTS: tuple[tuple[str, float], ...] = (
    ("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9), ("p9999", 99.99),
)
SIDECAR_COUNTS = ("clock_artifacts", "clamped", "buffer_full")


@dataclass
class MetricData:
    """One metric (tag) over a whole session."""

    tag: str
    hist: HdrHistogram
    sources: list[str] = field(default_factory=list)  # hlog file names that carried this tag
    # per interval, in time order: absolute start (s), length (s), count, max (ns), p99 (ns)
    t_start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    t_len: np.ndarray = field(default_factory=lambda: np.zeros(0))
    i_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    i_max: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    i_p99: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    clock_artifacts: int = 0
    min_artifact_ns: int = 0
    clamped: int = 0
    buffer_full: int = 0
    sidecar_missing: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.hist.total_count)

    def stats(self) -> dict[str, Any]:
        n = self.n
        out: dict[str, Any] = {"unit": "ns", "n": n, "sources": self.sources, "intervals": int(self.i_count.size)}
        pv = hdr.percentiles(self.hist, [p for _, p in HEADLINE_PCTS])
        for key, p in HEADLINE_PCTS:
            out[key] = pv[p] if n else None
        mean, std = hdr.mean_stddev(self.hist)
        out["min"] = int(self.hist.get_min_value()) if n else None
        out["max"] = int(self.hist.get_max_value()) if n else None
        out["mean"] = mean if n else None
        out["stddev"] = std if n else None
        out["clock_artifacts"] = self.clock_artifacts
        out["min_artifact_ns"] = self.min_artifact_ns
        out["clamped"] = self.clamped
        out["buffer_full"] = self.buffer_full
        if self.sidecar_missing:
            out["sidecar_missing"] = self.sidecar_missing
        return out


@dataclass
class SessionMetrics:
    metrics: dict[str, MetricData]
    bad_lines: dict[str, list[tuple[int, str]]]  # hlog name -> bad lines
    files: list[str]

    def ordered(self) -> list[MetricData]:
        """Fleet tags first in their canonical order, then any others alphabetically."""
        known = [self.metrics[t] for t in hdr.FLEET_TAGS if t in self.metrics]
        rest = [self.metrics[t] for t in sorted(self.metrics) if t not in hdr.FLEET_TAGS]
        return known + rest


class _FastDecoder:
    """Decodes interval payloads straight into a reusable counts buffer (skips building HdrHistogram objects)."""

    def __init__(self) -> None:
        self.ref = hdr.new_histogram()

    def decode_counts(self, payload: str) -> tuple[np.ndarray, HdrHistogram | None, int, int]:
        """(counts, foreign histogram or None, total count, highest non-zero index or -1)."""
        hp = HdrHistogramEncoder.decode(payload.encode("ascii"))
        p = hp.payload
        ref = self.ref
        if (p.lowest_trackable_value, p.highest_trackable_value, p.significant_figures) != (
            ref.lowest_trackable_value, ref.highest_trackable_value, ref.significant_figures
        ):
            h = HdrHistogram(p.lowest_trackable_value, p.highest_trackable_value, p.significant_figures,
                             hdr_payload=hp)
            return hdr.counts_view(h), h, int(h.total_count), -1
        res = hp.init_counts(ref.counts_len)  # the C decoder reports total and the non-zero index range
        counts = np.frombuffer(hp.counts, dtype=np.uint64, count=ref.counts_len)
        return counts, None, int(res["total"]), int(res["max_nonzero_index"]) if res["total"] else -1


def _interval_p99(cum: np.ndarray, total: int, highest: np.ndarray) -> int:
    fp = 0.99 * total
    target = max(1, math.ceil(fp - math.ulp(fp)))
    return int(highest[int(np.searchsorted(cum, np.uint64(target), side="left"))])


def load_metrics(session_dir: Path) -> SessionMetrics:
    """Decode and merge every .hlog in ``session_dir`` (not recursive)."""
    dec = _FastDecoder()
    ref = dec.ref
    lowest, highest, _ = hdr.index_values(ref)
    merged: dict[str, np.ndarray] = {}
    series: dict[str, list[tuple[float, float, int, int, int]]] = {}
    sources: dict[str, list[str]] = {}
    foreign: dict[str, HdrHistogram] = {}
    bad: dict[str, list[tuple[int, str]]] = {}
    files = sorted(session_dir.glob("*.hlog"))
    for path in files:
        parser = hdr._LineParser()
        with open(path, encoding="ascii", errors="replace") as f:
            for no, line in enumerate(f, 1):
                if not line.startswith("Tag=") and not (line[:1].isdigit()):
                    res = parser.parse(line)  # headers / comments / legend
                    if isinstance(res, str):
                        bad.setdefault(path.name, []).append((no, res))
                    continue
                tokens = line.strip().split(",")
                tag = tokens.pop(0)[4:] if tokens[0].startswith("Tag=") else ""
                if len(tokens) != 4:
                    bad.setdefault(path.name, []).append((no, f"expected 4 fields, got {len(tokens)}"))
                    continue
                try:
                    ts, length = float(tokens[0]), float(tokens[1])
                    counts, other, total, max_idx = dec.decode_counts(tokens[3])
                except Exception as exc:  # base64/zlib/cookie errors from a torn or corrupt line
                    bad.setdefault(path.name, []).append((no, f"{type(exc).__name__}: {exc}"))
                    continue
                base = parser.base_time_s
                if base is None:
                    base = parser.start_time_s if ts < parser.start_time_s - 365 * 24 * 3600.0 else 0.0
                if path.name not in sources.setdefault(tag, []):
                    sources[tag].append(path.name)
                if other is not None:  # different histogram layout: merge through the package
                    foreign.setdefault(tag, hdr.new_histogram()).add(other)
                    mx = int(other.get_max_value()) if total else 0
                    p99 = hdr.percentile(other, 99.0) if total else 0
                else:
                    acc = merged.get(tag)
                    if acc is None:
                        acc = merged[tag] = np.zeros(ref.counts_len, dtype=np.uint64)
                    if total:
                        used = counts[: max_idx + 1]
                        acc[: max_idx + 1] += used
                        mx = int(highest[max_idx])
                        p99 = _interval_p99(np.cumsum(used), total, highest)
                    else:
                        mx = p99 = 0
                series.setdefault(tag, []).append((base + ts, length, total, mx, p99))
    metrics: dict[str, MetricData] = {}
    for tag in sources:
        h = hdr.new_histogram()
        acc = merged.get(tag)
        if acc is not None:
            hdr.counts_view(h)[:] = acc
            nz = np.flatnonzero(acc)
            if nz.size:
                h.total_count = int(acc.sum())
                h.min_value = int(lowest[nz[0]])
                h.max_value = int(highest[nz[-1]])
        if tag in foreign:
            hdr.add_into(h, foreign[tag])
        rows = sorted(series.get(tag, []))
        arr = np.array(rows, dtype=np.float64).reshape(-1, 5)
        md = MetricData(
            tag=tag, hist=h, sources=sources[tag],
            t_start=arr[:, 0], t_len=arr[:, 1], i_count=arr[:, 2].astype(np.int64),
            i_max=arr[:, 3].astype(np.int64), i_p99=arr[:, 4].astype(np.int64),
        )
        for src in sources[tag]:
            side = hdr.read_sidecar(session_dir / src)
            st = (side or {}).get("tags", {}).get(tag)
            if st is None:
                md.sidecar_missing.append(src)
                continue
            md.clock_artifacts += int(st.get("clock_artifacts", 0))
            md.min_artifact_ns = min(md.min_artifact_ns, int(st.get("min_artifact_ns", 0)))
            md.clamped += int(st.get("clamped", 0))
            md.buffer_full += int(st.get("buffer_full", 0))
        metrics[tag] = md
    return SessionMetrics(metrics=metrics, bad_lines=bad, files=[p.name for p in files])


def write_hgrms(sm: SessionMetrics, out_dir: Path, unit_ratio: float = 1000.0) -> list[Path]:
    """One ``<tag>.hgrm`` percentile spectrum per metric (values in microseconds by default)."""
    written = []
    for md in sm.ordered():
        path = out_dir / f"{md.tag}.hgrm"
        hdr.write_hgrm(md.hist, path, unit_ratio=unit_ratio)
        written.append(path)
    return written
