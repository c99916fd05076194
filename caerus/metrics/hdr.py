"""Latency recording for the fleet: hot-loop sample buffers, HdrHistogram interval logs (.hlog) and spectra (.hgrm).

Owns the on-disk metric formats every fleet process writes and every report reads:

* ``SampleBuffer`` -- a preallocated numpy int64 array the hot loop appends nanosecond samples to (no allocation,
  no call: ``buf.arr[buf.n] = v; buf.n += 1`` guarded by ``buf.n < buf.capacity``, else ``buf.full += 1``).
* ``IntervalLog`` -- off the hot path, ``drain(tag, buf)`` records a buffer into that tag's interval histogram
  (vectorised with numpy straight into the ``hdrhistogram`` package's counts array; ``drain_keyed`` also splits it
  by a key array filled beside the samples, e.g. into ``inst.<NAME>.<tag>``), ``maybe_flush()`` appends one
  ``Tag=<tag>,<start>,<length>,<max>,<histogram>`` line per tag when the interval has elapsed. The ``.hlog`` text
  (format 1.3 headers, legend, interval lines) is written here because the package's ``HistogramLogWriter`` writes
  format 1.2, no tags, and its ``output_start_time`` crashes; the compressed histogram payload is the package's
  standard V2 encoding, so Java/JS HdrHistogram readers decode it.
* Clock artifacts: a negative interval (clocks of two processes/hosts disagree, or NTP stepped) cannot go into a
  histogram, so it is counted per tag, with the most negative value seen, and reported -- never silently dropped.
  Values above the highest trackable value are clamped to it and counted. Samples the hot loop could not store
  because its buffer was full are counted too. These counts live in a ``<path>.json`` sidecar rewritten at every
  flush (so a process killed mid-session still leaves counts up to its last interval).
* ``read_hlog`` / ``HlogTail`` decode an ``.hlog`` back into per-tag histograms (reports, live progress), and
  ``write_hgrm`` writes the standard "Value Percentile TotalCount 1/(1-Percentile)" percentile spectrum.

Units: samples are nanoseconds. Histograms track 1 ns .. 1 hour at 3 significant digits.
"""

from __future__ import annotations

import base64
import ctypes
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import msgspec
import numpy as np
from hdrh import codec as hdr_codec
from hdrh.histogram import HdrHistogram

LOWEST_NS = 1
HIGHEST_NS = 3_600 * 1_000_000_000  # 1 hour in ns: nothing we measure should get near it
SIGNIFICANT_DIGITS = 3
MAX_UNIT_RATIO = 1_000_000.0  # the Interval_Max column is in milliseconds (jHiccup convention for ns data)
HLOG_FORMAT_VERSION = "1.3"
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'

#: the metric tags the fleet records (see the preamble's contract); reports show them in this order
FLEET_TAGS: tuple[str, ...] = (
    "tick_to_decision",
    "tick_to_eval",
    "queue_transit",
    "book_hop",
    "feed_internal.binance",
    "feed_internal.hyperliquid",
    "info_age.binance",
    "info_age.hyperliquid",
    "emulator_lateness.binance",
    "emulator_lateness.hyperliquid",
)

_TAG_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
#: one instrument's share of a metric: ``inst.<NAME>.<tag>`` (NAME: the session's instrument name, letters and
#: digits), recorded beside ``<tag>`` (the fleet's total) by ``IntervalLog.drain_keyed``
INSTRUMENT_PREFIX = "inst."


def instrument_tag(name: str, tag: str) -> str:
    """The tag of instrument ``name``'s share of ``tag`` (``inst.ETH.feed_internal.binance``)."""
    return f"{INSTRUMENT_PREFIX}{name}.{tag}"


def split_instrument_tag(tag: str) -> tuple[str | None, str]:
    """(instrument name, the fleet's tag) of an instrument tag; (None, tag) for any other tag."""
    if not tag.startswith(INSTRUMENT_PREFIX):
        return None, tag
    name, _, rest = tag[len(INSTRUMENT_PREFIX):].partition(".")
    return (name, rest) if name and rest else (None, tag)


def new_histogram(highest: int = HIGHEST_NS, digits: int = SIGNIFICANT_DIGITS) -> HdrHistogram:
    """An empty histogram with the fleet's standard range and precision."""
    return HdrHistogram(LOWEST_NS, highest, digits)


