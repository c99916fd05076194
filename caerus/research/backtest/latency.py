"""Latency for a backtest: feed latency and order latency modelled apart, segment by segment, seeded.

Feed latency (a book seen later than the venue event), per book:
  ``info_age.<venue>`` (venue event -> t_recv; only for a source without a measured t_recv, i.e. the offline
  market model), ``feed_internal.<venue>`` (t_recv -> t_publish; only where the source has no t_publish),
  ``book_hop`` (t_publish -> t_seen: when the strategy reads the book; every book).
Order latency (the order reaches the venue later than the book that triggered it), per order:
  ``seen_to_decision`` (t_seen -> t_decision), ``queue_transit`` (t_decision -> t_pickup), ``pickup_to_sent``
  (t_pickup -> t_sent: risk, serialisation, the send), ``wire`` (t_sent -> arrival at the venue; a session on
  loopback does not measure it: 0 unless set). The venue's answer comes back after the same wire time and one
  ``book_hop`` (the engine's EXEC record read by the strategy).

:meth:`LatencyModel.from_session` draws every segment from that session's measured HdrHistograms (all its
``.hlog`` files merged per tag; a segment the session did not measure is 0 and named in ``missing``).
:meth:`LatencyModel.constant` puts a fixed order latency on the wire segment (and optionally a fixed feed
latency). ``add_ns`` (``--latency-add``, the latency sweep) is added to the wire segment, each way. Every draw
comes from one ``numpy.random.Generator`` seeded by the run's seed, in a fixed order, so a seed fixes them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from hdrh.histogram import HdrHistogram

from caerus.metrics import hdr
from caerus.wire import Venue

if TYPE_CHECKING:
    from caerus.research.backtest.observed import ObservedTiming

FEED_SEGMENTS = ("info_age.binance", "info_age.hyperliquid", "feed_internal.binance", "feed_internal.hyperliquid",
                 "book_hop")
ORDER_SEGMENTS = ("seen_to_decision", "queue_transit", "pickup_to_sent", "wire")
SEGMENTS = FEED_SEGMENTS + ORDER_SEGMENTS
_BATCH = 4096  # per-order draws are taken from batches drawn ahead (numpy per draw is ~1 us of call overhead)


class LatencyError(ValueError):
    """A latency setting or source that cannot be used (no such session, no histograms, a bad value)."""


@dataclass(frozen=True)
class Distribution:
    """An empirical distribution of nanosecond values: the histogram's bucket values and cumulative counts."""

    values: np.ndarray  # int64, one per non-empty bucket (its median equivalent value)
    cum: np.ndarray  # float64 cumulative probability, last == 1
    n: int  # samples the histogram held

    @classmethod
    def constant(cls, ns: int) -> Distribution:
        return cls(np.array([int(ns)], dtype=np.int64), np.array([1.0]), 0)

    @classmethod
    def from_histogram(cls, h: HdrHistogram) -> Distribution:
        counts = hdr.counts_view(h).astype(np.float64)
        _, _, median = hdr.index_values(h)
        nz = np.nonzero(counts)[0]
        if not len(nz):
            return cls.constant(0)
        c = np.cumsum(counts[nz])
        return cls(median[nz].astype(np.int64), c / c[-1], int(c[-1]))

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if len(self.values) == 1:
            return np.full(size, self.values[0], dtype=np.int64)
        idx = np.searchsorted(self.cum, rng.random(size), side="right")
        return self.values[np.minimum(idx, len(self.values) - 1)]

    @property
    def p50(self) -> int:
        return int(self.values[min(int(np.searchsorted(self.cum, 0.5)), len(self.values) - 1)])


