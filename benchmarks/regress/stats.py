"""The decision rule: is one set of samples worse than another, with statistics and a size threshold.

A metric regressed when a two-sided Mann-Whitney U test rejects equality (p < alpha, default 0.01) *and* the
effect ``median(head) / median(base) - 1`` is beyond the metric's threshold (default 10%) in the worse
direction. The same rule in the better direction is an improvement. Needing both keeps a tiny but consistent
shift (significant, harmless) and a large but noisy one (big, not significant) from failing a build.

Run-level error control: a run tests many metrics, and testing each at alpha makes *some* false alarm likely
(70 metrics at 0.01: ~50% of A/A runs flag one). Only the declared gating metrics can fail a run, and their
p-values are Holm-Bonferroni adjusted over that family (:func:`holm`), which bounds the probability of *any*
false regression in a run by alpha (family-wise error rate) under any dependence between the metrics. FWER, not
FDR (Benjamini-Hochberg), because the gate's contract is per run: "a run fails only when something regressed";
a gate that is wrong in 1 run out of 20 on purpose is the one users switch off.

:func:`min_detectable_effect` says what the run could have seen: the smallest relative shift of the median the
test would detect with the given power at the (adjusted) alpha, from the spread of the repetitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import comb
from scipy.stats import mannwhitneyu, t

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


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (same order as given; NaN counts as 1, results capped at 1).

    Reject hypothesis i at family-wise level alpha iff its adjusted p < alpha.
    """
    p = np.array([v if math.isfinite(v) else 1.0 for v in p_values], dtype=np.float64)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))  # monotone: never below an earlier step
        adjusted[i] = running
    return adjusted.tolist()


def min_attainable_p(n_base: int, n_head: int) -> float:
    """The smallest two-sided exact Mann-Whitney p-value for these sample sizes (complete separation)."""
    if n_base <= 0 or n_head <= 0:
        return 1.0
    return float(min(1.0, 2.0 / comb(n_base + n_head, n_head, exact=True)))


# Asymptotic relative efficiency of Mann-Whitney against the t-test on normal data: it needs ~1/0.955 as many
# samples for the same power. Used to turn a normal-theory detectable shift into the rank test's.
_MWU_ARE = 3.0 / math.pi


def min_detectable_effect(base: Sequence[float], head: Sequence[float], *, alpha: float,
                          power: float = 0.8) -> float:
    """Smallest relative median shift (fraction) detectable with ``power`` at two-sided ``alpha``.

    The spread is robust (1.4826 x MAD of each side around its own median, pooled), relative to the base median;
    the sizes are the run's. ``inf`` when the sizes cannot reach ``alpha`` at all (the exact test's smallest
    p-value is above it) or the base median is 0; NaN when a side has fewer than two samples.
    """
    b, h = _clean(base), _clean(head)
    if b.size < 2 or h.size < 2:
        return float("nan")
    if min_attainable_p(int(b.size), int(h.size)) >= alpha:
        return float("inf")
    centre = float(np.median(b))
    if centre == 0:
        return float("inf")
    dev = np.concatenate([np.abs(b - np.median(b)), np.abs(h - np.median(h))])
    sigma = 1.4826 * float(np.median(dev))
    n_eff = _MWU_ARE * 2.0 / (1.0 / b.size + 1.0 / h.size)  # harmonic mean size, scaled by the ARE
    # Student t quantiles (not normal ones) and the MAD's small-sample bias: with 9 repetitions a side the plain
    # normal formula promised shifts ~25% smaller than the exact rank test finds at the stated power.
    df = b.size + h.size - 2
    z = float(t.ppf(1.0 - alpha / 2.0, df) + t.ppf(power, df))
    sigma *= b.size / (b.size - 1.0) if b.size == h.size else (b.size + h.size) / (b.size + h.size - 2.0)
    return z * sigma * math.sqrt(2.0 / n_eff) / abs(centre)


def gate_family(comparisons: list[dict], gates: Callable[[str], bool], alpha: float, power: float = 0.8,
                samples: tuple[dict[str, list[float]], dict[str, list[float]]] | None = None) -> None:
    """Decide a run's comparisons (``Comparison.to_dict()`` rows) as one family, in place.

    Every row gets ``gating`` (``gates(metric)``), ``raw_verdict`` (its own test at alpha) and ``p_adjusted``.
    Gating rows are re-decided with Holm-adjusted p-values over the gating rows, so the chance that any of them
    flags a regression when nothing changed is at most ``alpha`` per run; other rows keep their per-metric
    verdict and are information only (they never fail a run). With ``samples`` (base, head values by metric),
    gating rows also get ``mde``: the smallest shift detectable with ``power`` at the Bonferroni level
    alpha / m (Holm's first step, the level the strongest effect must pass), and ``gateable`` = mde <= threshold.
    """
    gating_rows = [c for c in comparisons if gates(c["metric"])]
    adjusted = holm([c["p_value"] if c["p_value"] is not None else float("nan") for c in gating_rows])
    m = max(1, len(gating_rows))
    for c in comparisons:
        c["gating"] = False
        c["raw_verdict"] = c["verdict"]
        c["p_adjusted"] = None
    for c, p_adj in zip(gating_rows, adjusted, strict=True):
        c["gating"] = True
        c["p_adjusted"] = p_adj
        if c["verdict"] in (REGRESSION, IMPROVEMENT, CHANGED, SAME) and c["p_value"] is not None:
            effect = c["effect"] if c["effect"] is not None else float("nan")
            c["verdict"] = classify(effect, p_adj, direction=c["direction"], threshold=c["threshold"], alpha=alpha)
        if samples is not None:
            mde = min_detectable_effect(samples[0].get(c["metric"], []), samples[1].get(c["metric"], []),
                                        alpha=alpha / m, power=power)
            c["mde"] = None if math.isnan(mde) else (mde if math.isfinite(mde) else "inf")
            c["gateable"] = bool(math.isfinite(mde) and mde <= c["threshold"])
