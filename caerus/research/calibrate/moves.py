"""Binance's jump-sized moves split into information jumps (they persist) and flickers (they revert).

A flicker is a jump-sized move that Binance's quote shows for a while and then drops (docs/research.md, Market
model: ``flicker_share``, ``flicker_ms``). It is told from a jump by looking ahead in *time*, not in ticks: a
flicker's reversal comes hundreds of milliseconds and dozens of quotes later. For each large tick move (in time
order, each used once), within ``window_ns`` after it:

* a later large move of the opposite sign and the same size (within ``tol``) ends it: one flicker, its lifetime
  the time between the two (information jumps in between do not matter: their sizes are not compared);
* else a chain of later large moves whose running sum with it comes back to zero: flickers replaced by flickers
  before reverting (the model keeps one at a time). Every move but the last is an onset; the last onset's
  lifetime is observed, the earlier ones are right-censored at the next onset;
* else it is an information jump.

The share is flickers / (flickers + jumps), binomial SE. The lifetime comes from the direct pairs alone
(:func:`flicker_lifetime`): chains and their censored spans include false chains (a run of unrelated moves that
happens to sum to zero), and those read long. Each move also records its first *near miss* (an opposite move
missing its size by ``NEAR_LO..NEAR_HI`` tolerances): a coincidence by construction, the placebo that gives the
false pairs' number and timing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from caerus.research.calibrate.estimators import Estimate, FloatArray, IntArray, Jumps, _series

#: the near-miss band of the false-pair placebo, in tolerances: sums between these are coincidences
NEAR_LO, NEAR_HI = 3.0, 9.0


@dataclass(frozen=True)
class MoveClasses:
    """Large moves of the leader split into jumps and flickers."""

    jumps: Jumps  # persistent moves (dead-time merged)
    raw_jumps: int  # persistent moves before the dead-time merge (the count the share compares against)
    flicker_t: IntArray  # onset times
    lifetimes: FloatArray  # observed lifetimes, ns
    censored: FloatArray  # lower bounds of replaced flickers' lifetimes, ns
    candidates_t: IntArray  # every large move's time (jumps, onsets and reversals): left out of variance sums
    direct: FloatArray  # lifetimes of the flickers that reverted by one opposite move of the same size, ns
    direct_t: IntArray  # their onset times
    near_miss: FloatArray  # time to the first opposite move that *nearly* cancels (a coincidence by construction)
    near_miss_scale: float  # expected false direct pairs per near miss (tolerance band / near-miss band)


def classify_moves(t: npt.ArrayLike, x: npt.ArrayLike, threshold: float, window_ns: int,
                   tol_abs: float = 1e-4, tol_rel: float = 0.02, dead_ns: int = 0) -> MoveClasses:
    """Split tick moves of log price ``x`` above ``threshold`` into flickers and jumps (see the module docstring).
    Two moves cancel when their sum is within ``max(tol_abs, tol_rel * |first|)``."""
    times, values = _series(t, x, "price")
    if threshold <= 0:
        raise ValueError(f"jump threshold must be > 0, got {threshold}")
    if window_ns <= 0:
        raise ValueError(f"flicker window must be > 0 ns, got {window_ns}")
    r = np.diff(values)
    idx = np.flatnonzero(np.abs(r) > threshold) + 1
    ct, cs = times[idx].tolist(), r[idx - 1].tolist()
    n = len(ct)
    used = [False] * n
    jump_k: list[int] = []
    onsets: list[int] = []
    lives: list[float] = []
    censored: list[float] = []
    direct: list[tuple[int, float]] = []  # (move, lifetime) of each direct pair
    near: list[float] = []
    for a in range(n):  # large moves are few (tens a minute): a Python loop is cheap
        if used[a]:
            continue
        tol = max(tol_abs, tol_rel * abs(cs[a]))
        later = [b for b in range(a + 1, n) if ct[b] - ct[a] <= window_ns and not used[b]] if a + 1 < n else []
        later = later[:64]
        pair = next((b for b in later if abs(cs[a] + cs[b]) <= tol), None)
        # the placebo: an opposite move that misses cancelling by NEAR_LO..NEAR_HI tolerances is a coincidence (a
        # flicker reverts to its own size), so these times are the false pairs' timing, their count scaled by the
        # bands' widths the false pairs' number
        miss = next((b for b in later if NEAR_LO * tol < abs(cs[a] + cs[b]) <= NEAR_HI * tol
                     and cs[a] * cs[b] < 0), None)
        if miss is not None:
            near.append(float(ct[miss] - ct[a]))
        if pair is not None:
            used[a] = used[pair] = True
            onsets.append(a)
            lives.append(float(ct[pair] - ct[a]))
            direct.append((a, float(ct[pair] - ct[a])))
            continue
        total, chain = cs[a], [a]
        end = None
        for b in later:
            total += cs[b]
            chain.append(b)
            if abs(total) <= tol:
                end = b
                break
        if end is not None and len(chain) > 2:
            for k in chain:
                used[k] = True
            for first, nxt in itertools.pairwise(chain):
                onsets.append(first)
                censored.append(float(ct[nxt] - ct[first]))
            onsets.append(chain[-2])
            lives.append(float(ct[chain[-1]] - ct[chain[-2]]))
            continue
        used[a] = True
        jump_k.append(a)
    kept: list[int] = []
    for k in jump_k:
        if not kept or ct[k] - ct[kept[-1]] >= dead_ns:
            kept.append(k)
    ji = idx[np.asarray(kept, dtype=np.int64)] if kept else np.empty(0, dtype=np.int64)
    jumps = Jumps(ji, times[ji], values[ji] - values[ji - 1] if ji.size else np.empty(0))
    on = np.asarray(sorted(onsets), dtype=np.int64)
    d_idx = np.asarray([k for k, _ in direct], dtype=np.int64)
    d_t = times[idx[d_idx]] if d_idx.size else np.empty(0, dtype=np.int64)
    d_life = np.asarray([life for _, life in direct], dtype=np.float64)
    return MoveClasses(jumps, len(jump_k), times[idx[on]] if on.size else np.empty(0, dtype=np.int64),
                       np.asarray(lives, dtype=np.float64), np.asarray(censored, dtype=np.float64), times[idx],
                       d_life, d_t, np.asarray(near, dtype=np.float64), 2.0 / (2.0 * (NEAR_HI - NEAR_LO)))


def share(hits: int, total: int) -> Estimate:
    """A proportion with its binomial SE."""
    if total <= 0:
        return Estimate(float("nan"), float("nan"), 0)
    p = hits / total
    return Estimate(p, math.sqrt(max(p * (1 - p), 1.0 / total) / total), total)


def uniform_bounds_robust(samples: npt.ArrayLike, p: float = 0.1) -> tuple[Estimate, Estimate]:
    """Bounds of a uniform law from its ``p`` and ``1 - p`` quantiles (range = spread / (1 - 2p)), so a few
    misclassified moves (a jump landing on a flicker, two moves merged) do not set them; SE from the quantiles'
    binomial spread, ``range * sqrt(p (1 - p) / n)`` each, carried through."""
    s = np.asarray(samples, dtype=np.float64)
    if s.size < 5:
        raise ValueError(f"a uniform range needs at least 5 samples, got {s.size}")
    q_lo, q_hi = (float(v) for v in np.quantile(s, [p, 1 - p]))
    width = (q_hi - q_lo) / (1 - 2 * p)
    se = width * math.sqrt(p * (1 - p) / s.size) * (1 + p / (1 - 2 * p) * 2)
    return Estimate(q_lo - p * width, se, int(s.size)), Estimate(q_hi + p * width, se, int(s.size))


def flicker_lifetime(direct: npt.ArrayLike, near_miss: npt.ArrayLike, near_miss_scale: float, window: float,
                     replace_hazard: float = 0.0, bins: int = 12) -> Estimate:
    """Mean flicker lifetime (the model's ``flicker_ms``, in the inputs' unit) from the direct pairs' lifetimes.

    Two biases are taken out, each from the data:

    * false pairs (an information jump and a later opposite jump of the same size): their number is the near
      misses' count times ``near_miss_scale`` and their timing the near misses' histogram, a fixed component of
      an EM mixture with an exponential truncated at ``window`` (a free uniform part, fitted before, took the
      false pairs' long lifetimes as the exponential's tail and read 60-100 % high);
    * replacement: a flicker replaced by the next one never reverts by a direct pair, so the direct pairs' lifetimes
      are the first of two exponential clocks (end and replacement) and their rate is ``1/mean + replace_hazard``
      (the flicker arrival rate per unit time, averaged over the pairs' onsets); the mean is
      ``1 / (rate - replace_hazard)``.

    SE from the direct pairs' effective count (mean / sqrt(n), through the hazard's shift). ValueError when fewer
    than 2 direct pairs remain, or when the replacement hazard is at least the observed rate (no lifetime left)."""
    d = np.asarray(direct, dtype=np.float64)
    near = np.asarray(near_miss, dtype=np.float64)
    if d.size < 2:
        raise ValueError(f"flicker lifetime needs at least 2 direct pairs, got {d.size}")
    if not (window > 0 and math.isfinite(window)):
        raise ValueError(f"flicker window must be > 0 and finite, got {window!r}")
    eps = min(near_miss_scale * near.size / d.size, 0.9)
    edges = np.linspace(0.0, window, bins + 1)
    counts = np.histogram(np.clip(near, 0.0, window), edges)[0].astype(np.float64) + 0.5  # 0.5: no empty bin
    g_bins = counts / counts.sum() / (window / bins)  # the false pairs' density
    g = g_bins[np.clip(np.searchsorted(edges, d, side="right") - 1, 0, bins - 1)]
    mu = max(float(np.median(d)) / math.log(2.0), 1e-9 * window)
    w = np.ones(d.size)
    for _ in range(500):
        q = math.exp(-window / mu)
        f_exp = (1.0 - eps) * np.exp(-d / mu) / (mu * (1.0 - q))
        w = f_exp / (f_exp + eps * g)
        mean = float(w @ d) / float(w.sum())
        if mean >= 0.5 * window:  # no truncated exponential has this mean: the pairs are mostly coincidences
            raise ValueError(f"flicker lifetime: direct pairs' mean {mean:.4g} is half the window or more")
        new = mu
        for _ in range(200):  # the truncated exponential's mean equation, mu = mean + W q / (1 - q)
            q = math.exp(-window / new)
            new = mean + window * q / (1.0 - q)
        if abs(new - mu) < 1e-9 * mu:
            mu = new
            break
        mu = new
    n = float(w.sum())
    rate = 1.0 / mu - replace_hazard
    if rate <= 0:
        raise ValueError(f"flicker lifetime: replacement hazard {replace_hazard:.4g} is at least the observed end "
                         f"rate {1.0 / mu:.4g}")
    life = 1.0 / rate
    se = (mu / math.sqrt(n)) * (life / mu) ** 2
    return Estimate(life, se, round(n))