def counts_view(h: HdrHistogram) -> np.ndarray:
    """A writable numpy view (uint64) of a histogram's counts array (no copy)."""
    return np.frombuffer(h.counts, dtype=np.uint64, count=h.counts_len)


def counts_indices(h: HdrHistogram, values: np.ndarray) -> np.ndarray:
    """Vectorised HdrHistogram counts index for each non-negative value (< 2**53, exact in float64)."""
    v = values.astype(np.int64, copy=False)
    # bit length of (v | sub_bucket_mask) == 64 - clz(...); frexp's exponent is the bit length for v < 2**53
    _, bitlen = np.frexp((v | h.sub_bucket_mask).astype(np.float64))
    bucket = bitlen.astype(np.int64) - (h.unit_magnitude + h.sub_bucket_half_count_magnitude + 1)
    sub_bucket = v >> (bucket + h.unit_magnitude)
    return ((bucket + 1) << h.sub_bucket_half_count_magnitude) + (sub_bucket - h.sub_bucket_half_count)


# record_array adds values one by one (np.add.at) below counts_len / this many values, else counts them all at once
# (np.bincount): measured on 33,792 counters, add.at 7-22 us for 10-4,000 values and 135 us at 16,000, bincount
# 110-185 us throughout
_BINCOUNT_SHARE = 2
_ONE = np.uint64(1)


def record_array(h: HdrHistogram, values: np.ndarray, counts: np.ndarray | None = None) -> None:
    """Record many non-negative in-range values (optionally each with a count) into ``h`` in one numpy pass."""
    if values.size == 0:
        return
    idx = counts_indices(h, values)
    view = counts_view(h)
    if values.size < h.counts_len // _BINCOUNT_SHARE:
        # a few values (an interval's samples of one instrument): added where they fall, O(n); bincount's array of
        # every counter cost ~110 us a call whatever n, and a feed keyed by 64 instruments makes 128 calls a drain
        np.add.at(view, idx, _ONE if counts is None else counts.astype(np.uint64))
    else:
        weights = None if counts is None else counts.astype(np.float64)
        view += np.bincount(idx, weights=weights, minlength=h.counts_len).astype(np.uint64)
    total = int(values.size if counts is None else int(counts.sum()))
    h.total_count += total
    h.min_value = min(h.min_value, int(values.min()))
    h.max_value = max(h.max_value, int(values.max()))


def clear(h: HdrHistogram) -> None:
    """Reset a histogram with numpy (the package's reset() is a Python loop): the counters up to the maximum's,
    the only ones a recorded value can have reached (zeroing all 33,792 took ~35 us, paid per tag per interval)."""
    if h.total_count:
        end = int(counts_indices(h, np.asarray([h.max_value], dtype=np.int64))[0]) + 1
        counts_view(h)[:end] = 0
    h.total_count = 0
    h.min_value = 2**63 - 1
    h.max_value = 0


def add_into(dst: HdrHistogram, src: HdrHistogram) -> None:
    """dst += src for histograms of identical layout, via numpy (fast path for merging many intervals)."""
    if src.total_count == 0:
        return
    if dst.counts_len != src.counts_len or dst.unit_magnitude != src.unit_magnitude:
        dst.add(src)  # different layout: the package re-records value by value
        return
    counts_view(dst)[:] += counts_view(src)
    dst.total_count += src.total_count
    dst.min_value = min(dst.min_value, src.get_min_value())
    dst.max_value = max(dst.max_value, src.get_max_value())


def percentile(h: HdrHistogram, pct: float) -> int:
    """Value at percentile (0..100) with the Java/JS HdrHistogram semantics, via a numpy cumsum."""
    return percentiles(h, [pct])[pct]


def percentiles(h: HdrHistogram, pcts: Iterable[float]) -> dict[float, int]:
    """Several percentiles from one cumulative sum."""
    out: dict[float, int] = {}
    total = h.total_count
    pcts = list(pcts)
    if total == 0:
        return dict.fromkeys(pcts, 0)
    cum = np.cumsum(counts_view(h))
    for p in pcts:
        # Java/JS HdrHistogram rule: round the fractional count up, forgiving a 1-ulp float error
        fp = min(p, 100.0) / 100.0 * total
        target = max(1, math.ceil(fp - math.ulp(fp)))
        i = int(np.searchsorted(cum, target, side="left"))
        if p <= 0.0:
            out[p] = int(h.get_lowest_equivalent_value(h.get_value_from_index(i)))
        else:
            out[p] = int(h.get_highest_equivalent_value(h.get_value_from_index(i)))
    return out


