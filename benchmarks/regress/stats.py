"""The decision rule: is one set of samples worse than another, with statistics and a size threshold.

A metric regressed when a two-sided Mann-Whitney U test rejects equality (p < alpha, default 0.01) *and* the
effect ``median(head) / median(base) - 1`` is beyond the metric's threshold (default 10%) in the worse
direction. The same rule in the better direction is an improvement. Needing both keeps a tiny but consistent
shift (significant, harmless) and a large but noisy one (big, not significant) from failing a build.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import mannwhitneyu

DEFAULT_ALPHA = 0.01
DEFAULT_THRESHOLD = 0.10
MIN_SAMPLES = 3  # below this a rank test cannot reach any useful p-value
EXACT_MAX_PAIRS = 2500  # up to 50 vs 50 the exact p-value is cheap

LOWER = "lower"  # lower is better (latencies)
HIGHER = "higher"  # higher is better (speed-ups, throughput)
UNKNOWN = "unknown"  # a significant large change is reported as "changed", never as a regression
DIRECTIONS = (LOWER, HIGHER, UNKNOWN)

REGRESSION = "regression"
IMPROVEMENT = "improvement"
SAME = "same"
CHANGED = "changed"
INSUFFICIENT = "insufficient"
NO_BASE = "no-base"
NO_HEAD = "no-head"


@dataclass(frozen=True)
class Comparison:
    """One metric's verdict with everything that led to it."""

    metric: str
    base_median: float
    head_median: float
    effect: float  # median(head) / median(base) - 1
    p_value: float
    prob_head_greater: float  # U / (n_head * n_base): P(a head sample > a base sample), ties count half
    direction: str
    threshold: float
    alpha: float
    n_base: int
    n_head: int
    verdict: str

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def relative_effect(base_median: float, head_median: float) -> float:
    """``head / base - 1``; a zero base gives +inf (or 0 when head is zero too)."""
    if base_median == 0:
        return 0.0 if head_median == 0 else math.copysign(math.inf, head_median)
    return head_median / base_median - 1.0


def _clean(samples: Sequence[float]) -> np.ndarray:
    a = np.asarray(samples, dtype=np.float64)
    return a[np.isfinite(a)]


def compare(
    metric: str,
    base: Sequence[float],
    head: Sequence[float],
    *,
    direction: str = LOWER,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    min_samples: int = MIN_SAMPLES,
) -> Comparison:
    """Compare ``head`` against ``base`` for one metric (NaN/inf samples are dropped, never compared)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction for {metric!r} must be one of {DIRECTIONS}, not {direction!r}")
    if not threshold >= 0:
        raise ValueError(f"threshold for {metric!r} must be >= 0, not {threshold!r}")
    b, h = _clean(base), _clean(head)
    nan = float("nan")
    bm = float(np.median(b)) if b.size else nan
    hm = float(np.median(h)) if h.size else nan

    def result(effect: float, p: float, prob: float, verdict: str) -> Comparison:
        return Comparison(metric, bm, hm, effect, p, prob, direction, threshold, alpha, int(b.size), int(h.size),
                          verdict)

    if b.size == 0:
        return result(nan, nan, nan, NO_BASE)
    if h.size == 0:
        return result(nan, nan, nan, NO_HEAD)
    effect = relative_effect(bm, hm)
    if b.size < min_samples or h.size < min_samples:
        return result(effect, nan, nan, INSUFFICIENT)
    if np.ptp(np.concatenate([b, h])) == 0:  # every sample identical: nothing to rank
        return result(0.0, 1.0, 0.5, SAME)
    # exact null distribution for the sample sizes this tool uses (SciPy's "auto" switches to the normal
    # approximation above 8 per side, which at 9 vs 9 reports p ~4e-4 where the exact minimum is ~4e-5)
    method = "exact" if h.size * b.size <= EXACT_MAX_PAIRS else "asymptotic"
    res = mannwhitneyu(h, b, alternative="two-sided", method=method)
    p = float(res.pvalue)
    prob = float(res.statistic) / (h.size * b.size)
    return result(effect, p, prob, classify(effect, p, direction=direction, threshold=threshold, alpha=alpha))


def classify(effect: float, p_value: float, *, direction: str, threshold: float, alpha: float) -> str:
    """The verdict for an effect and p-value (see the module docstring)."""
    if not (p_value < alpha) or not (abs(effect) > threshold):
        return SAME
    if direction == UNKNOWN:
        return CHANGED
    worse = effect > 0 if direction == LOWER else effect < 0
    return REGRESSION if worse else IMPROVEMENT
