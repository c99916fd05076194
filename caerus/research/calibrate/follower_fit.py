"""How Hyperliquid follows Binance, per move: lag, catch-up now and later, fading quotes, the basis, own moves.

Hyperliquid's touch in the model (docs/research.md, Market model): the side a coming move exposes (the ask before a
rise, the bid before a fall) moves at once by ``hl_fade`` of what is still to arrive; the other side is the mid
``h`` itself. So every per-move measure here reads the *unexposed* side (the bid after an up move, the ask after a
down move): it moves only when the move arrives, and the lag and catch-up read from it are not mixed with fading.

* ``match_unexposed``: per-move first responses (estimators.match_moves) on the unexposed side (catch-up and
  fading read these; the lag law is lag_law's).
* ``early_response``: each matched move's own response one block after its own first response: the slope through
  the origin on the move is ``catch_up`` (a window at the median lag would miss the half of the moves whose lag is
  longer, and bias it low).
* ``late_curve``: the same slope at times T after each move's own first response, on moves with no other jump
  around; ``c + a (1 - exp(-T / tau)) + (1 - c - a)(1 - 2^(-T / H))`` fitted to it (scipy) gives the late share
  ``a = catch_up_late (1 - catch_up)`` and its mean delay ``tau`` (H: the basis half-life, 0 for none).
* ``fade``: the spread's widening just before the first response, on the move's pending part ``(c + a) m``.
* ``basis_half_life``: autocovariance of the basis (Binance mid - Hyperliquid mid, 1 s grid) at lags of 10 s
  and more, where the fast parts (moves on their way, late parts, flickers) have died: ``A 2^(-lag / H)``.
* ``own_moves``: runs of same-sign Hyperliquid steps over consecutive blocks, in time with no Binance jump before
  it (the lags and late parts of every jump have passed): count per minute, sizes, blocks per run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate.estimators import Estimate, FloatArray, IntArray, Jumps


@dataclass(frozen=True)
class Touch:
    """Hyperliquid's log bid, log ask and log mid on one clock."""

    t: IntArray
    bid: FloatArray
    ask: FloatArray

    @property
    def mid(self) -> FloatArray:
        return 0.5 * (self.bid + self.ask)


def _subset(moves: Jumps, keep: npt.NDArray[np.bool_]) -> Jumps:
    return Jumps(moves.index[keep], moves.t[keep], moves.size[keep])


def match_unexposed(t_a: IntArray, x_a: FloatArray, moves: Jumps, hl: Touch, share: float,
                    max_delay_ns: int) -> est.MovesMatched:
    """Per-move lags read on the unexposed side (bid for rises, ask for falls), in ``moves``' order."""
    n = moves.index.size
    lo, hi, ok = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=bool)
    for up in (True, False):
        sel = moves.size > 0 if up else moves.size < 0
        if not sel.any():
            continue
        m = est.match_moves(t_a, x_a, _subset(moves, sel), hl.t, hl.bid if up else hl.ask, share, max_delay_ns,
                            in_one_step=True)
        lo[sel], hi[sel], ok[sel] = m.lo, m.hi, m.matched
    return est.MovesMatched(lo, hi, ok)


def _side_at(hl: Touch, up: npt.NDArray[np.bool_], at: npt.ArrayLike) -> FloatArray:
    at = np.asarray(at, dtype=np.int64)
    return np.where(up, est.previous_tick(hl.t, hl.bid, at), est.previous_tick(hl.t, hl.ask, at))


def _slope(x: FloatArray, y: FloatArray) -> Estimate:
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = int(x.size)
    if n < 3:
        return Estimate(float("nan"), float("nan"), n)
    sxx = float(np.dot(x, x))
    beta = float(np.dot(x, y)) / sxx
    resid = y - beta * x
    return Estimate(beta, float(np.sqrt(float(np.dot(resid, resid)) / (n - 1) / sxx)), n)


def early_response(moves: Jumps, matched: est.MovesMatched, hl: Touch, block_ns: int) -> Estimate:
    """``catch_up``: slope of the unexposed side's move (from just before the move to one block after the move's
    own first response) on the move."""
    k = matched.matched
    t0, m = moves.t[k], moves.size[k]
    t1 = t0 + matched.hi[k].astype(np.int64)
    up = m > 0
    return _slope(m, _side_at(hl, up, t1 + block_ns) - _side_at(hl, up, t0 - 1))


@dataclass(frozen=True)
class LateFit:
    late: Estimate  # a: the share of a move that arrives late (catch_up_late * (1 - catch_up))
    delay_ms: Estimate  # tau
    moves: int
    horizons_s: FloatArray
    betas: FloatArray


