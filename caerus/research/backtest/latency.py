"""Latency for a backtest: feed latency and order latency modelled apart, segment by segment, seeded.

Feed latency (a book seen later than the venue event), per book:
  ``info_age.<venue>`` (venue event -> t_recv: the venue-to-us delay; only for a source without a measured t_recv,
  i.e. the offline market model. One venue's books arrive in order, as on its one connection: a book's t_recv is
  never before the previous book's, so a long draw delays the books behind it), ``feed_internal.<venue>`` (t_recv
  -> t_publish; only where the source has no t_publish), ``book_hop`` (t_publish -> t_seen: when the strategy
  reads the book; every book).
Order latency (the order reaches the venue later than the book that triggered it), per order:
  ``seen_to_decision`` (t_seen -> t_decision), ``queue_transit`` (t_decision -> t_pickup), ``pickup_to_sent``
  (t_pickup -> t_sent: risk, serialisation, the send), ``wire`` (t_sent -> arrival at the venue, one way). The
  venue's answer comes back after the same wire time and one ``book_hop`` (the engine's EXEC record read by the
  strategy). The *order path* is the sum of the four.

Where the distributions come from (``LatencyModel.source`` names it in every report, ``origin`` per segment):

* :meth:`LatencyModel.default` -- the default of the backtest and the verdict: the fleet's profile shipped with the
  package (``profiles/fleet-2vcpu.json``, built by ``python -m caerus.research.backtest.profile`` from a real
  ``caerus session`` here: the fleet's own segments *measured* on this machine, the venue segments (info age per
  venue, the wire) from *published* figures, /work/shared/FACTS.md; the file records the command, date, machine
  and every sample size).
* :meth:`LatencyModel.from_session` -- a session's measured HdrHistograms (all its ``.hlog`` files merged per
  tag); what the session could not measure (the wire on loopback; a venue's info age when the venue was the
  emulator) comes from the default profile, and says so.
* :meth:`LatencyModel.from_profile` -- any profile file.
* :meth:`LatencyModel.constant` -- a fixed order latency on the wire segment (and optionally a fixed book hop).
* :meth:`LatencyModel.zero` -- nothing anywhere: named ``ZERO (optimistic; not the fleet's)`` in every output,
  never a default.

``add_ns`` (``--latency-add``, the latency sweep) is added to the wire segment, each way. Every draw comes from one
``numpy.random.Generator`` seeded by the run's seed, in a fixed order, so a seed fixes them all.

:func:`latency_points` turns a model into the points every result is priced at (order path 0, its p50, its p99,
and every drawn order latency doubled): what a microsecond is worth.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from hdrh.histogram import HdrHistogram

from caerus.metrics import hdr
from caerus.wire import Venue

if TYPE_CHECKING:
    from caerus.research.backtest.observed_timing import ObservedTiming

FEED_SEGMENTS = ("info_age.binance", "info_age.hyperliquid", "feed_internal.binance", "feed_internal.hyperliquid",
                 "book_hop")
ORDER_SEGMENTS = ("seen_to_decision", "queue_transit", "pickup_to_sent", "wire")
SEGMENTS = FEED_SEGMENTS + ORDER_SEGMENTS
#: what a session on loopback against the emulator cannot measure of the real venues: taken from the profile
VENUE_SEGMENTS = ("info_age.binance", "info_age.hyperliquid", "wire")
PROFILES_DIR = Path(__file__).with_name("profiles")
#: the default latency of the backtest and the verdict (docs/research.md, Backtest, Latency)
DEFAULT_PROFILE = PROFILES_DIR / "fleet-2vcpu.json"
PROFILE_FORMAT = 1
#: how the order path's quantiles are computed: this many seeded draws of the sum of its segments
PATH_DRAWS = 200_000
_BATCH = 4096  # per-order draws are taken from batches drawn ahead (numpy per draw is ~1 us of call overhead)
ZERO_SOURCE = "ZERO (optimistic; not the fleet's)"


class LatencyError(ValueError):
    """A latency setting or source that cannot be used (no such session, no histograms, a bad value)."""


@dataclass(frozen=True)
class Distribution:
    """An empirical distribution of nanosecond values: the histogram's bucket values and cumulative counts."""

    values: np.ndarray  # int64, one per non-empty bucket (its median equivalent value), ascending
    cum: np.ndarray  # float64 cumulative probability, last == 1
    n: int  # samples the histogram held (0: not a sample: a constant or a published shape)

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

    @classmethod
    def shifted_exponential(cls, floor_ns: int, scale_ns: int, points: int = 1000) -> Distribution:
        """``floor + Exp(scale)`` as ``points`` equally likely values (its quantiles at the points' middles): the
        shape given to a latency known only by a floor and a median or mean (the published venue figures)."""
        if floor_ns < 0 or scale_ns < 0 or points < 1:
            raise LatencyError(f"shifted exponential needs floor, scale >= 0 ns and points >= 1, got {floor_ns}, "
                               f"{scale_ns}, {points}")
        q = (np.arange(points) + 0.5) / points
        values = np.round(floor_ns - scale_ns * np.log1p(-q)).astype(np.int64)
        return cls(values, np.arange(1, points + 1) / points, 0)

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if len(self.values) == 1:
            return np.full(size, self.values[0], dtype=np.int64)
        idx = np.searchsorted(self.cum, rng.random(size), side="right")
        return self.values[np.minimum(idx, len(self.values) - 1)]

    def quantile(self, q: float) -> int:
        """The lowest value whose cumulative probability reaches ``q``."""
        return int(self.values[min(int(np.searchsorted(self.cum, q)), len(self.values) - 1)])

    @property
    def p50(self) -> int:
        return self.quantile(0.5)

    @property
    def p99(self) -> int:
        return self.quantile(0.99)

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, np.diff(self.cum, prepend=0.0)))

    @property
    def is_zero(self) -> bool:
        return not bool(self.values.any())

    def scaled(self, k: float) -> Distribution:
        """Every value times ``k`` (the same draws, ``k`` times as long)."""
        return Distribution(np.round(self.values * k).astype(np.int64), self.cum, self.n)


