"""Goodness of fit of a market model to a real market: the statistics of a top-of-book stream, and the distance
between two streams' statistics, each with its sample sizes.

A stream (:class:`Quotes`) is one market's top-of-book updates on one clock: a real capture's receive stamps, the
emulator's scheduled send times. What is measured (docs/emulator.md, "The emulator against real Binance"):

* update inter-arrival times (ms): the distribution (p10, p50, p90, p99) and the share within 1 ms of the previous;
* bursts: updates per burst, a burst being a run of updates each less than 1 ms after the previous one (the rule of
  caerus.research.calibrate.arrivals, which fits the model's batches to it);
* updates per second: the mean and the distribution of counts in whole 1 s windows;
* spreads, per update, in ticks of the market's grid and in bp of the mid;
* mid returns (log, bp) over 100 ms and 1 s on a regular grid (previous-tick sampling): sd, excess kurtosis, the
  share of zero returns, p99 of |return|;
* the lead-lag cross-correlation curve of two co-recorded markets' mid returns (caerus.research.calibrate's
  grid estimator) against the lag, and its peak.

Distances: a distribution against a distribution, the two-sample Kolmogorov-Smirnov statistic D (scipy; the
largest gap between the two empirical CDFs, 0..1, unit-free) and the Wasserstein-1 distance (scipy; the mean
shift needed to turn one into the other, in the statistic's unit); a scalar against a scalar, the relative error
(model - real) / |real| (shown as the ratio model / real beyond +100 %); a curve against a curve, the largest
absolute difference over the common lags and the difference of the peak lags. Every distance carries both sample
sizes. KS's p-value is not reported: the samples are serially dependent (bursts, volatility clustering), so it
would overstate the evidence; D is read as a distance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate.arrivals import BATCH_GAP_NS, batches

MS = 1_000_000
SECOND = 1_000_000_000
#: the return horizons of the report (ns)
RETURN_STEPS_NS = (100 * MS, SECOND)
#: fewest values a distribution statistic is computed on (fewer: NaN, the n says why)
MIN_N = 5

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Quotes:
    """One market's top-of-book updates: times (ns, sorted), bid and ask, and its price grid's tick."""

    name: str
    t: IntArray
    bid: FloatArray
    ask: FloatArray
    tick: float

    @classmethod
    def of(cls, name: str, t: npt.ArrayLike, bid: npt.ArrayLike, ask: npt.ArrayLike, tick: float) -> Quotes:
        """Checked: equal lengths, sorted times, a positive tick; rows without a two-sided positive book dropped."""
        tt = np.asarray(t, dtype=np.int64)
        b = np.asarray(bid, dtype=np.float64)
        a = np.asarray(ask, dtype=np.float64)
        if not (tt.size == b.size == a.size):
            raise ValueError(f"{name}: times, bids and asks differ in length ({tt.size}, {b.size}, {a.size})")
        if not tick > 0:
            raise ValueError(f"{name}: tick must be > 0, got {tick!r}")
        if tt.size > 1 and bool(np.any(np.diff(tt) < 0)):
            raise ValueError(f"{name}: update times are not sorted")
        ok = np.isfinite(b) & np.isfinite(a) & (b > 0) & (a >= b)
        return cls(name, tt[ok], b[ok], a[ok], float(tick))

    @property
    def seconds(self) -> float:
        return (int(self.t[-1]) - int(self.t[0])) / 1e9 if self.t.size > 1 else 0.0

    @property
    def mid(self) -> FloatArray:
        return 0.5 * (self.bid + self.ask)


def inter_arrivals_ms(q: Quotes) -> FloatArray:
    """Gaps between consecutive updates, ms."""
    return np.diff(q.t).astype(np.float64) / MS


def burst_sizes(q: Quotes) -> IntArray:
    """Updates per burst (a run of updates each < 1 ms after the previous one)."""
    return batches(q.t, BATCH_GAP_NS)[1]


def updates_per_window(q: Quotes, window_ns: int = SECOND) -> IntArray:
    """Updates in each whole ``window_ns`` window from the first update (a last partial window left out)."""
    if q.t.size < 2:
        return np.zeros(0, dtype=np.int64)
    n_win = int((int(q.t[-1]) - int(q.t[0])) // window_ns)
    return np.bincount((q.t - q.t[0]) // window_ns, minlength=n_win)[:n_win].astype(np.int64)


def spread_ticks(q: Quotes) -> FloatArray:
    """Each update's spread in ticks (rounded: the grid's whole ticks)."""
    return np.round((q.ask - q.bid) / q.tick)


def spread_bps(q: Quotes) -> FloatArray:
    """Each update's spread in bp of its mid."""
    return (q.ask - q.bid) / q.mid * 1e4