@dataclass
class LatencyModel:
    """Per-segment distributions; ``source`` says where they came from (printed in every report)."""

    segments: dict[str, Distribution]
    source: str
    add_ns: int = 0
    missing: list[str] = field(default_factory=list)  # segments the source did not measure (drawn as 0)
    # a session's captured timing, replayed as observed instead of drawn (caerus.research.backtest.observed)
    observed: ObservedTiming | None = None

    @classmethod
    def constant(cls, order_ns: int, feed_ns: int = 0, add_ns: int = 0) -> LatencyModel:
        if order_ns < 0 or feed_ns < 0:
            raise LatencyError(f"latency must be >= 0 ns, got order {order_ns}, feed {feed_ns}")
        segs = {s: Distribution.constant(0) for s in SEGMENTS}
        segs["wire"] = Distribution.constant(order_ns)
        segs["book_hop"] = Distribution.constant(feed_ns)
        return cls(segs, f"constant: order {order_ns} ns (wire), feed {feed_ns} ns (book hop)", add_ns)

    @classmethod
    def from_session(cls, session: Path, add_ns: int = 0, wire_ns: int = 0) -> LatencyModel:
        """Every segment from the session folder's ``*.hlog`` files (merged per tag)."""
        session = Path(session)
        if not session.is_dir():
            raise LatencyError(f"--latency-from {session}: no such session folder")
        logs = sorted(session.glob("*.hlog"))
        if not logs:
            raise LatencyError(f"--latency-from {session}: the folder has no .hlog files (not a session?)")
        merged: dict[str, HdrHistogram] = {}
        for path in logs:
            for tag, h in hdr.read_hlog(path).merged_all().items():
                if tag in merged:
                    hdr.add_into(merged[tag], h)
                else:
                    merged[tag] = h
        segs: dict[str, Distribution] = {}
        missing: list[str] = []
        for s in SEGMENTS:
            h = merged.get(s)
            if s == "wire":
                segs[s] = Distribution.constant(wire_ns)
                missing.append("wire (not measured on loopback: "
                               f"{wire_ns} ns each way{' set by --wire' if wire_ns else ''})")
            elif h is None or not h.total_count:
                segs[s] = Distribution.constant(0)
                missing.append(s)
            else:
                segs[s] = Distribution.from_histogram(h)
        return cls(segs, f"measured: session {session.name}", add_ns, missing)

    def describe(self) -> dict[str, object]:
        """JSON-able: source, add, and per segment p50 and sample count."""
        return {"source": self.source, "add_ns": self.add_ns, "missing": list(self.missing),
                "segments": {s: {"p50_ns": d.p50, "n": d.n} for s, d in self.segments.items()}}


class LatencyDraws:
    """The draws of one run, from one seeded Generator: per-book feed latency up front (vectorised), per-order
    segments from batches drawn ahead."""

    __slots__ = ("_add", "_i", "_order", "_rng", "model")

    def __init__(self, model: LatencyModel, seed: int) -> None:
        self.model = model
        self._rng = np.random.default_rng(seed)
        self._add = model.add_ns
        self._order: list[list[int]] = []
        self._i = _BATCH

    def t_seen(self, venue: np.ndarray, t_exchange: np.ndarray, t_recv: np.ndarray, t_publish: np.ndarray,
               *, have_recv: bool = True, symbol: np.ndarray | None = None,
               seq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t_recv, t_publish, t_seen) per book: measured values kept, unmeasured ones drawn (every book's hop
        drawn independently: ``symbol`` and ``seq`` are for replays that look books up)."""
        rng, segs, n = self._rng, self.model.segments, len(venue)
        recv = t_recv.astype(np.int64, copy=True)
        pub = t_publish.astype(np.int64, copy=True)
        for v in Venue:
            mask = venue == int(v)
            k = int(mask.sum())
            if not have_recv:
                recv[mask] = t_exchange[mask] + segs[f"info_age.{v.name.lower()}"].draw(rng, k)
            unmeasured = mask & (pub == 0)
            pub[unmeasured] = recv[unmeasured] + segs[f"feed_internal.{v.name.lower()}"].draw(
                rng, int(unmeasured.sum()))
        seen = pub + segs["book_hop"].draw(rng, n)
        return recv, pub, seen

    def reads(self, venue: np.ndarray, symbol: np.ndarray, seq: np.ndarray, seen: np.ndarray,
              order: np.ndarray) -> np.ndarray:
        """The books the strategy reads, in order (``order``: t_seen order): every book, as drawn (drawn timing
        does not model latest-value reads)."""
        return order

    def order_path(self, key: tuple[int, int, int]) -> tuple[int, int, int, int, int]:
        """The path of an order triggered by book ``key`` (venue, instrument, seq): drawn, whatever the book."""
        return self.order()

    def order(self) -> tuple[int, int, int, int, int]:
        """(decision, queue transit, pickup to sent, wire out, answer back) for one order, ns."""
        if self._i >= _BATCH:
            rng, segs = self._rng, self.model.segments
            self._order = [segs[s].draw(rng, _BATCH).tolist() for s in ORDER_SEGMENTS]
            self._order.append(segs["book_hop"].draw(rng, _BATCH).tolist())
            self._i = 0
        i = self._i
        self._i = i + 1
        dec, qt, ps, wire, hop = (col[i] for col in self._order)
        wire += self._add
        return dec, qt, ps, wire, wire + hop
