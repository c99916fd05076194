"""Volatility regimes from the leader's price: a two-state split of windows by realised variance.

The model's regime (docs/research.md, Market model) is a calm/volatile Markov chain scaling the diffusion's
volatility by ``regime_vol_mult`` and every jump rate by ``regime_jump_mult``. Here the session is cut into windows
of ``window_ns``; each window's realised variance is the mean square of its grid returns with the intervals holding
a large move (jumps, flickers) left out. A two-component Gaussian mixture on the log of that variance
(scikit-learn) labels each window calm or volatile, when two components describe it better than one (BIC, by at
least ``min_bic_gain``) and their volatilities differ by ``min_vol_ratio``; otherwise there is one regime.

From the labels: the volatility ratio (root of the ratio of the two classes' pooled mean squares), the jump-rate
ratio (large moves per second in each class), and the mean spell lengths from the labels' transition counts,
read as a continuous-time chain observed every window (``P = exp(Q w)``: the rate out of each state is its
share of ``-ln(1 - p01 - p10) / w``), so spells shorter than a window are not lost. SEs: the spells' count
(Poisson), the ratios by the delta method on the pooled squares (chi-square) and the counts (Poisson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from caerus.research.calibrate.estimators import Estimate, FloatArray, previous_tick


@dataclass(frozen=True)
class WindowStats:
    """Per window: sum of squared grid returns, their count, large moves, seconds."""

    start: npt.NDArray[np.int64]
    sum_sq: FloatArray
    n_ret: npt.NDArray[np.int64]
    moves: npt.NDArray[np.int64]
    seconds: float


def window_stats(t: npt.ArrayLike, x: npt.ArrayLike, step_ns: int, window_ns: int, exclude: npt.ArrayLike,
                 truncate_sd: float = 5.0) -> WindowStats:
    """Grid returns (previous tick, ``step_ns``) grouped by window, the intervals holding an ``exclude`` time (a
    large move) and returns beyond ``truncate_sd`` bipower sd left out; ``exclude`` times counted per window."""
    times = np.asarray(t, dtype=np.int64)
    values = np.asarray(x, dtype=np.float64)
    per = window_ns // step_ns
    n_win = int((times[-1] - times[0]) // window_ns)
    if n_win < 4:
        raise ValueError(f"regimes: {n_win} windows of {window_ns / 1e9:g} s, need at least 4")
    grid = times[0] + np.arange(n_win * per + 1, dtype=np.int64) * step_ns
    r = np.diff(previous_tick(times, values, grid))
    keep = np.ones(r.size, dtype=bool)
    ex = np.asarray(exclude, dtype=np.int64)
    k = np.searchsorted(grid, ex, side="left") - 1
    keep[k[(k >= 0) & (k < r.size)]] = False
    scale = float(np.sqrt(np.pi / 2.0 * np.mean(np.abs(r[1:]) * np.abs(r[:-1])))) if r.size > 2 else 0.0
    if scale > 0:
        keep &= np.abs(r) <= truncate_sd * scale * 3.0  # loose: the volatile regime's returns are larger
    sq = np.where(keep, r * r, 0.0).reshape(n_win, per)
    cnt = keep.reshape(n_win, per).sum(axis=1)
    w = np.clip((ex - times[0]) // window_ns, -1, n_win)
    moves = np.bincount(w[(w >= 0) & (w < n_win)], minlength=n_win)
    return WindowStats(grid[:-1:per][:n_win], sq.sum(axis=1), cnt.astype(np.int64), moves.astype(np.int64),
                       window_ns / 1e9)


@dataclass(frozen=True)
class Regimes:
    """The split: ``volatile`` labels per window (all False with one regime) and the estimates."""

    two: bool
    volatile: npt.NDArray[np.bool_]
    vol_mult: Estimate
    jump_mult: Estimate
    calm_s: Estimate
    volatile_s: Estimate
    volatile_share: float
    bic_gain: float


def split(stats: WindowStats, min_bic_gain: float = 10.0, min_vol_ratio: float = 1.2, seed: int = 0) -> Regimes:
    """Two regimes or one, from the windows' realised variances (see the module docstring)."""
    from sklearn.mixture import GaussianMixture  # imported here: the [research] extra, seconds to import

    ok = stats.n_ret >= 5
    rv = np.where(ok, stats.sum_sq / np.maximum(stats.n_ret, 1), np.nan)
    floor = float(np.nanmin(rv[rv > 0])) if np.any(rv > 0) else 1e-30
    z = np.log(np.maximum(np.nan_to_num(rv, nan=floor), floor)).reshape(-1, 1)
    one = GaussianMixture(1, random_state=seed).fit(z)
    two = GaussianMixture(2, random_state=seed, n_init=3).fit(z)
    gain = float(one.bic(z) - two.bic(z))
    labels = two.predict(z).astype(bool)
    if two.means_[0, 0] > two.means_[1, 0]:
        labels = ~labels
    nan = float("nan")
    n_win = int(z.shape[0])
    if not (gain >= min_bic_gain and 0 < labels.sum() < n_win):
        return Regimes(False, np.zeros(n_win, dtype=bool), Estimate(1.0, nan, n_win), Estimate(1.0, nan, n_win),
                       Estimate(nan, nan, 0), Estimate(nan, nan, 0), 0.0, gain)
    calm = ~labels
    sq_c, n_c = float(stats.sum_sq[calm].sum()), int(stats.n_ret[calm].sum())
    sq_v, n_v = float(stats.sum_sq[labels].sum()), int(stats.n_ret[labels].sum())
    ratio_var = (sq_v / n_v) / (sq_c / n_c)
    vol_mult = math.sqrt(ratio_var)
    vol_se = 0.5 * vol_mult * math.sqrt(2.0 / n_c + 2.0 / n_v)
    if vol_mult < min_vol_ratio:
        return Regimes(False, np.zeros(n_win, dtype=bool), Estimate(1.0, nan, n_win), Estimate(1.0, nan, n_win),
                       Estimate(nan, nan, 0), Estimate(nan, nan, 0), 0.0, gain)
    m_c, m_v = int(stats.moves[calm].sum()), int(stats.moves[labels].sum())
    t_c, t_v = calm.sum() * stats.seconds, labels.sum() * stats.seconds
    jr = (m_v / t_v) / (m_c / t_c) if m_c > 0 and t_v > 0 else nan
    jr_se = jr * math.sqrt(1.0 / max(m_v, 1) + 1.0 / max(m_c, 1)) if math.isfinite(jr) else nan
    # transitions between consecutive windows -> a two-state continuous-time chain
    a, b = labels[:-1], labels[1:]
    n01, n10 = int((~a & b).sum()), int((a & ~b).sum())
    p01 = n01 / max(int((~a).sum()), 1)
    p10 = n10 / max(int(a.sum()), 1)
    w = stats.seconds
    total = -math.log(max(1.0 - p01 - p10, 1e-9)) / w
    pi_v = p01 / (p01 + p10) if p01 + p10 > 0 else float(labels.mean())
    q01, q10 = total * pi_v, total * (1.0 - pi_v)
    calm_s = 1.0 / q01 if q01 > 0 else nan
    vol_s = 1.0 / q10 if q10 > 0 else nan
    return Regimes(True, labels, Estimate(vol_mult, vol_se, n_win), Estimate(jr, jr_se, m_c + m_v),
                   Estimate(calm_s, calm_s / math.sqrt(max(n01, 1)), n01),
                   Estimate(vol_s, vol_s / math.sqrt(max(n10, 1)), n10), float(labels.mean()), gain)