def returns_bps(q: Quotes, step_ns: int) -> FloatArray:
    """Log mid returns (bp) over consecutive ``step_ns`` intervals of a regular grid from the first update
    (previous-tick sampling)."""
    if q.seconds * 1e9 < 2 * step_ns:
        return np.zeros(0)
    grid = np.arange(int(q.t[0]), int(q.t[-1]) + 1, step_ns, dtype=np.int64)
    return np.diff(est.previous_tick(q.t, np.log(q.mid), grid)) * 1e4


def excess_kurtosis(x: npt.ArrayLike) -> float:
    """Fisher's (normal = 0) kurtosis; NaN for fewer than MIN_N values or no spread."""
    a = np.asarray(x, dtype=np.float64)
    if a.size < MIN_N or not float(a.std()) > 0:
        return math.nan
    return float(sps.kurtosis(a, fisher=True, bias=True))


@dataclass(frozen=True)
class Curve:
    """A lead-lag curve: correlation of A's returns with B's ``lag`` later, for each lag (ms)."""

    lags_ms: FloatArray
    corr: FloatArray
    n_returns: int  # grid returns of A behind each correlation

    @property
    def peak_ms(self) -> float:
        if not bool(np.any(np.isfinite(self.corr))):
            return math.nan
        return float(self.lags_ms[int(np.nanargmax(self.corr))])

    @property
    def peak(self) -> float:
        return float(np.nanmax(self.corr)) if bool(np.any(np.isfinite(self.corr))) else math.nan