@dataclass
class LatencyModel:
    """Per-segment distributions; ``source`` says where they came from (printed in every report), ``origin`` per
    segment where it differs (measured here / published / not measured)."""

    segments: dict[str, Distribution]
    source: str
    add_ns: int = 0
    missing: list[str] = field(default_factory=list)  # segments the source did not measure (drawn as 0)
    # a session's captured timing, replayed as observed instead of drawn (caerus.research.backtest.observed)
    observed: ObservedTiming | None = None
    origin: dict[str, str] = field(default_factory=dict)  # segment -> where its distribution comes from

    @classmethod
    def zero(cls) -> LatencyModel:
        """No latency anywhere: orders meet the book at the instant it is read, books reach the strategy the instant
        the venue made them. Optimistic, never the fleet's; named so in every output."""
        segs = {s: Distribution.constant(0) for s in SEGMENTS}
        return cls(segs, f"{ZERO_SOURCE}: no order latency, no market data delay")

    @classmethod
    def constant(cls, order_ns: int, feed_ns: int = 0, add_ns: int = 0) -> LatencyModel:
        if order_ns < 0 or feed_ns < 0:
            raise LatencyError(f"latency must be >= 0 ns, got order {order_ns}, feed {feed_ns}")
        if order_ns == 0 and feed_ns == 0 and add_ns == 0:
            return cls.zero()
        segs = {s: Distribution.constant(0) for s in SEGMENTS}
        segs["wire"] = Distribution.constant(order_ns)
        segs["book_hop"] = Distribution.constant(feed_ns)
        order = (f"order latency {ZERO_SOURCE}" if order_ns == 0 and add_ns == 0
                 else f"order {order_ns} ns (wire)")
        return cls(segs, f"constant: {order}, feed {feed_ns} ns (book hop), no venue delay", add_ns)

    @classmethod
    def default(cls, add_ns: int = 0, wire_ns: int | None = None) -> LatencyModel:
        """The documented default: the fleet's profile (:data:`DEFAULT_PROFILE`)."""
        return cls.from_profile(DEFAULT_PROFILE, add_ns, wire_ns)

    @classmethod
    def from_profile(cls, path: Path = DEFAULT_PROFILE, add_ns: int = 0, wire_ns: int | None = None) -> LatencyModel:
        """Every segment from a profile file (``wire_ns``: a one-way wire time instead of the profile's)."""
        prof = load_profile(Path(path))
        segs = dict(prof.segments)
        origin = dict(prof.origin)
        if wire_ns is not None:
            segs["wire"] = _wire(wire_ns)
            origin["wire"] = f"set: {wire_ns} ns one way"
        return cls(segs, f"profile {prof.name}: {prof.summary}", add_ns, list(prof.missing), origin=origin)

    @classmethod
    def from_session(cls, session: Path, add_ns: int = 0, wire_ns: int | None = None,
                     profile: Path = DEFAULT_PROFILE) -> LatencyModel:
        """Every segment the session measured, from its ``*.hlog`` files (merged per tag). What a session cannot
        measure of the real venues comes from ``profile`` (published figures), named per segment: the wire
        (loopback: ``wire_ns`` when given, else the profile's), and each venue's info age when the session read
        the emulator (its info age is the emulator's, not the venue's). Other segments the session did not measure
        are 0, listed in ``missing``."""
        session = Path(session)
        if not session.is_dir():
            raise LatencyError(f"--latency-from {session}: no such session folder")
        logs = sorted(session.glob("*.hlog"))
        if not logs:
            raise LatencyError(f"--latency-from {session}: the folder has no .hlog files (not a session?)")
        merged = merge_hlogs(logs)
        live = _session_read_live_venues(session)
        prof = load_profile(Path(profile))
        segs: dict[str, Distribution] = {}
        origin: dict[str, str] = {}
        missing: list[str] = []
        for s in SEGMENTS:
            h = merged.get(s)
            if s == "wire":
                if wire_ns is not None:
                    segs[s], origin[s] = _wire(wire_ns), f"set: {wire_ns} ns one way"
                else:
                    segs[s], origin[s] = prof.segments[s], f"profile {prof.name}: {prof.origin.get(s, '')}"
            elif s in VENUE_SEGMENTS and not live:
                segs[s] = prof.segments[s]
                origin[s] = (f"profile {prof.name}: {prof.origin.get(s, '')} (the session read the emulator: its "
                             "info age is not a venue's)")
            elif h is None or not h.total_count:
                segs[s] = Distribution.constant(0)
                missing.append(s)
                origin[s] = "not measured: 0"
            else:
                segs[s] = Distribution.from_histogram(h)
                origin[s] = f"measured: session {session.name}, n={h.total_count}"
        return cls(segs, f"measured: session {session.name} (venue segments: profile {prof.name})", add_ns, missing,
                   origin=origin)

    @property
    def is_zero(self) -> bool:
        """No latency at all (the optimistic ZERO)."""
        return self.observed is None and self.add_ns == 0 and all(d.is_zero for d in self.segments.values())

    @cached_property
    def order_path(self) -> np.ndarray:
        """:data:`PATH_DRAWS` seeded draws (seed 0) of the order path (decision + queue + pickup to sent + wire +
        add), ns, sorted; drawn once per model (~50 ms: a model whose segments change is a new model, ``replace``)."""
        rng = np.random.default_rng(0)
        total = np.full(PATH_DRAWS, self.add_ns, dtype=np.int64)
        for s in ORDER_SEGMENTS:
            total += self.segments[s].draw(rng, PATH_DRAWS)
        total.sort()
        return total

    def order_path_quantiles(self, qs: tuple[float, ...] = (0.5, 0.99)) -> dict[float, int]:
        """Quantiles of the order path (the lowest drawn value whose share reaches q; :data:`PATH_DRAWS` seeded
        draws, deterministic)."""
        path = self.order_path
        return {q: int(path[min(max(math.ceil(q * len(path)) - 1, 0), len(path) - 1)]) for q in qs}

    def headline(self) -> str:
        """One line naming the latency (every output prints it)."""
        if self.is_zero:
            return f"latency: {ZERO_SOURCE}"
        if self.observed is not None:
            return f"latency: {self.source}"
        q = self.order_path_quantiles()
        return (f"latency: {self.source}; order path p50 {_us(q[0.5])} p99 {_us(q[0.99])}; info age binance "
                f"p50 {_us(self.segments['info_age.binance'].p50)}, hyperliquid "
                f"p50 {_us(self.segments['info_age.hyperliquid'].p50)} (offline sources only)")

    def describe(self) -> dict[str, object]:
        """JSON-able: source, add, the order path's p50/p99, and per segment p50, p99, sample count and origin."""
        out: dict[str, object] = {
            "source": self.source, "headline": self.headline(), "zero": self.is_zero, "add_ns": self.add_ns,
            "missing": list(self.missing),
            "segments": {s: {"p50_ns": d.p50, "p99_ns": d.p99, "n": d.n, "origin": self.origin.get(s, self.source)}
                         for s, d in self.segments.items()}}
        if self.observed is None:
            q = self.order_path_quantiles()
            out["order_path"] = {"p50_ns": q[0.5], "p99_ns": q[0.99], "draws": PATH_DRAWS}
        return out