def _late_model(half_life_s: float):
    def f(t: FloatArray, c: float, a: float, tau: float) -> FloatArray:
        arb = 1.0 - np.exp2(-t / half_life_s) if half_life_s > 0 else 0.0
        return c + a * (1.0 - np.exp(-t / tau)) + (1.0 - c - a) * arb
    return f


def late_curve(moves: Jumps, matched: est.MovesMatched, hl: Touch, block_ns: int, clean_before_ns: int,
               half_life_s: float, horizons_s: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                                                      8.0),
               n_boot: int = 100, seed: int = 0) -> LateFit:
    """Fit the late part (see the module docstring) on the matched moves with no other jump from
    ``clean_before_ns`` before them to the last horizon after their first response."""
    from scipy.optimize import curve_fit  # scipy comes with the [research] extra (scikit-learn needs it)

    k = np.flatnonzero(matched.matched)
    t0 = moves.t[k]
    t1 = t0 + matched.hi[k].astype(np.int64) + block_ns
    t_end = t1 + int(horizons_s[-1] * 1e9)
    nxt = np.searchsorted(moves.t, t0, side="right")
    next_t = np.where(nxt < moves.t.size, moves.t[np.minimum(nxt, moves.t.size - 1)], np.iinfo(np.int64).max)
    prev = np.searchsorted(moves.t, t0, side="left") - 1
    prev_t = np.where(prev >= 0, moves.t[np.maximum(prev, 0)], np.iinfo(np.int64).min // 2)
    clean = (next_t > t_end) & (t0 - prev_t > clean_before_ns) & (t_end <= hl.t[-1])
    k, t0, t1 = k[clean], t0[clean], t1[clean]
    m = moves.size[k]
    up = m > 0
    base = _side_at(hl, up, t0 - 1)
    hs = np.asarray(horizons_s, dtype=np.float64)
    y = np.column_stack([_side_at(hl, up, t1 + int(h * 1e9)) - base for h in hs])  # moves x horizons
    nan = float("nan")
    if m.size < 10:
        return LateFit(Estimate(nan, nan, int(m.size)), Estimate(nan, nan, int(m.size)), int(m.size), hs,
                       np.full(hs.size, nan))
    f = _late_model(half_life_s)

    def fit(rows: npt.NDArray[np.int64]) -> tuple[FloatArray, tuple[float, float, float]]:
        mm, yy = m[rows], y[rows]
        betas = (mm @ yy) / float(mm @ mm)
        p, _ = curve_fit(f, hs, betas, p0=(0.6, 0.2, 1.0), bounds=([0.0, 0.0, 0.02], [1.0, 1.0, 30.0]),
                         maxfev=2000)
        return betas, (float(p[0]), float(p[1]), float(p[2]))

    everything = np.arange(m.size)
    try:
        betas, (_, a, tau) = fit(everything)
    except RuntimeError:
        return LateFit(Estimate(nan, nan, int(m.size)), Estimate(nan, nan, int(m.size)), int(m.size), hs,
                       np.full(hs.size, nan))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        try:
            draws.append(fit(rng.integers(0, m.size, m.size))[1])
        except RuntimeError:
            continue
    boot = np.asarray(draws) if draws else np.full((2, 3), nan)
    return LateFit(Estimate(a, float(np.std(boot[:, 1], ddof=1)), int(m.size)),
                   Estimate(tau * 1e3, float(np.std(boot[:, 2], ddof=1)) * 1e3, int(m.size)), int(m.size), hs,
                   betas)


def fade(moves: Jumps, matched: est.MovesMatched, hl: Touch, pending_share: float) -> Estimate:
    """``hl_fade``: the spread's widening at Hyperliquid's last update before a move's first response (and after
    the move), on the move's pending part ``pending_share * |m|``."""
    k = np.flatnonzero(matched.matched)
    t0 = moves.t[k]
    t1 = t0 + matched.hi[k].astype(np.int64)
    j = np.searchsorted(hl.t, t1, side="left") - 1  # the update before the first response
    ok = (j >= 0) & (hl.t[np.maximum(j, 0)] > t0)
    k, t0, j = k[ok], t0[ok], j[ok]
    spread = hl.ask - hl.bid
    before = est.previous_tick(hl.t, spread, t0 - 1)
    return _slope(pending_share * np.abs(moves.size[k]), spread[j] - before)


def basis_half_life(t_a: IntArray, x_a: FloatArray, hl: Touch, min_lag_s: float = 10.0,
                    max_lag_s: float = 180.0, step_s: float = 1.0) -> tuple[Estimate, float]:
    """``hl_basis_half_life_s`` from the basis' autocovariance at lags >= ``min_lag_s``: (estimate, the slow
    part's variance share of the basis at ``min_lag_s`` = gamma(min) / gamma(0)). NaN when it does not decay."""
    from scipy.optimize import curve_fit

    lo, hi = max(t_a[0], hl.t[0]), min(t_a[-1], hl.t[-1])
    grid = np.arange(lo, hi, int(step_s * 1e9), dtype=np.int64)
    b = est.previous_tick(t_a, x_a, grid) - est.previous_tick(hl.t, hl.mid, grid)
    b = b - b.mean()
    n = b.size
    max_lag = min(int(max_lag_s / step_s), n // 4)
    lags = np.arange(int(min_lag_s / step_s), max_lag + 1)
    nan = float("nan")
    if lags.size < 5:
        return Estimate(nan, nan, n), nan
    g0 = float(b @ b) / n
    gam = np.array([float(b[:-L] @ b[L:]) / n for L in lags])
    if gam[0] <= 0:
        return Estimate(nan, nan, n), 0.0
    x = lags * step_s
    try:
        # fitted on gamma / gamma(min lag): raw log-price autocovariances (~1e-8) sit below the solver's
        # tolerances, which then stopped at the starting rate (a 69 s half-life whatever the data)
        p, cov = curve_fit(lambda s, A, lam: A * np.exp(-lam * s), x, gam / gam[0], p0=(1.0, 0.01),
                           bounds=([0.0, 1e-5], [np.inf, 10.0]))
    except RuntimeError:
        return Estimate(nan, nan, n), gam[0] / g0
    lam, lam_se = float(p[1]), float(np.sqrt(cov[1, 1]))
    h = math.log(2.0) / lam
    return Estimate(h, h * lam_se / lam, n), float(gam[0] / g0)


@dataclass(frozen=True)
class OwnMoves:
    rate_per_clean_min: Estimate  # runs per minute of clean time (jump clock: volatile time counted x jump mult)
    bps_min: Estimate
    bps_max: Estimate
    blocks: Estimate
    clean_min: float


def own_moves(t_jumps: IntArray, hl: Touch, block_ns: int, clean_after_ns: int, step_min: float,
              size_min: float, clock_weight: tuple[IntArray, FloatArray] | None = None) -> OwnMoves:
    """Runs of same-sign mid steps of at least ``step_min`` (log) over consecutive blocks (gaps <= 1.5 blocks),
    totalling at least ``size_min``, starting in clean time (no Binance jump in the ``clean_after_ns`` before).
    ``clock_weight``: (window starts, weight) to count clean time on the jump clock (volatile windows weigh the
    jump multiplier)."""
    t, x = hl.t, hl.mid
    step = np.diff(x)
    gap = np.diff(t)
    sign = np.sign(step) * (np.abs(step) >= step_min)
    runs: list[tuple[int, int]] = []  # (first step, steps)
    i = 0
    while i < step.size:
        if sign[i] == 0:
            i += 1
            continue
        j = i + 1
        while j < step.size and sign[j] == sign[i] and gap[j] <= 1.5 * block_ns:
            j += 1
        runs.append((i, j - i))
        i = j
    prev_jump = np.searchsorted(t_jumps, t[1:], side="right") - 1
    if t_jumps.size:
        since = np.where(prev_jump >= 0, t[1:] - t_jumps[np.maximum(prev_jump, 0)], np.iinfo(np.int64).max)
    else:  # no Binance jump at all: every step is clean (indexing an empty array failed)
        since = np.full(t.size - 1, np.iinfo(np.int64).max)
    clean_step = since > clean_after_ns
    sizes, blocks = [], []
    for first, count in runs:
        total = float(x[first + count] - x[first])
        if abs(total) >= size_min and clean_step[first]:
            sizes.append(abs(total))
            blocks.append(count)
    # clean time: the span of each HL gap that lies in clean time, approximated per update
    clean_ns = gap.astype(np.float64) * clean_step
    if clock_weight is not None:
        starts, weight = clock_weight
        w = np.searchsorted(starts, t[1:], side="right") - 1
        clean_ns = clean_ns * weight[np.clip(w, 0, weight.size - 1)]
    clean_min = float(clean_ns.sum()) / 60e9
    n = len(sizes)
    nan = float("nan")
    rate = Estimate(n / clean_min if clean_min > 0 else nan, math.sqrt(max(n, 1)) / clean_min if clean_min else nan,
                    n)
    if n >= 2:
        lo, hi = est.uniform_bounds(np.expm1(np.asarray(sizes)) * 1e4)
    else:
        lo = hi = Estimate(nan, nan, n)
    b = np.asarray(blocks, dtype=np.float64)
    blk = Estimate(float(np.median(b)) if n else nan, float(1.2533 * b.std() / math.sqrt(n)) if n > 1 else nan, n)
    return OwnMoves(rate, lo, hi, blk, clean_min)