def lead_lag(a: Quotes, b: Quotes, lags_ms: Sequence[float], step_ms: float = 100.0) -> Curve:
    """Correlation of ``a``'s mid returns over ``step_ms`` with ``b``'s over the same interval shifted ``lag``
    later (a positive peak lag: ``a`` leads), on one grid (caerus.research.calibrate.estimators.cross_correlation)."""
    lags_ns = np.round(np.asarray(lags_ms, dtype=np.float64) * MS).astype(np.int64)
    step_ns = int(step_ms * MS)
    try:
        corr = est.cross_correlation(a.t, np.log(a.mid), b.t, np.log(b.mid), lags_ns, step_ns)
    except ValueError:  # fewer than two books on a side
        corr = np.full(lags_ns.shape, np.nan)
    n = 0
    if a.t.size and b.t.size:  # the grid cross_correlation uses: inside both ranges whatever the shift
        lo = max(int(a.t[0]), int(b.t[0])) + max(0, -int(lags_ns.min(initial=0)))
        hi = min(int(a.t[-1]), int(b.t[-1])) - max(0, int(lags_ns.max(initial=0)))
        n = max((hi - lo) // step_ns, 0)
    return Curve(lags_ns / MS, corr, int(n))


# -- distances -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Distance:
    """A distance of the model's statistic from the real one: ``kind`` (``ks``, ``w1``, ``rel``, ``sup``,
    ``lag_ms``), its value, and the sample sizes behind each side."""

    kind: str
    value: float
    n_real: int
    n_model: int

    def text(self) -> str:
        if not math.isfinite(self.value):
            return "n/a"
        if self.kind == "rel":  # beyond +100 %: the ratio model / real reads better (x25, not +2400 %)
            return f"x{1.0 + self.value:.3g}" if self.value > 1.0 else f"{self.value * 100:+.0f}%"
        if self.kind == "ks":
            return f"KS {self.value:.2f}"
        if self.kind == "w1":
            return f"W1 {self.value:.3g}"
        if self.kind == "sup":
            return f"sup {self.value:.2f}"
        if self.kind == "lag_ms":
            return f"{self.value:+.0f} ms"
        return f"{self.value:.3g}"


def ks(real: npt.ArrayLike, model: npt.ArrayLike) -> Distance:
    """Two-sample Kolmogorov-Smirnov D (NaN when a side has fewer than MIN_N values)."""
    r, m = np.asarray(real, dtype=np.float64), np.asarray(model, dtype=np.float64)
    if r.size < MIN_N or m.size < MIN_N:
        return Distance("ks", math.nan, int(r.size), int(m.size))
    return Distance("ks", float(sps.ks_2samp(r, m).statistic), int(r.size), int(m.size))


def wasserstein(real: npt.ArrayLike, model: npt.ArrayLike) -> Distance:
    """Wasserstein-1 distance, in the values' unit (NaN when a side has fewer than MIN_N values)."""
    r, m = np.asarray(real, dtype=np.float64), np.asarray(model, dtype=np.float64)
    if r.size < MIN_N or m.size < MIN_N:
        return Distance("w1", math.nan, int(r.size), int(m.size))
    return Distance("w1", float(sps.wasserstein_distance(r, m)), int(r.size), int(m.size))


def rel_err(real: float, model: float, n_real: int, n_model: int) -> Distance:
    """(model - real) / |real| (NaN when real is 0 or either is NaN)."""
    if not (math.isfinite(real) and math.isfinite(model)) or real == 0:
        return Distance("rel", math.nan, n_real, n_model)
    return Distance("rel", (model - real) / abs(real), n_real, n_model)


def curve_sup(real: Curve, model: Curve) -> Distance:
    """Largest |difference| of two curves on their common lags."""
    common, ir, im = np.intersect1d(real.lags_ms, model.lags_ms, return_indices=True)
    d = np.abs(real.corr[ir] - model.corr[im])
    ok = np.isfinite(d)
    return Distance("sup", float(d[ok].max()) if common.size and bool(ok.any()) else math.nan,
                    real.n_returns, model.n_returns)


def peak_shift(real: Curve, model: Curve) -> Distance:
    """The model curve's peak lag minus the real one's, ms."""
    return Distance("lag_ms", model.peak_ms - real.peak_ms, real.n_returns, model.n_returns)


# -- the statistics of one stream, and a row per statistic ---------------------------------------------------------


def _q(x: npt.ArrayLike, p: float) -> float:
    a = np.asarray(x, dtype=np.float64)
    return float(np.percentile(a, p)) if a.size >= MIN_N else math.nan


def _mean(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    return float(a.mean()) if a.size else math.nan


def _sd(x: npt.ArrayLike) -> float:
    a = np.asarray(x, dtype=np.float64)
    return float(a.std(ddof=1)) if a.size >= MIN_N else math.nan


@dataclass(frozen=True)
class Samples:
    """One stream's samples behind the report's statistics (pooled over runs by :func:`pool`)."""

    gaps_ms: FloatArray
    bursts: IntArray
    per_second: IntArray
    spread_ticks: FloatArray
    spread_bps: FloatArray
    returns: dict[int, FloatArray]  # step ns -> returns in bp
    updates: int
    seconds: float


def samples(q: Quotes) -> Samples:
    return Samples(inter_arrivals_ms(q), burst_sizes(q), updates_per_window(q), spread_ticks(q), spread_bps(q),
                   {s: returns_bps(q, s) for s in RETURN_STEPS_NS}, int(q.t.size), q.seconds)


def pool(runs: Sequence[Samples]) -> Samples:
    """Several runs' samples as one (each run's own gaps, bursts, windows and returns: none spans two runs)."""
    if not runs:
        raise ValueError("no runs to pool")

    def cat(get: object) -> np.ndarray:
        return np.concatenate([get(r) for r in runs])  # type: ignore[operator]

    return Samples(cat(lambda r: r.gaps_ms), cat(lambda r: r.bursts), cat(lambda r: r.per_second),
                   cat(lambda r: r.spread_ticks), cat(lambda r: r.spread_bps),
                   {s: np.concatenate([r.returns[s] for r in runs]) for s in RETURN_STEPS_NS},
                   sum(r.updates for r in runs), sum(r.seconds for r in runs))


@dataclass(frozen=True)
class Row:
    """One statistic: its value per stream (``values[name]``) and, per model, its distance from the real one."""

    group: str
    stat: str
    unit: str
    values: dict[str, float]
    distances: dict[str, Distance]


@dataclass(frozen=True)
class _Scalar:
    group: str
    stat: str
    unit: str
    value: Callable[[Samples], float]
    n: Callable[[Samples], int]


@dataclass(frozen=True)
class _Distribution:
    group: str
    stat: str
    unit: str
    values: Callable[[Samples], np.ndarray]


Getter = Callable[[Samples], np.ndarray]


def _gaps(s: Samples) -> np.ndarray:
    return s.gaps_ms


def _bursts(s: Samples) -> np.ndarray:
    return s.bursts


def _per_second(s: Samples) -> np.ndarray:
    return s.per_second


def _ticks(s: Samples) -> np.ndarray:
    return s.spread_ticks


def _bps(s: Samples) -> np.ndarray:
    return s.spread_bps


def _returns_at(step_ns: int) -> Getter:
    def get(s: Samples) -> np.ndarray:
        return s.returns[step_ns]
    return get


def _size(get: Getter) -> Callable[[Samples], int]:
    def n(s: Samples) -> int:
        return int(get(s).size)
    return n


def _of(get: Getter, summary: Callable[[np.ndarray], float]) -> Callable[[Samples], float]:
    def value(s: Samples) -> float:
        return summary(get(s))
    return value


def _pct(p: float) -> Callable[[np.ndarray], float]:
    def q(x: np.ndarray) -> float:
        return _q(x, p)
    return q


def _share_of(v: float) -> Callable[[np.ndarray], float]:
    def share(x: np.ndarray) -> float:
        return float(np.mean(x == v)) if x.size else math.nan
    return share


def _within_1ms(x: np.ndarray) -> float:
    return float(np.mean(x < BATCH_GAP_NS / MS)) if x.size else math.nan


def _rate(s: Samples) -> float:
    """Updates per second: the gaps over the seconds they span (runs pooled: each run's own)."""
    return s.gaps_ms.size / s.seconds if s.seconds else math.nan


def _p99_abs(x: np.ndarray) -> float:
    return _q(np.abs(x), 99)


def _scalar(group: str, stat: str, unit: str, get: Getter, summary: Callable[[np.ndarray], float]) -> _Scalar:
    return _Scalar(group, stat, unit, _of(get, summary), _size(get))


def _scalars() -> list[_Scalar]:
    """The report's scalar statistics, in its order."""
    out = [_Scalar("arrivals", "updates per second, mean", "1/s", _rate, lambda s: s.updates),
           _scalar("arrivals", "share within 1 ms of the previous update", "share", _gaps, _within_1ms)]
    out += [_scalar("arrivals", f"inter-arrival p{p}", "ms", _gaps, _pct(p)) for p in (10, 50, 90, 99)]
    out += [_scalar("bursts", "updates per burst, mean", "updates", _bursts, _mean)]
    out += [_scalar("bursts", f"updates per burst, p{p}", "updates", _bursts, _pct(p)) for p in (90, 99)]
    out += [_scalar("updates per second", f"1 s windows, p{p}", "updates", _per_second, _pct(p))
            for p in (10, 50, 90)]
    out += [_scalar("spreads", "share at one tick", "share", _ticks, _share_of(1.0)),
            _scalar("spreads", "mean, ticks", "ticks", _ticks, _mean),
            _scalar("spreads", "mean, bp", "bp", _bps, _mean)]
    for k, label in ((100 * MS, "100 ms"), (SECOND, "1 s")):
        g, r = f"returns {label}", _returns_at(k)
        out += [_scalar(g, "sd", "bp", r, _sd), _scalar(g, "excess kurtosis", "", r, excess_kurtosis),
                _scalar(g, "share of zero returns", "share", r, _share_of(0.0)),
                _scalar(g, "p99 of |return|", "bp", r, _p99_abs)]
    return out


def _distributions() -> list[_Distribution]:
    """The report's distributions (each after its group's scalars)."""
    out = [_Distribution("arrivals", "inter-arrival distribution", "ms", _gaps),
           _Distribution("bursts", "updates per burst, distribution", "updates", _bursts),
           _Distribution("updates per second", "1 s windows, distribution", "updates", _per_second),
           _Distribution("spreads", "distribution, ticks", "ticks", _ticks)]
    out += [_Distribution(f"returns {label}", "distribution", "bp", _returns_at(k))
            for k, label in ((100 * MS, "100 ms"), (SECOND, "1 s"))]
    return out


#: the report's groups, in order
GROUPS = ("arrivals", "bursts", "updates per second", "spreads", "returns 100 ms", "returns 1 s")


def compare(real: Samples, models: dict[str, Samples], real_name: str = "real") -> list[Row]:
    """A row per statistic: the value for the real stream and each model, and each model's distance (relative
    error for a scalar; for a distribution KS D keyed by the model's name and Wasserstein-1 keyed ``name:w1``)."""
    rows: list[Row] = []
    for sc in _scalars():
        vals = {real_name: sc.value(real)} | {name: sc.value(m) for name, m in models.items()}
        dist = {name: rel_err(vals[real_name], vals[name], sc.n(real), sc.n(m)) for name, m in models.items()}
        rows.append(Row(sc.group, sc.stat, sc.unit, vals, dist))
    for d in _distributions():
        r = d.values(real)
        both: dict[str, Distance] = {}
        for name, m in models.items():
            both[name] = ks(r, d.values(m))
            both[f"{name}:w1"] = wasserstein(r, d.values(m))
        rows.append(Row(d.group, d.stat, d.unit, {}, both))
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(rows, key=lambda row: order.get(row.group, len(order)))  # stable: a group's scalars first