def _us(ns: int) -> str:
    return f"{ns / 1e3:,.1f} us" if ns < 10_000_000 else f"{ns / 1e6:,.1f} ms"


def _wire(ns: int) -> Distribution:
    if ns < 0:
        raise LatencyError(f"wire time must be >= 0 ns, got {ns}")
    return Distribution.constant(ns)


def merge_hlogs(logs: list[Path]) -> dict[str, HdrHistogram]:
    """Every tag of the ``.hlog`` files, all intervals merged."""
    merged: dict[str, HdrHistogram] = {}
    for path in logs:
        for tag, h in hdr.read_hlog(path).merged_all().items():
            if tag in merged:
                hdr.add_into(merged[tag], h)
            else:
                merged[tag] = h
    return merged


def _session_read_live_venues(session: Path) -> bool:
    """Whether the session's feeds read the real venues (``caerus session --live``), from its config.toml; a
    session without one read the emulator (every local session does unless --live)."""
    import tomllib

    cfg = session / "config.toml"
    if not cfg.is_file():
        return False
    try:
        doc = tomllib.loads(cfg.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    sess = doc.get("session", {})
    return bool(sess.get("live", False)) if isinstance(sess, dict) else False


@dataclass(frozen=True)
class Profile:
    """A latency profile file, decoded: a distribution per segment, where each came from, and a summary line."""

    name: str
    segments: dict[str, Distribution]
    origin: dict[str, str]
    missing: tuple[str, ...]
    summary: str
    doc: dict[str, object]


@lru_cache(maxsize=8)
def _load_profile_cached(path: str, mtime_ns: int) -> Profile:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LatencyError(f"latency profile {path}: cannot be read ({exc})") from None
    return profile_from_doc(doc, path)


def profile_from_doc(doc: object, label: str) -> Profile:
    """A profile document (``label``: where it came from, for errors) decoded."""
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT or not isinstance(doc.get("segments"), dict):
        raise LatencyError(f"latency profile {label}: not a format {PROFILE_FORMAT} profile (needs 'format' and "
                           "'segments')")
    segs: dict[str, Distribution] = {}
    origin: dict[str, str] = {}
    missing: list[str] = []
    for s in SEGMENTS:
        spec = doc["segments"].get(s)
        if spec is None:
            segs[s], origin[s] = Distribution.constant(0), "not in the profile: 0"
            missing.append(s)
            continue
        try:
            segs[s] = _segment(spec)
        except (KeyError, TypeError, ValueError) as exc:
            raise LatencyError(f"latency profile {label}: segment {s} is unusable ({type(exc).__name__}: {exc})") \
                from None
        origin[s] = str(spec.get("origin", "")) + (f": {spec['basis']}" if spec.get("basis") else "")
    produced = doc.get("produced", {})
    built = (f" (built {produced.get('date_utc', '?')} from session {produced.get('session', '?')})"
             if isinstance(produced, dict) else "")
    return Profile(str(doc.get("name", Path(label).stem)), segs, origin, tuple(missing),
                   f"{doc.get('description', '')}{built}", doc)


def load_profile(path: Path = DEFAULT_PROFILE) -> Profile:
    """A profile file decoded (cached per path and modification time)."""
    path = Path(path)
    if not path.is_file():
        raise LatencyError(f"latency profile {path}: no such file")
    return _load_profile_cached(str(path.resolve()), path.stat().st_mtime_ns)


def _segment(spec: dict[str, object]) -> Distribution:
    """One profile segment: a measured histogram (``hdr``: the standard compressed encoding), a published shape
    (``shifted_exponential``: ``floor_ns``, ``scale_ns``) or a constant (``constant_ns``)."""
    if "hdr" in spec:
        return Distribution.from_histogram(HdrHistogram.decode(str(spec["hdr"]).encode("ascii")))
    shape = spec.get("shape")
    if shape == "shifted_exponential":
        return Distribution.shifted_exponential(int(spec["floor_ns"]), int(spec["scale_ns"]))  # type: ignore[call-overload]
    if "constant_ns" in spec:
        return Distribution.constant(int(spec["constant_ns"]))  # type: ignore[call-overload]
    raise ValueError(f"no 'hdr', known 'shape' or 'constant_ns' (shape {shape!r})")


@dataclass(frozen=True)
class LatencyPoint:
    """One point of the latency curve every result is priced at: ``model`` is the base model with its order path
    changed (the feed side, the market data's delay, is the base model's: it belongs to the data, not the fleet)."""

    name: str  # "0", "p50", "p99", "2x"
    label: str  # what the point is, for people
    model: LatencyModel
    order_path_ns: int | None  # the constant order path of the point; None: drawn (2x)


def latency_points(model: LatencyModel) -> list[LatencyPoint]:
    """The points a result is priced at: ``0`` (no order latency: optimistic), ``p50`` and ``p99`` (every order
    takes that quantile of the base model's order path, decision + queue + pickup to sent + wire + add), and
    ``2x`` (every drawn order latency doubled, add too). Constant paths are split over the four segments in
    proportion to their means (so the decision time, the send and the answer's wire keep their share; all on the
    wire when every mean is 0). Refused for a replay as observed (its paths are the session's own)."""
    if model.observed is not None:
        raise LatencyError("latency points need a drawn model, not a replay as observed")
    q = model.order_path_quantiles((0.5, 0.99))
    points = [LatencyPoint("0", "order path 0 (optimistic; not the fleet's)", _with_path(model, 0, "0"), 0),
              LatencyPoint("p50", f"order path p50 {_us(q[0.5])}, every order", _with_path(model, q[0.5], "p50"),
                           q[0.5]),
              LatencyPoint("p99", f"order path p99 {_us(q[0.99])}, every order", _with_path(model, q[0.99], "p99"),
                           q[0.99])]
    segs = dict(model.segments)
    for s in ORDER_SEGMENTS:
        segs[s] = segs[s].scaled(2.0)
    points.append(LatencyPoint("2x", "every drawn order latency doubled",
                               replace(model, segments=segs, add_ns=2 * model.add_ns,
                                       source=f"{model.source}; point 2x: every order latency doubled"), None))
    return points


def _with_path(model: LatencyModel, total_ns: int, name: str) -> LatencyModel:
    """``model`` with a constant order path of ``total_ns`` (split by the segments' means)."""
    means = np.array([model.segments[s].mean for s in ORDER_SEGMENTS])
    share = means / means.sum() if means.sum() > 0 else np.array([0.0, 0.0, 0.0, 1.0])
    parts = np.floor(share * total_ns).astype(np.int64)
    parts[-1] += total_ns - int(parts.sum())  # the rounding on the wire: the parts sum to the total exactly
    segs = dict(model.segments)
    for s, v in zip(ORDER_SEGMENTS, parts.tolist(), strict=True):
        segs[s] = Distribution.constant(v)
    return replace(model, segments=segs, add_ns=0, source=f"{model.source}; point {name}: order path {total_ns} ns")


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
        drawn independently: ``symbol`` and ``seq`` are for replays that look books up). A drawn t_recv keeps
        the venue's books in order (first in, first out: one connection)."""
        rng, segs, n = self._rng, self.model.segments, len(venue)
        recv = t_recv.astype(np.int64, copy=True)
        pub = t_publish.astype(np.int64, copy=True)
        for v in Venue:
            mask = venue == int(v)
            k = int(mask.sum())
            if not have_recv:
                age = segs[f"info_age.{v.name.lower()}"]
                rows = np.flatnonzero(mask)
                rows = rows[np.argsort(t_exchange[rows], kind="stable")]
                arrive = t_exchange[rows] + age.draw(rng, k)
                recv[rows] = np.maximum.accumulate(arrive)  # in order: a book waits for the one before it
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
