"""Estimators for calibrating the market model: pure numpy functions on arrays of times (int ns) and log prices.

Nothing here knows about venues, DataFrames or the emulator's parameter names (fit.py maps them). Conventions:
times are sorted int64 nanoseconds; prices are log prices; a *lag* ``theta > 0`` means series B follows series A
by ``theta`` (B's price at ``t + theta`` reflects A's at ``t``).

* ``previous_tick`` / ``cross_correlation``: the simple lead-lag estimator, correlation of returns on a regular grid
  (previous-tick sampling) with B's grid shifted by each lag.
* ``hayashi_yoshida``: the Hayashi & Yoshida (2005) covariance of asynchronous ticks with B's times shifted by each
  lag; the lead-lag estimate is the lag maximising it (Hoffmann, Rosenbaum & Yoshida 2013). Computed as a sum over
  A's intervals of B's price change across the run of B intervals overlapping it: two ``searchsorted`` per lag,
  O((n + m) log m), never the O(n * m) double loop.
* ``roll_noise``: microstructure noise from the negative first-order autocorrelation of tick returns (Roll 1984).
* ``realised_vol``: diffusion volatility from realised variance with the jumps' intervals left out and the noise's
  share taken off.
* ``detect_jumps`` / ``uniform_bounds``: large persistent tick moves, and the range of a uniform size law.
* ``match_moves``: per-move matching (the first update that crosses a share of the move), each lag
  interval-censored by the two venues' update times (catch-up and fading read these; the lag law is lag_law's).
* ``block_cadence``, ``catch_up``: the follower's update cadence and how far it follows a leader's move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

NS_PER_S = 1_000_000_000
SECONDS_PER_YEAR = 365.0 * 86400.0


def _sorted_times(t: npt.ArrayLike, name: str) -> IntArray:
    arr = np.asarray(t, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size > 1 and bool(np.any(np.diff(arr) < 0)):
        raise ValueError(f"{name} must be sorted in time")
    return arr


def _series(t: npt.ArrayLike, x: npt.ArrayLike, name: str, min_len: int = 2) -> tuple[IntArray, FloatArray]:
    times = _sorted_times(t, f"{name} times")
    values = np.asarray(x, dtype=np.float64)
    if values.shape != times.shape:
        raise ValueError(f"{name}: {times.size} times but {values.size} values")
    if times.size < min_len:
        raise ValueError(f"{name} needs at least {min_len} observations, got {times.size}")
    if not bool(np.all(np.isfinite(values))):
        raise ValueError(f"{name} has non-finite values")
    return times, values


def previous_tick(t: npt.ArrayLike, x: npt.ArrayLike, at: npt.ArrayLike) -> FloatArray:
    """The value of the series (``t``, ``x``) at each time of ``at``: its last observation at or before it (NaN
    before the first observation)."""
    times, values = _series(t, x, "series", min_len=1)
    idx = np.searchsorted(times, np.asarray(at, dtype=np.int64), side="right") - 1
    out = values[np.maximum(idx, 0)]
    return np.where(idx >= 0, out, np.nan)


def cross_correlation(t_a: npt.ArrayLike, x_a: npt.ArrayLike, t_b: npt.ArrayLike, x_b: npt.ArrayLike,
                      lags_ns: npt.ArrayLike, step_ns: int) -> FloatArray:
    """Correlation of A's returns over ``(g, g + step]`` with B's over ``(g + lag, g + lag + step]`` on a regular
    grid ``g`` (previous-tick sampling), for each lag. Returns are not demeaned (high-frequency convention: their
    mean is negligible against their spread). NaN for a lag whose grid would leave B's observed range."""
    ta, xa = _series(t_a, x_a, "A")
    tb, xb = _series(t_b, x_b, "B")
    if step_ns <= 0:
        raise ValueError(f"grid step must be > 0 ns, got {step_ns}")
    lags = np.asarray(lags_ns, dtype=np.int64)
    lo, hi = max(ta[0], tb[0]), min(ta[-1], tb[-1])
    # one grid for every lag, inside both ranges whatever the shift, so each lag sees the same A returns
    lo_g, hi_g = lo + max(0, -int(lags.min(initial=0))), hi - max(0, int(lags.max(initial=0)))
    if hi_g - lo_g < 2 * step_ns:
        return np.full(lags.shape, np.nan)
    grid = np.arange(lo_g, hi_g + 1, step_ns, dtype=np.int64)
    ra = np.diff(previous_tick(ta, xa, grid))
    out = np.empty(lags.shape, dtype=np.float64)
    for k, lag in enumerate(lags):
        rb = np.diff(previous_tick(tb, xb, grid + lag))
        denom = float(np.sqrt(np.dot(ra, ra) * np.dot(rb, rb)))
        out[k] = float(np.dot(ra, rb)) / denom if denom > 0 else np.nan
    return out