class SampleBuffer:
    """Preallocated sample storage for a hot loop.

    Hot loop (no call, no allocation)::

        if buf.n < buf.capacity:
            buf.arr[buf.n] = t_end - t_start
            buf.n += 1
        else:
            buf.full += 1

    ``IntervalLog.drain`` empties it off the hot path (and moves ``full`` into the tag's counts).
    """

    __slots__ = ("arr", "capacity", "full", "n")

    def __init__(self, capacity: int = 1 << 16) -> None:
        if capacity <= 0:
            raise ValueError(f"SampleBuffer capacity must be positive, got {capacity}")
        self.arr: np.ndarray = np.zeros(capacity, dtype=np.int64)
        self.capacity: int = capacity
        self.n: int = 0
        self.full: int = 0

    def add(self, value: int) -> bool:
        """Convenience append (a method call: fine off the hot path and in tests). False when full (counted)."""
        if self.n < self.capacity:
            self.arr[self.n] = value
            self.n += 1
            return True
        self.full += 1
        return False


@dataclass
class TagStats:
    """Per-tag bookkeeping that cannot live inside a histogram."""

    count: int = 0  # samples recorded into histograms
    clock_artifacts: int = 0  # negative samples (not recordable), counted
    min_artifact_ns: int = 0  # most negative sample seen (0 when none)
    clamped: int = 0  # samples above the highest trackable value, recorded as that value
    buffer_full: int = 0  # samples the hot loop could not store (buffer full before a drain)
    max_ns: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "count": self.count,
            "clock_artifacts": self.clock_artifacts,
            "min_artifact_ns": self.min_artifact_ns,
            "clamped": self.clamped,
            "buffer_full": self.buffer_full,
            "max_ns": self.max_ns,
        }


