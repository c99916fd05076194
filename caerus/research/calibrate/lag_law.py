"""The lag law (``hl_lag_ms``, ``hl_lag_sd_ms``) from Binance's jumps and Hyperliquid's answers, or why not.

The model draws one lag per move from a lognormal law and applies the move's ``catch_up`` share in one block at the
first block after it (docs/research.md, Market model). So each Binance jump that nothing else disturbs is one
observation of that law, seen through Hyperliquid's block clock:

* **Which moves.** Jumps with no other jump in the ``clear_before_ns`` before them (Hyperliquid answering two close
  moves at once would make the second look early) *and* none in the search window after them (a later jump's
  answer can land in the window first). Both rules look at the other jumps' times only, never at this move's
  answer, so they cannot select moves by their lag.
* **The answer.** On Hyperliquid's *unexposed* side (the bid after a rise, the ask after a fall: fading moves the
  other side at once), the largest one-update step in the move's direction within the window. The lag then lies
  in ``(b_{j-1} - t, b_j - t]``, ``b_j`` the update that made the step: censored by Hyperliquid's update clock only.
  The move counts as answered when that step is at least ``share`` of the move. The earlier rule (the *first*
  update that crosses ``share``, its path measured from before the move) missed moves more often the longer their
  lag (an own move against it in the meantime left the path below the threshold) and took early steps of other
  events for the answer: on the default market the answered moves' true median was 594 ms of 628 and the
  estimate 577 (SE 28) for 650. The largest step has neither problem: the arrival is the largest step unless
  something bigger happens in a window that does not depend on the lag.
* **The law.** Maximum likelihood of a lognormal seen through the intervals (a lag shorter than a block included:
  an interval starting at or before 0 is ``P(L <= hi)``), truncated at each move's last update in the window
  (``last``: a lag past it is never seen), mixed with a share ``eps`` of false answers uniform over the window (a
  flicker taken for a jump, a larger step of something else): each interval's likelihood is
  ``(1 - eps) P(lo < L <= hi) / P(L <= last) + eps (hi - max(lo, 0)) / last``. The median is ``exp(mu)``, the
  standard deviation ``median sqrt(x (x - 1))``, ``x = exp(s^2)`` (the model's parametrisation). Standard errors
  and 95 % intervals (the draws' percentiles): bootstrap over the answered moves, refitting each draw. Over 30
  seeds of 20 minutes of the default market at 50, 300 and 650 ms, 85 of the 90 intervals held the lag.
* **Not identified** (``LagLaw.why_not`` says which; fit.py then writes no lag and calibrate refuses):

  - fewer than ``min_moves`` answered moves;
  - no response peak: the fit beats answers uniform over the window by a likelihood ratio (2 log) below
    ``MIN_PEAK_LR`` (13.8, chi-square with 2 degrees of freedom at 0.999; with answers drawn uniform it stayed
    below 12.1 in 40 draws of 20 moves and 9.3 of 60, a 650 ms law gave 15-24 with 20 moves and 58-70 with 60);
  - a boundary of the searched range: more than ``MAX_BEYOND`` of the fitted law past the window's end (the lag
    may lie beyond it: raise ``--lag-max-ms``), or a median whose 95 % interval reaches below the books' 1 ms
    clock (not told from no lag).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from caerus.research.calibrate.estimators import Estimate, FloatArray, Jumps
from caerus.research.calibrate.follower_fit import Touch

#: below this likelihood ratio (2 log) against answers uniform over the window there is no response peak
MIN_PEAK_LR = 13.8
#: more than this share of the fitted law past the window's end: the lag may lie beyond the searched range
MAX_BEYOND = 0.05
_S_MIN, _S_MAX = 0.01, 4.0  # the lognormal's log-scale sigma: bounds of the search
_EPS_MAX = 0.95
_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: the books' times are milliseconds: a median whose interval reaches below this is not told from no lag
RESOLUTION_MS = 1.0


@dataclass(frozen=True)
class Answers:
    """Per move: the interval ``(lo, hi]`` (ns) holding its lag, the largest step as a share of the move (NaN: no
    Hyperliquid update in the window) and the last update in the window (ns after the move: an answer is seen only
    if the lag is at most this, the truncation point of that move's likelihood)."""

    lo: FloatArray
    hi: FloatArray
    step_share: FloatArray
    last: FloatArray


@dataclass(frozen=True)
class LagLaw:
    """The lag law's estimates (ms), or why it is not identified (``why_not``; the estimates may then be NaN)."""

    median: Estimate
    sd: Estimate
    false_share: Estimate
    moves_clear: int  # jumps clear of others before and after
    moves_answered: int  # of those, answered within the window by a step of at least the share
    window_ms: float
    peak_lr: float  # 2 log likelihood ratio of the fit against answers uniform over the window (NaN: not fitted)
    why_not: str | None


def clear_moves(moves: Jumps, others: Jumps, before_ns: int, after_ns: int) -> Jumps:
    """The moves with no move of ``others`` (which may include them) in the ``before_ns`` before them or the
    ``after_ns`` after them."""
    if moves.index.size == 0:
        return moves
    t_o = others.t
    prev = np.searchsorted(t_o, moves.t, side="left") - 1
    nxt = np.searchsorted(t_o, moves.t, side="right")
    far = np.iinfo(np.int64).max // 4
    gap_before = np.where(prev >= 0, moves.t - t_o[np.maximum(prev, 0)], far)
    gap_after = np.where(nxt < t_o.size, t_o[np.minimum(nxt, t_o.size - 1)] - moves.t, far)
    keep = (gap_before >= before_ns) & (gap_after > after_ns)
    return Jumps(moves.index[keep], moves.t[keep], moves.size[keep])


def largest_step(moves: Jumps, hl: Touch, window_ns: int) -> Answers:
    """For each move at ``t``, Hyperliquid's largest one-update step on the unexposed side (the bid for a rise,
    the ask for a fall), in the move's direction, among its updates in ``(t, t + window_ns]``."""
    n = moves.index.size
    lo, hi, share, last = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    for k in range(n):  # one short slice per move; clear moves are few (tens to hundreds a day)
        t = int(moves.t[k])
        m = float(moves.size[k])
        side = hl.bid if m > 0 else hl.ask
        a = int(np.searchsorted(hl.t, t, side="right")) - 1  # Hyperliquid's last update at or before the move
        b = int(np.searchsorted(hl.t, t + window_ns, side="right"))
        if a < 0 or b <= a + 1:
            continue
        steps = np.diff(side[a:b]) * math.copysign(1.0, m)
        j = int(np.argmax(steps))
        lo[k] = float(hl.t[a + j] - t)
        hi[k] = float(hl.t[a + j + 1] - t)
        share[k] = float(steps[j]) / abs(m)
        last[k] = float(hl.t[b - 1] - t)
    return Answers(lo, hi, share, last)


def _nll(params: npt.NDArray[np.float64], log_lo: FloatArray, log_hi: FloatArray, u: FloatArray,
         log_w: FloatArray) -> tuple[float, npt.NDArray[np.float64]]:
    """The mixture's negative log-likelihood and its gradient in (mu, s, eps) (module docstring)."""
    from scipy.special import ndtr

    mu, s, eps = (float(v) for v in params)
    a, b, c = (log_lo - mu) / s, (log_hi - mu) / s, (log_w - mu) / s
    phi_a = np.where(np.isfinite(a), np.exp(-0.5 * np.where(np.isfinite(a), a, 0.0) ** 2), 0.0) / _SQRT_2PI
    phi_b = np.exp(-0.5 * b**2) / _SQRT_2PI
    phi_c = np.exp(-0.5 * c * c) / _SQRT_2PI
    a_phi_a = np.where(np.isfinite(a), np.where(np.isfinite(a), a, 0.0) * phi_a, 0.0)  # a phi(a) -> 0 at -inf
    p = ndtr(b) - ndtr(a)
    dp_mu, dp_s = -(phi_b - phi_a) / s, -(b * phi_b - a_phi_a) / s
    trunc = np.maximum(ndtr(c), 1e-300)
    dt_mu, dt_s = -phi_c / s, -c * phi_c / s
    q = p / trunc
    dq_mu = (dp_mu - q * dt_mu) / trunc
    dq_s = (dp_s - q * dt_s) / trunc
    like = np.maximum((1.0 - eps) * q + eps * u, 1e-300)
    grad = np.array([-float(np.sum((1.0 - eps) * dq_mu / like)), -float(np.sum((1.0 - eps) * dq_s / like)),
                     -float(np.sum((u - q) / like))])
    return -float(np.sum(np.log(like))), grad


_Data = tuple[FloatArray, FloatArray, FloatArray, FloatArray]


def _prepared(lo_ms: FloatArray, hi_ms: FloatArray, last_ms: FloatArray) -> _Data:
    """(log lo (-inf for an interval starting at or before 0), log hi, the interval's share of the move's seen
    window, log of that window (the last update in it))."""
    lo_pos = np.maximum(lo_ms, 0.0)
    log_lo = np.full(lo_ms.shape, -np.inf)
    np.log(lo_pos, out=log_lo, where=lo_pos > 0)
    last = np.maximum(last_ms, hi_ms)
    return log_lo, np.log(np.maximum(hi_ms, 1e-3)), (hi_ms - lo_pos) / last, np.log(last)


def _fit(data: _Data, starts: list[tuple[float, float, float]]) -> tuple[tuple[float, float, float], float]:
    """((mu, s, eps), negative log-likelihood) at the best optimum reached from ``starts``."""
    from scipy.optimize import minimize

    bounds = [(math.log(1e-3), float(np.max(data[3])) + 3.0), (_S_MIN, _S_MAX), (0.0, _EPS_MAX)]
    best: tuple[tuple[float, float, float], float] | None = None
    for x0 in starts:
        # SLSQP: a tenth of L-BFGS-B's time on these 3-parameter problems (scipy 1.17), same optimum
        res = minimize(_nll, np.asarray(x0), args=data, jac=True, method="SLSQP", bounds=bounds)
        if best is None or float(res.fun) < best[1]:
            best = ((float(res.x[0]), float(res.x[1]), float(res.x[2])), float(res.fun))
    assert best is not None
    return best


def _median_sd(mu: float, s: float) -> tuple[float, float]:
    median = math.exp(mu)
    x = math.exp(s * s)
    return median, median * math.sqrt(x * (x - 1.0))


@dataclass(frozen=True)
class LawFit:
    """The fitted lag law (ms) with bootstrap SEs and 95 % intervals, and what the identification rules read."""

    median: Estimate
    sd: Estimate
    false_share: Estimate
    beyond: float  # the fitted law's share past the window's end
    peak_lr: float  # 2 log likelihood ratio of the fit against answers uniform over the window


def lognormal_law(lo_ns: npt.ArrayLike, hi_ns: npt.ArrayLike, last_ns: npt.ArrayLike, window_ns: float,
                  n_boot: int = 200, seed: int = 0) -> LawFit:
    """The lag law seen through the intervals ``(lo, hi]`` (ns) of answers seen up to ``last`` (ns: the last update
    in each move's window; the law's share past ``window_ns`` is ``beyond``) (module docstring).
    Each estimate carries the bootstrap's SE (over the intervals, refitting each draw) and its 2.5 / 97.5
    percentiles as the 95 % interval: the draws of a lognormal's median and spread are skewed (a long-tailed law at
    a 50 ms median gave draws from 26 to 337 ms), so ``value +- 1.96 SE`` would reach below 0."""
    from scipy.special import ndtr

    lo = np.asarray(lo_ns, dtype=np.float64) / 1e6
    hi = np.asarray(hi_ns, dtype=np.float64) / 1e6
    n = int(lo.size)
    if n < 3:
        raise ValueError(f"lag law needs at least 3 answered moves, got {n}")
    if not window_ns > 0:
        raise ValueError(f"search window must be > 0 ns, got {window_ns!r}")
    w = float(window_ns) / 1e6
    last = np.asarray(last_ns, dtype=np.float64) / 1e6
    if last.shape != lo.shape or hi.shape != lo.shape:
        raise ValueError(f"lag law: {lo.size} lower bounds, {hi.size} upper bounds, {last.size} window ends")
    data = _prepared(lo, hi, last)
    mid = np.maximum(0.5 * (lo + hi), 1.0)
    mu0 = float(np.log(np.median(mid)))
    spread = min(max(float(np.std(np.log(mid))), 0.1), 2.0)
    (mu, s, eps), nll = _fit(data, [(mu0, spread, 0.1), (mu0, 0.3, 0.02), (mu0, 1.0, 0.3)])
    peak_lr = 2.0 * (-nll - float(np.sum(np.log(data[2]))))  # against log-likelihood sum(log u) of uniform
    beyond = 1.0 - float(ndtr((math.log(w) - mu) / s))
    values = (*_median_sd(mu, s), eps)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        k = rng.integers(0, n, n)
        (b_mu, b_s, b_eps), _ = _fit((data[0][k], data[1][k], data[2][k], data[3][k]),
                                     [(mu, s, min(max(eps, 0.02), 0.5))])
        draws.append((*_median_sd(b_mu, b_s), b_eps))
    boot = np.asarray(draws, dtype=np.float64).reshape(-1, 3)
    out = []
    for j, value in enumerate(values):
        if boot.shape[0] < 2:
            out.append(Estimate(value, float("nan"), n))
            continue
        q_lo, q_hi = (float(q) for q in np.percentile(boot[:, j], [2.5, 97.5]))
        out.append(Estimate(value, float(np.std(boot[:, j], ddof=1)), n, q_lo, q_hi))
    return LawFit(out[0], out[1], out[2], beyond, peak_lr)


def estimate(jumps: Jumps, hl: Touch, share: float, window_ns: int, clear_before_ns: int, min_moves: int,
             n_boot: int = 200, seed: int = 0) -> LagLaw:
    """The lag law from ``jumps`` (Binance's information jumps) and Hyperliquid's touch, or why not (the rules: the
    module docstring)."""
    nan = Estimate(float("nan"), float("nan"), 0)
    window_ms = window_ns / 1e6
    clear = clear_moves(jumps, jumps, clear_before_ns, window_ns)
    ans = largest_step(clear, hl, window_ns)
    ok = np.nan_to_num(ans.step_share, nan=-1.0) >= share
    n_ok, n_clear = int(ok.sum()), int(clear.index.size)
    if n_ok < max(min_moves, 3):
        why = (f"{n_ok} answered moves (need {min_moves}; {n_clear} jumps clear of others "
               f"{clear_before_ns / 1e9:g} s before and {window_ms / 1e3:g} s after)")
        return LagLaw(nan, nan, nan, n_clear, n_ok, window_ms, float("nan"), why)
    law = lognormal_law(ans.lo[ok], ans.hi[ok], ans.last[ok], window_ns, n_boot, seed)
    lo95, _ = law.median.interval()
    why_not = None
    if not law.peak_lr >= MIN_PEAK_LR:
        why_not = (f"no response peak: {n_ok} answers are no more concentrated than chance over the "
                   f"{window_ms:g} ms window (likelihood ratio {law.peak_lr:.3g} < {MIN_PEAK_LR:g})")
    elif law.beyond > MAX_BEYOND:
        why_not = (f"{law.beyond:.0%} of the fitted lag law lies past the searched window's end ({window_ms:g} ms; "
                   f"median {law.median.value:.4g} ms): raise --lag-max-ms")
    elif not lo95 >= RESOLUTION_MS:
        why_not = (f"median {law.median.value:.3g} ms, its 95 % interval reaches {lo95:.3g} ms, below the books' "
                   f"{RESOLUTION_MS:g} ms clock: not told from no lag")
    return LagLaw(law.median, law.sd, law.false_share, n_clear, n_ok, window_ms, law.peak_lr, why_not)