def hayashi_yoshida(t_a: npt.ArrayLike, x_a: npt.ArrayLike, t_b: npt.ArrayLike, x_b: npt.ArrayLike,
                    lags_ns: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Hayashi-Yoshida covariance of A with B shifted back by each lag, and the matching correlation.

    For lag ``theta``: sum over A's intervals ``(a_{i-1}, a_i]`` and B's shifted intervals ``(b_{j-1} - theta,
    b_j - theta]`` that overlap of ``dA_i * dB_j``. One series' intervals overlapping an interval of the other are
    a contiguous run ``j_lo..j_hi``, so their summed return is ``x[j_hi] - x[j_lo - 1]``: two searchsorted calls per
    lag. The correlation divides by ``sqrt(sum dA^2 * sum dB^2)``."""
    ta, xa = _series(t_a, x_a, "A")
    tb, xb = _series(t_b, x_b, "B")
    lags = np.asarray(lags_ns, dtype=np.int64)
    norm = float(np.sqrt(np.dot(np.diff(xa), np.diff(xa)) * np.dot(np.diff(xb), np.diff(xb))))
    # The sum is symmetric: walk the intervals of the sparser series and look the denser one up (shifting B back
    # by theta is shifting A forward by theta), so each lag costs O(min(n, m) log max(n, m)).
    if tb.size <= ta.size:
        cov = np.array([_hy_sum(tb - lag, xb, ta, xa) for lag in lags.tolist()], dtype=np.float64)
    else:
        cov = np.array([_hy_sum(ta + lag, xa, tb, xb) for lag in lags.tolist()], dtype=np.float64)
    corr = cov / norm if norm > 0 else np.full(lags.shape, np.nan)
    return cov, corr


def _hy_sum(t_outer: IntArray, x_outer: FloatArray, t_inner: IntArray, x_inner: FloatArray) -> float:
    """Sum over the outer series' intervals ``(s, e]`` of its return times the inner series' return over the run
    of inner intervals overlapping it. Inner interval j = ``(t_inner[j-1], t_inner[j]]``, j = 1..m-1, overlaps
    ``(s, e]`` iff ``t_inner[j] > s`` and ``t_inner[j-1] < e``."""
    m = t_inner.size
    j_lo = np.searchsorted(t_inner, t_outer[:-1], side="right")
    j_hi = np.searchsorted(t_inner, t_outer[1:], side="left")
    np.maximum(j_lo, 1, out=j_lo)
    np.minimum(j_hi, m - 1, out=j_hi)
    d_inner = x_inner[j_hi] - x_inner[j_lo - 1]
    d_inner[j_hi < j_lo] = 0.0
    return float(np.dot(np.diff(x_outer), d_inner))


def peak_lag(lags_ns: npt.ArrayLike, values: npt.ArrayLike) -> float:
    """The lag (ns, float) where ``values`` peaks, refined between grid points by the parabola through the maximum
    and its two neighbours (the grid point itself at an edge). ValueError if every value is NaN."""
    lags = np.asarray(lags_ns, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    if lags.shape != vals.shape or lags.size == 0:
        raise ValueError("lags and values must be non-empty and the same length")
    if bool(np.all(np.isnan(vals))):
        raise ValueError("no finite value to find a peak in")
    i = int(np.nanargmax(vals))
    if 0 < i < vals.size - 1 and np.isfinite(vals[i - 1]) and np.isfinite(vals[i + 1]):
        y0, y1, y2 = vals[i - 1], vals[i], vals[i + 1]
        curvature = y0 - 2.0 * y1 + y2
        if curvature < 0:
            offset = 0.5 * (y0 - y2) / curvature  # in grid steps, within (-0.5, 0.5) at a true maximum
            step = 0.5 * (lags[i + 1] - lags[i - 1])
            return float(lags[i] + offset * step)
    return float(lags[i])


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error (NaN when none could be computed) and the sample size behind it.

    ``lo95``/``hi95``: its 95 % interval when the estimator gives one (a bootstrap's percentiles, for a law whose
    draws are skewed); NaN: the normal approximation ``value +- 1.96 se`` (:meth:`interval`)."""

    value: float
    se: float
    n: int
    lo95: float = float("nan")
    hi95: float = float("nan")

    def interval(self) -> tuple[float, float]:
        """The 95 % interval: the estimator's own, else ``value +- 1.96 se`` (NaN when there is no SE)."""
        if math.isfinite(self.lo95) and math.isfinite(self.hi95):
            return self.lo95, self.hi95
        return self.value - 1.96 * self.se, self.value + 1.96 * self.se


@dataclass(frozen=True)
class RollNoise:
    """Roll (1984): with noise ``e`` that reverts, tick returns ``r_i = m_i + e_i - e_{i-1}`` have first-order
    autocovariance ``-var(e)``. ``share`` is the part of the tick-return variance the noise makes, ``2 var(e) /
    var(r)`` = ``-2 rho_1`` (0 when rho_1 >= 0), with its standard error from Bartlett's formula for an MA(1)."""

    share: Estimate
    noise_sd: float  # sqrt(var(e)) in the returns' units
    rho1: float


def roll_noise(returns: npt.ArrayLike) -> RollNoise:
    r = np.asarray(returns, dtype=np.float64)
    if r.size < 3:
        raise ValueError(f"noise estimate needs at least 3 returns, got {r.size}")
    r = r - r.mean()
    gamma0 = float(np.dot(r, r)) / r.size
    gamma1 = float(np.dot(r[1:], r[:-1])) / r.size
    if gamma0 <= 0:
        return RollNoise(Estimate(0.0, float("nan"), r.size), 0.0, 0.0)
    rho1 = gamma1 / gamma0
    share = min(1.0, max(0.0, -2.0 * rho1))
    se = 2.0 * float(np.sqrt(max(0.0, 1.0 - 3.0 * rho1**2 + 4.0 * rho1**4) / r.size))
    return RollNoise(Estimate(share, se, r.size), float(np.sqrt(max(0.0, -gamma1))), rho1)


def realised_vol(t: npt.ArrayLike, x: npt.ArrayLike, step_ns: int, exclude: npt.ArrayLike = (),
                 noise_var: float = 0.0, truncate_sd: float = 5.0) -> Estimate:
    """Annualised diffusion volatility of log price ``x``: mean squared return on a regular ``step_ns`` grid
    (previous-tick) over the intervals holding no time of ``exclude`` (the detected jumps) and no return beyond
    ``truncate_sd`` jump-robust (bipower) standard deviations (Mancini's threshold: a jump the detector merged or
    missed), less ``2 * noise_var`` per return (each grid return carries two draws of noise that reverts; Roll's
    estimate gives it). A coarse grid keeps that correction small. SE: ``sqrt(2 / n)`` relative on the observed
    mean square (squared normals), carried to the square root."""
    times, values = _series(t, x, "price")
    if step_ns <= 0:
        raise ValueError(f"grid step must be > 0 ns, got {step_ns}")
    grid = np.arange(times[0], times[-1] + 1, step_ns, dtype=np.int64)
    r = np.diff(previous_tick(times, values, grid))
    keep = np.ones(r.size, dtype=bool)
    ex = np.asarray(exclude, dtype=np.int64)
    if ex.size:
        k = np.searchsorted(grid, ex, side="left") - 1  # grid interval (g_k, g_{k+1}] holding each excluded time
        keep[k[(k >= 0) & (k < r.size)]] = False
    r = r[keep]
    if r.size > 2 and truncate_sd > 0:
        scale = float(np.sqrt(np.pi / 2.0 * np.mean(np.abs(r[1:]) * np.abs(r[:-1]))))
        r = r[np.abs(r) <= truncate_sd * scale]
    if r.size < 10:
        raise ValueError(f"volatility: {r.size} grid returns of {step_ns} ns without a jump, need at least 10")
    mean_sq = float(np.mean(r**2))
    per_year = NS_PER_S / step_ns * SECONDS_PER_YEAR
    sigma = float(np.sqrt(max(mean_sq - 2.0 * noise_var, 0.0) * per_year))
    # the spread of the observed squares (noise included) drives the error: sqrt(2 / n) * mean_sq on the variance
    se_var = mean_sq * float(np.sqrt(2.0 / r.size)) * per_year
    return Estimate(sigma, se_var / (2.0 * sigma) if sigma > 0 else float("nan"), int(r.size))


def robust_sd(values: npt.ArrayLike) -> float:
    """Standard deviation from the median absolute deviation (consistent for a normal law; ignores outliers)."""
    v = np.asarray(values, dtype=np.float64)
    return float(1.4826 * np.median(np.abs(v - np.median(v)))) if v.size else float("nan")


@dataclass(frozen=True)
class Jumps:
    """Large tick moves of a price: where (index of the tick after the move), when, and signed size (log)."""

    index: IntArray
    t: IntArray
    size: FloatArray


def detect_jumps(t: npt.ArrayLike, x: npt.ArrayLike, threshold: float, hold_ticks: int = 5,
                 hold_share: float = 0.5, dead_ns: int = 0) -> Jumps:
    """Ticks whose log move ``x[i] - x[i-1]`` exceeds ``threshold`` in size and *persists*: the mean level over
    the ``hold_ticks`` ticks from ``i`` differs from the mean over the ``hold_ticks`` ticks before ``i`` by at least
    ``hold_share`` of the move, so a spike that reverts within a few ticks (both its up and its down tick) is not a
    jump. A move within ``dead_ns`` after an accepted jump is dropped (one event, not two)."""
    times, values = _series(t, x, "price")
    if threshold <= 0:
        raise ValueError(f"jump threshold must be > 0, got {threshold}")
    r = np.diff(values)
    cand = np.flatnonzero(np.abs(r) > threshold) + 1  # tick index after the move
    cand = cand[(cand + hold_ticks <= values.size) & (cand >= hold_ticks)]
    if cand.size:
        # mean levels over the windows after and before the move, from a cumulative sum
        csum = np.concatenate(([0.0], np.cumsum(values)))
        after = (csum[cand + hold_ticks] - csum[cand]) / hold_ticks
        before = (csum[cand] - csum[cand - hold_ticks]) / hold_ticks
        moved = values[cand] - values[cand - 1]
        cand = cand[(after - before) / moved >= hold_share]
    kept: list[int] = []
    last = 0
    for i in cand.tolist():  # jumps are rare: a Python loop over them is cheap
        if not kept or int(times[i]) - last >= dead_ns:
            kept.append(i)
            last = int(times[i])
    idx = np.asarray(kept, dtype=np.int64)
    return Jumps(idx, times[idx], values[idx] - values[idx - 1] if idx.size else np.empty(0))


def isolated(moves: Jumps, gap_ns: int) -> Jumps:
    """The moves with no other move in the ``gap_ns`` before them: a follower answering two close moves at once
    would make the second look early."""
    if moves.index.size == 0:
        return moves
    prev_gap = np.diff(moves.t, prepend=np.iinfo(np.int64).min // 2)
    keep = prev_gap >= gap_ns
    return Jumps(moves.index[keep], moves.t[keep], moves.size[keep])


def uniform_bounds(samples: npt.ArrayLike) -> tuple[Estimate, Estimate]:
    """Minimum-variance unbiased bounds of a uniform law from a sample: ``min - range/(n-1)`` and ``max +
    range/(n-1)``, each with standard error ``range / (n - 1)`` (approximately: order-statistic spread)."""
    s = np.asarray(samples, dtype=np.float64)
    if s.size < 2:
        raise ValueError(f"a uniform range needs at least 2 samples, got {s.size}")
    lo, hi = float(s.min()), float(s.max())
    pad = (hi - lo) / (s.size - 1)
    return Estimate(lo - pad, pad, s.size), Estimate(hi + pad, pad, s.size)


@dataclass(frozen=True)
class MovesMatched:
    """Per-move lags, interval-censored: for move k the lag lies in ``(lo[k], hi[k]]`` ns. ``matched`` says which
    moves the follower answered within the search window (the others have NaN bounds)."""

    lo: FloatArray
    hi: FloatArray
    matched: npt.NDArray[np.bool_]


def match_moves(t_a: npt.ArrayLike, x_a: npt.ArrayLike, moves: Jumps, t_b: npt.ArrayLike, x_b: npt.ArrayLike,
                share: float = 0.5, max_delay_ns: int = 2 * NS_PER_S, in_one_step: bool = False) -> MovesMatched:
    """For each move of A (``moves``, found by ``detect_jumps`` on A), the delay from A's tick showing it until
    B has moved ``share`` of it in the same direction, relative to B's level before A moved.

    The lag is from book to book (A's update at ``t_a[i]`` to B's first update showing it), so when B first shows
    the move at update ``b_k`` and did not at ``b_{k-1}``, the lag lies in ``(t_b[k-1] - t_a[i], t_b[k] -
    t_a[i]]``: censored by B's update clock only, both ends the venues' own times, no grid resolution.

    ``in_one_step``: the update that crosses must itself have moved ``share`` of the move (the model's follower
    applies a move's arrival in one block), so B drifting there over several updates (its own moves spread over
    blocks, small late parts of earlier moves) is not taken for the answer."""
    ta, _ = _series(t_a, x_a, "A")
    tb, xb = _series(t_b, x_b, "B")
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    n = moves.index.size
    lo = np.full(n, np.nan)
    hi = np.full(n, np.nan)
    matched = np.zeros(n, dtype=bool)
    for k in range(n):  # one short scan per move; moves are few (tens to thousands a day)
        i = int(moves.index[k])
        t_move, t_before = int(ta[i]), int(ta[i - 1])
        base_i = int(np.searchsorted(tb, t_before, side="right")) - 1  # B's last update when A last sat still
        if base_i < 0:
            continue
        end = int(np.searchsorted(tb, t_move + max_delay_ns, side="right"))
        target = share * float(moves.size[k])
        path = (xb[base_i + 1:end] - xb[base_i]) * np.sign(target)
        ok = path >= abs(target)
        if in_one_step:
            ok &= np.diff(path, prepend=0.0) >= abs(target)
        hits = np.flatnonzero(ok)
        if hits.size == 0:
            continue
        j = base_i + 1 + int(hits[0])
        lo[k] = float(tb[j - 1] - t_move)
        hi[k] = float(tb[j] - t_move)
        matched[k] = True
    return MovesMatched(lo, hi, matched)


@dataclass(frozen=True)
class Cadence:
    """The follower's update clock: median gap between distinct update times, and the spread of single gaps."""

    median_gap_ns: Estimate
    jitter_ns: float  # half-width of a uniform law with the single gaps' standard deviation (sqrt(3) * sd)


def block_cadence(t: npt.ArrayLike) -> Cadence:
    """Median gap between distinct update times (a venue stamping every coin of a block with one time sends
    repeats), over single-block gaps: a gap longer than 1.5 times the median of all gaps spans a block that sent
    nothing (its top did not change) and would pull the median up, so it is left out of both figures."""
    times = np.unique(_sorted_times(t, "update times"))
    if times.size < 3:
        raise ValueError(f"block cadence needs at least 3 distinct update times, got {times.size}")
    gaps = np.diff(times).astype(np.float64)
    single = gaps[gaps <= 1.5 * float(np.median(gaps))]
    med = float(np.median(single))
    # SE of a median: 1.2533 * sd / sqrt(n) for a normal law, a fair approximation for a uniform jitter
    sd = float(np.std(single, ddof=1)) if single.size > 1 else 0.0
    return Cadence(Estimate(med, 1.2533 * sd / np.sqrt(single.size), int(single.size)), float(np.sqrt(3.0) * sd))


def catch_up(moves: Jumps, t_b: npt.ArrayLike, x_b: npt.ArrayLike, window_ns: int) -> Estimate:
    """Slope (through the origin) of B's move over ``(t_move, t_move + window]`` on A's move, across ``moves``:
    1 when B catches up fully within the window, less when it follows part of the way. B's move is measured from
    its level at A's move time, so a window shorter than B's lag sees nothing."""
    tb, xb = _series(t_b, x_b, "B")
    if moves.index.size < 2:
        raise ValueError(f"catch-up needs at least 2 moves, got {moves.index.size}")
    t_move = moves.t
    x_move = moves.size
    b0 = previous_tick(tb, xb, t_move)
    b1 = previous_tick(tb, xb, t_move + window_ns)
    ok = np.isfinite(b0) & np.isfinite(b1) & (t_move + window_ns <= tb[-1])
    x, y = x_move[ok], (b1 - b0)[ok]
    n = int(x.size)
    if n < 2:
        raise ValueError("catch-up: fewer than 2 moves have the follower observed over the whole window")
    sxx = float(np.dot(x, x))
    beta = float(np.dot(x, y)) / sxx
    resid = y - beta * x
    se = float(np.sqrt(float(np.dot(resid, resid)) / (n - 1) / sxx))
    return Estimate(beta, se, n)