def _fmt_start_time(t_s: float) -> str:
    human = datetime.fromtimestamp(t_s, tz=UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    return f"#[StartTime: {t_s:.3f} (seconds since epoch), {human}]"


def hlog_header(start_s: float, comment: str | None = None) -> str:
    """The header block of a format-1.3 .hlog whose interval timestamps are relative to ``start_s``."""
    lines = [f"#[Histogram log format version {HLOG_FORMAT_VERSION}]"]
    if comment:
        lines.append(f"#[{comment}]")
    lines += [
        "#[Values in nanoseconds; Interval_Max in milliseconds]",
        _fmt_start_time(start_s),
        f"#[BaseTime: {start_s:.3f} (seconds since epoch)]",
        LEGEND,
    ]
    return "\n".join(lines) + "\n"


# The ctypes array types of hdrh's encode buffers, kept for the life of the process: every size `encode` can ask
# hdrh for, made together at a histogram shape's first encode. ctypes reuses a type only while something holds it;
# released, it is cyclic garbage (7 objects) that a process with the collector disabled keeps, and made one new
# maximum at a time they were ~3 KB of growth an interval, well into a long run.
_BUFFER_TYPES: dict[tuple[int, int, int], list[type]] = {}


def _keep_buffer_types(h: HdrHistogram, enc: hdr_codec.HdrHistogramEncoder) -> None:
    """Hold the ctypes types of the buffers hdrh's ``compress(counts_limit)`` allocates (its size formula), for
    every counts_limit `encode` uses on histograms of ``h``'s shape: 0 and each half-bucket's end."""
    half, word = h.sub_bucket_half_count, enc.payload.word_size
    shape = (h.counts_len, half, word)
    if shape not in _BUFFER_TYPES:
        limits = [0, *(min(h.counts_len, k * half) for k in range(1, -(-h.counts_len // half) + 1))]
        _BUFFER_TYPES[shape] = [ctypes.c_byte * (hdr_codec.payload_header_size + n * (word + 1)) for n in limits]


def encode(h: HdrHistogram) -> str:
    """``h.encode()`` as ASCII: the counters up to the end of the half-bucket that holds the maximum.

    hdrh sizes its ctypes encode buffer to the counters encoded, and ctypes makes a new array *type* per distinct
    size; types sit in reference cycles, so a process running with the collector disabled kept one for good per
    interval with a new maximum (hdrh's own encode stops at the maximum's counter). Stopping at a half-bucket's end
    bounds the sizes to one per half-bucket (33 for the fleet's range), and it encodes a third of the counters a
    typical microsecond histogram's whole array holds (encoding all 33,792 took ~130 us, paid per tag per interval:
    a feed keyed by 64 instruments writes 130 tags a second). Every size's type is kept alive
    (`_keep_buffer_types`), so it is reused and never becomes garbage.
    """
    enc = h.encoder
    _keep_buffer_types(h, enc)
    if not h.total_count:
        return h.encode().decode("ascii")  # hdrh encodes no counters for an empty histogram: counts_limit 0
    half = h.sub_bucket_half_count
    end = int(counts_indices(h, np.asarray([h.max_value], dtype=np.int64))[0]) + 1
    cpayload = enc.payload.compress(min(h.counts_len, -(-end // half) * half))
    enc.header.length = len(cpayload)
    header = ctypes.string_at(ctypes.addressof(enc.header), hdr_codec.ext_header_size)
    return base64.b64encode(header + cpayload).decode("ascii")


def interval_line(tag: str, start_rel_s: float, length_s: float, h: HdrHistogram, payload: str | None = None) -> str:
    """One ``Tag=...`` interval line (``payload``: a precomputed encoding of ``h``, to skip re-encoding)."""
    if payload is None:
        payload = encode(h)
    imax = (h.get_max_value() if h.total_count else 0) / MAX_UNIT_RATIO
    return f"Tag={tag},{start_rel_s:.3f},{length_s:.3f},{imax:.3f},{payload}\n"


class IntervalLog:
    """One process's ``.hlog``: an interval histogram per tag, a line per tag per interval.

    Timestamps in interval lines are seconds relative to ``#[BaseTime: ...]`` (= the log's start time), as
    jHiccup writes them. Not thread-safe: call drain/maybe_flush/close from one thread.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        tags: Iterable[str],
        interval_s: float = 1.0,
        *,
        highest_ns: int = HIGHEST_NS,
        digits: int = SIGNIFICANT_DIGITS,
        clock_ns: Callable[[], int] = time.time_ns,
        comment: str | None = None,
    ) -> None:
        tags = list(tags)
        if not tags:
            raise ValueError("IntervalLog needs at least one tag")
        for tag in tags:
            if not _TAG_RE.match(tag):
                raise ValueError(f"bad metric tag {tag!r}: use letters, digits, '_', '.', '-' only")
        if len(set(tags)) != len(tags):
            raise ValueError(f"duplicate metric tags in {tags}")
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.path = Path(path)
        self.sidecar = self.path.with_name(self.path.name + ".json")
        self.tags = tags
        self.interval_ns = int(interval_s * 1e9)
        self.highest_ns = highest_ns
        self._clock = clock_ns
        self._hists = {t: new_histogram(highest_ns, digits) for t in tags}
        self.stats = {t: TagStats() for t in tags}
        self.start_ns = clock_ns()
        self._interval_start_ns = self.start_ns
        self.intervals_written = 0
        self.closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[str] = open(self.path, "w", encoding="ascii")  # noqa: SIM115 - lives as long as the log
        start_s = self.start_ns / 1e9
        self._f.write(hlog_header(start_s, comment))
        self._f.flush()
        self._base_s = float(f"{start_s:.3f}")
        self._write_sidecar()

    # -- recording (off the hot path) ---------------------------------------------------------------------

    def drain(self, tag: str, buf: SampleBuffer) -> int:
        """Record ``buf.arr[:buf.n]`` into ``tag``'s interval histogram and empty the buffer; returns n drained."""
        n = buf.n
        if buf.full:
            self.stats[tag].buffer_full += buf.full
            buf.full = 0
        if n:
            self.record_values(tag, buf.arr[:n])
            buf.n = 0
        return n

    def drain_keyed(self, tag: str, buf: SampleBuffer, keys: np.ndarray, key_tags: Sequence[str]) -> int:
        """``drain(tag, buf)``, each sample also recorded into ``key_tags[keys[j]]``: ``keys`` is an int array the
        hot loop filled beside ``buf.arr`` (one store per sample, e.g. the instrument id), so a slow key does not
        hide in the tag's total and the keyed counts sum to the tag's. Samples with a key outside ``key_tags``
        are in the tag only."""
        n = buf.n
        if n and key_tags:
            # one sort by key, then a slice per key present: a mask per key tag cost O(n x keys) and a call for
            # every key tag, present or not (64 instruments: 64 masks a drain)
            k = keys[:n]
            order = np.argsort(k, kind="stable")
            present, starts = np.unique(k[order], return_index=True)
            values = buf.arr[:n][order]
            ends = [*starts[1:].tolist(), n]
            for key, a, b in zip(present.tolist(), starts.tolist(), ends, strict=True):
                if 0 <= key < len(key_tags):
                    self.record_values(key_tags[key], values[a:b])
        return self.drain(tag, buf)

    def record_values(self, tag: str, values: np.ndarray) -> None:
        """Record an array of ns samples: negatives counted as clock artifacts, too-large ones clamped+counted."""
        try:
            h = self._hists[tag]
        except KeyError:
            raise KeyError(f"unknown metric tag {tag!r}; this log has {self.tags}") from None
        st = self.stats[tag]
        neg = values < 0
        n_neg = int(np.count_nonzero(neg))
        if n_neg:
            st.clock_artifacts += n_neg
            st.min_artifact_ns = min(st.min_artifact_ns, int(values.min()))
            values = values[~neg]
        big = values > self.highest_ns
        n_big = int(np.count_nonzero(big))
        if n_big:
            st.clamped += n_big
            values = np.minimum(values, self.highest_ns)
        if values.size:
            record_array(h, values)
            st.count += int(values.size)
            st.max_ns = max(st.max_ns, int(values.max()))

    def record(self, tag: str, value: int) -> None:
        """Record one sample (slow path; prefer a SampleBuffer in loops)."""
        self.record_values(tag, np.asarray([value], dtype=np.int64))

    # -- output ---------------------------------------------------------------------------------------------

    def maybe_flush(self, now_ns: int | None = None) -> bool:
        """Write the interval lines if the current interval has elapsed; True when it wrote."""
        now = self._clock() if now_ns is None else now_ns
        if now - self._interval_start_ns < self.interval_ns:
            return False
        self._flush_interval(now)
        return True

    def flush(self, now_ns: int | None = None) -> None:
        """End the current interval now (whatever its length) and write its lines."""
        self._flush_interval(self._clock() if now_ns is None else now_ns)

    def _flush_interval(self, now: int) -> None:
        start_rel = self._interval_start_ns / 1e9 - self._base_s
        length = max(0.0, (now - self._interval_start_ns) / 1e9)
        lines = []
        for tag in self.tags:
            h = self._hists[tag]
            lines.append(interval_line(tag, start_rel, length, h))
            clear(h)
        self._f.write("".join(lines))
        self._f.flush()
        self._interval_start_ns = now
        self.intervals_written += 1
        self._write_sidecar()

    def _write_sidecar(self, end_ns: int | None = None) -> None:
        doc = {
            "format": "caerus-hlog-sidecar/1",
            "hlog": self.path.name,
            "start_ns": self.start_ns,
            "end_ns": end_ns,
            "interval_ns": self.interval_ns,
            "intervals": self.intervals_written,
            "closed": end_ns is not None,
            "highest_trackable_ns": self.highest_ns,
            "tags": {t: s.to_dict() for t, s in self.stats.items()},
        }
        tmp = self.sidecar.with_name(self.sidecar.name + ".tmp")
        # msgspec, not json.dumps(indent=...): the stdlib's indenting encoder is pure Python and leaves a reference
        # cycle (encoder <-> closures) per call, which a process running with the collector disabled never frees.
        tmp.write_bytes(msgspec.json.format(msgspec.json.encode(doc), indent=1))
        os.replace(tmp, self.sidecar)

    def close(self) -> None:
        """Flush the last (partial) interval and write the final sidecar. Idempotent."""
        if self.closed:
            return
        now = self._clock()
        if any(h.total_count for h in self._hists.values()) or now > self._interval_start_ns:
            self._flush_interval(now)
        self._f.close()
        self.closed = True
        self._write_sidecar(end_ns=now)

    def __enter__(self) -> IntervalLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- reading -----------------------------------------------------------------------------------------------


@dataclass
class Interval:
    """One decoded interval line."""

    tag: str
    start_s: float  # absolute, seconds since the epoch
    length_s: float
    hist: HdrHistogram

    @property
    def count(self) -> int:
        return int(self.hist.total_count)

    @property
    def max_ns(self) -> int:
        return int(self.hist.get_max_value()) if self.hist.total_count else 0


@dataclass
class HlogData:
    """A decoded .hlog: header times, every interval in file order, and bad lines (counted, never fatal)."""

    path: Path
    start_time_s: float = 0.0
    base_time_s: float = 0.0
    intervals: list[Interval] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)

    def tags(self) -> list[str]:
        seen: dict[str, None] = {}
        for iv in self.intervals:
            seen.setdefault(iv.tag, None)
        return list(seen)

    def merged(self, tag: str) -> HdrHistogram:
        """All intervals of one tag added together."""
        out = new_histogram()
        for iv in self.intervals:
            if iv.tag == tag:
                add_into(out, iv.hist)
        return out

    def merged_all(self) -> dict[str, HdrHistogram]:
        out: dict[str, HdrHistogram] = {}
        for iv in self.intervals:
            h = out.get(iv.tag)
            if h is None:
                h = out[iv.tag] = new_histogram(iv.hist.highest_trackable_value, iv.hist.significant_figures)
            add_into(h, iv.hist)
        return out


# the header lines a parser keeps: (line prefix, name in errors, the _LineParser attribute set to its seconds)
_TIME_HEADERS = (("#[StartTime:", "StartTime", "start_time_s"), ("#[BaseTime:", "BaseTime", "base_time_s"))


class _LineParser:
    """Shared by read_hlog and HlogTail: header state + interval line decoding."""

    def __init__(self) -> None:
        self.start_time_s = 0.0
        self.base_time_s: float | None = None

    def parse(self, line: str) -> Interval | str | None:
        """An Interval, None for header/comment lines, or an error string for a bad line."""
        line = line.strip()
        if not line:
            return None
        for prefix, header, attr in _TIME_HEADERS:
            if line.startswith(prefix):
                try:
                    setattr(self, attr, float(line.split()[1]))
                except (IndexError, ValueError):
                    return f"unparseable {header} header"
                return None
        if line.startswith("#") or line.startswith('"StartTimestamp"'):
            return None
        tokens = line.split(",")
        tag = ""
        if tokens[0].startswith("Tag="):
            tag = tokens.pop(0)[4:]
        if len(tokens) != 4:
            return f"expected 4 fields after the tag, got {len(tokens)}"
        try:
            ts = float(tokens[0])
            length = float(tokens[1])
        except ValueError:
            return "non-numeric timestamp or interval length"
        try:
            hist = HdrHistogram.decode(tokens[3].encode("ascii"))
        except Exception as exc:  # the package raises several types (binascii, zlib, its own)
            return f"histogram payload does not decode: {type(exc).__name__}: {exc}"
        base = self.base_time_s
        if base is None:
            # same rule as the reference readers: timestamps far before StartTime are relative to it
            base = self.start_time_s if ts < self.start_time_s - 365 * 24 * 3600.0 else 0.0
        return Interval(tag=tag, start_s=base + ts, length_s=length, hist=hist)


def read_hlog(path: str | os.PathLike[str]) -> HlogData:
    """Decode a whole .hlog. Bad lines (e.g. a torn last line of a killed process) are listed, not fatal."""
    data = HlogData(path=Path(path))
    parser = _LineParser()
    with open(path, encoding="ascii", errors="replace") as f:
        for no, line in enumerate(f, 1):
            res = parser.parse(line)
            if res is None:
                continue
            if isinstance(res, str):
                data.bad_lines.append((no, res))
                continue
            data.intervals.append(res)
    data.start_time_s = parser.start_time_s
    data.base_time_s = parser.base_time_s or 0.0
    return data


class HlogTail:
    """Incremental reader for a .hlog being written (live progress): yields only complete new lines."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = ""
        self._parser = _LineParser()
        self.bad_lines = 0

    def poll(self) -> Iterator[Interval]:
        try:
            with open(self.path, encoding="ascii", errors="replace") as f:
                f.seek(self._offset)
                chunk = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()  # incomplete last line (or "")
        for line in lines:
            res = self._parser.parse(line)
            if isinstance(res, Interval):
                yield res
            elif isinstance(res, str):
                self.bad_lines += 1


def read_sidecar(hlog_path: str | os.PathLike[str]) -> dict | None:
    """The artifact/clamp/buffer-full counts written next to an .hlog, or None when missing/unreadable."""
    p = Path(hlog_path)
    side = p.with_name(p.name + ".json")
    try:
        return json.loads(side.read_text())
    except (OSError, ValueError):
        return None


# -- percentile spectrum -------------------------------------------------------------------------------------


def write_hgrm(
    h: HdrHistogram,
    out: str | os.PathLike[str] | IO[str],
    unit_ratio: float = 1000.0,
    ticks_per_half_distance: int = 5,
) -> None:
    """Write the standard HdrHistogram percentile spectrum ("Value Percentile TotalCount 1/(1-Percentile)").

    ``unit_ratio`` divides the recorded ns values for display (default 1000: values in microseconds).
    Written here rather than with the package's output_percentile_distribution, which does not scale StdDev.
    """
    if isinstance(out, str | os.PathLike):
        with open(out, "w", encoding="ascii") as f:
            write_hgrm(h, f, unit_ratio, ticks_per_half_distance)
        return
    digits = h.significant_figures
    out.write(f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n")
    if h.total_count:
        for it in h.get_percentile_iterator(ticks_per_half_distance):
            value = it.value_iterated_to / unit_ratio
            pct = it.percentile_level_iterated_to / 100.0
            total = it.total_count_to_this_value
            if it.percentile_level_iterated_to != 100:
                inv = 1.0 / (1.0 - pct)
                out.write(f"{value:12.{digits}f} {pct:2.12f} {total:10d} {inv:14.2f}\n")
            else:
                out.write(f"{value:12.{digits}f} {pct:2.12f} {total:10d}\n")
    mean, std = mean_stddev(h)
    mean, std = mean / unit_ratio, std / unit_ratio
    mx = (h.get_max_value() if h.total_count else 0) / unit_ratio
    out.write(f"#[Mean    = {mean:12.{digits}f}, StdDeviation   = {std:12.{digits}f}]\n")
    out.write(f"#[Max     = {mx:12.{digits}f}, Total count    = {h.total_count:12d}]\n")
    out.write(f"#[Buckets = {h.bucket_count:12d}, SubBuckets     = {h.sub_bucket_count:12d}]\n")


# -- vectorised per-bucket values (mean/stddev/charts without the package's Python iterators) -----------------

_VALUE_CACHE: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def index_values(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowest, highest, median) equivalent value of every counts index of ``h``'s layout (cached per layout)."""
    key = (h.counts_len, h.unit_magnitude, h.sub_bucket_half_count_magnitude)
    hit = _VALUE_CACHE.get(key)
    if hit is not None:
        return hit
    idx = np.arange(h.counts_len, dtype=np.int64)
    bucket = (idx >> h.sub_bucket_half_count_magnitude) - 1
    sub = (idx & (h.sub_bucket_half_count - 1)) + h.sub_bucket_half_count
    first = bucket < 0
    sub = np.where(first, sub - h.sub_bucket_half_count, sub)
    bucket = np.where(first, 0, bucket)
    lowest = sub << (bucket + h.unit_magnitude)
    size = np.left_shift(np.int64(1), bucket + h.unit_magnitude)
    highest = lowest + size - 1
    median = lowest + (size >> 1)
    _VALUE_CACHE[key] = (lowest, highest, median)
    return lowest, highest, median


def mean_stddev(h: HdrHistogram) -> tuple[float, float]:
    """Mean and standard deviation with HdrHistogram's median-equivalent-value convention, in numpy."""
    if not h.total_count:
        return 0.0, 0.0
    counts = counts_view(h).astype(np.float64)
    _, _, median = index_values(h)
    total = counts.sum()
    mean = float((counts * median).sum() / total)
    var = float((counts * (median - mean) ** 2).sum() / total)
    return mean, math.sqrt(var)
