"""The decision rule on synthetic samples: planted shifts are caught, equal distributions are not flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.regress.stats import (
    CHANGED,
    HIGHER,
    IMPROVEMENT,
    INSUFFICIENT,
    NO_BASE,
    NO_HEAD,
    REGRESSION,
    SAME,
    UNKNOWN,
    classify,
    compare,
    relative_effect,
)


def _samples(rng: np.random.Generator, median: float, noise: float, n: int = 9) -> np.ndarray:
    return median * (1 + rng.normal(0, noise, n))


def test_planted_regression_is_caught() -> None:
    rng = np.random.default_rng(7)
    c = compare("x/hop.p50", _samples(rng, 1000, 0.03), _samples(rng, 1200, 0.03))
    assert c.verdict == REGRESSION
    assert c.p_value < 0.01
    assert 0.12 < c.effect < 0.28
    assert c.prob_head_greater > 0.9
    assert (c.n_base, c.n_head) == (9, 9)


def test_planted_improvement_is_reported() -> None:
    rng = np.random.default_rng(8)
    c = compare("x/hop.p50", _samples(rng, 1000, 0.03), _samples(rng, 700, 0.03))
    assert c.verdict == IMPROVEMENT and c.effect < -0.2


def test_equal_distributions_are_not_flagged_across_many_trials() -> None:
    rng = np.random.default_rng(11)
    verdicts = [compare("x", _samples(rng, 1000, 0.05), _samples(rng, 1000, 0.05)).verdict for _ in range(500)]
    assert verdicts.count(REGRESSION) == 0
    assert verdicts.count(IMPROVEMENT) == 0


def test_equal_heavy_tailed_distributions_rarely_reject() -> None:
    # with the size threshold at 0 the rank test alone decides: its false-positive rate stays near alpha
    rng = np.random.default_rng(12)
    flagged = sum(compare("x", rng.lognormal(7, 0.5, 9), rng.lognormal(7, 0.5, 9), threshold=0.0).verdict != SAME
                  for _ in range(1000))
    assert flagged < 30  # alpha 0.01 -> ~10 expected


def test_significant_but_small_shift_is_not_a_regression() -> None:
    rng = np.random.default_rng(3)
    c = compare("x", _samples(rng, 1000, 0.005), _samples(rng, 1050, 0.005))
    assert c.p_value < 0.01
    assert c.verdict == SAME  # 5% < 10% threshold
    assert compare("x", _samples(rng, 1000, 0.005), _samples(rng, 1050, 0.005), threshold=0.02).verdict == REGRESSION


def test_large_but_noisy_shift_is_not_a_regression() -> None:
    c = compare("x", [1000, 1000, 1000, 5000, 1000, 1000, 1000, 1000, 5000],
                [1000, 5000, 1000, 5000, 1000, 1000, 5000, 5000, 5000])
    assert c.effect > 1.0
    assert c.p_value >= 0.01
    assert c.verdict == SAME


def test_higher_is_better_direction() -> None:
    rng = np.random.default_rng(5)
    base, lower = _samples(rng, 10.0, 0.02), _samples(rng, 7.0, 0.02)
    assert compare("x/ratio.speedup", base, lower, direction=HIGHER).verdict == REGRESSION
    assert compare("x/ratio.speedup", lower, base, direction=HIGHER).verdict == IMPROVEMENT


def test_unknown_direction_reports_changed_never_regression() -> None:
    rng = np.random.default_rng(6)
    c = compare("x/ratio.odd", _samples(rng, 10.0, 0.02), _samples(rng, 15.0, 0.02), direction=UNKNOWN)
    assert c.verdict == CHANGED


def test_smallest_p_value_with_nine_per_side_is_far_below_alpha() -> None:
    c = compare("x", list(range(1, 10)), list(range(100, 109)))
    assert c.p_value == pytest.approx(2 / math.comb(18, 9), rel=1e-6)  # ~4.1e-5
    assert c.verdict == REGRESSION


def test_identical_samples_and_missing_sides() -> None:
    same = compare("x", [5.0] * 9, [5.0] * 9)
    assert same.verdict == SAME and same.p_value == 1.0 and same.effect == 0.0
    assert compare("x", [], [1.0] * 9).verdict == NO_BASE
    assert compare("x", [1.0] * 9, []).verdict == NO_HEAD
    assert compare("x", [1.0, 2.0], [1.0] * 9).verdict == INSUFFICIENT


def test_non_finite_samples_are_dropped_not_compared() -> None:
    c = compare("x", [1.0, float("nan"), 2.0, 3.0], [1.0, 2.0, float("inf"), 3.0])
    assert (c.n_base, c.n_head) == (3, 3)
    d = c.to_dict()
    assert d["metric"] == "x" and all(not (isinstance(v, float) and math.isnan(v)) for v in d.values())


def test_bad_direction_or_threshold_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="direction for 'm'"):
        compare("m", [1.0] * 3, [1.0] * 3, direction="sideways")
    with pytest.raises(ValueError, match="threshold for 'm'"):
        compare("m", [1.0] * 3, [1.0] * 3, threshold=-0.1)


def test_effect_and_classify_edges() -> None:
    assert relative_effect(0.0, 0.0) == 0.0
    assert relative_effect(0.0, 5.0) == math.inf
    assert relative_effect(100.0, 150.0) == pytest.approx(0.5)
    assert classify(0.5, 0.02, direction="lower", threshold=0.1, alpha=0.01) == SAME
    assert classify(0.10, 0.001, direction="lower", threshold=0.1, alpha=0.01) == SAME  # strictly beyond
    assert classify(0.11, 0.001, direction="lower", threshold=0.1, alpha=0.01) == REGRESSION
