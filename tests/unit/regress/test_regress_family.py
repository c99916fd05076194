"""Run-level error control, gating and the minimum detectable effect, on synthetic samples (seeded).

These drive the same decision code the runner uses (``compare`` per metric, then ``gate_family`` over the run),
with 9 repetitions a side as the runner's default.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.regress.stats import REGRESSION, compare, gate_family, holm, min_detectable_effect

REPS = 9
ALPHA = 0.01


def _run(rng: np.random.Generator, n_metrics: int, shift: dict[int, float] | None = None,
         noise: float = 0.05) -> list[dict]:
    """One simulated run: ``n_metrics`` latency metrics, base and head from the same distribution unless shifted."""
    rows = []
    for i in range(n_metrics):
        centre = 1000.0 * (1 + i % 7)
        base = centre * rng.lognormal(0.0, noise, REPS)
        head = centre * (1 + (shift or {}).get(i, 0.0)) * rng.lognormal(0.0, noise, REPS)
        rows.append(compare(f"m/{i}.p50", base, head, threshold=0.0, alpha=ALPHA).to_dict())
    return rows


def _regressions(rows: list[dict]) -> list[str]:
    return [r["metric"] for r in rows if r["gating"] and r["verdict"] == REGRESSION]


def test_holm_adjustment_matches_the_step_down_definition() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == [0.03, 0.06, 0.06, 0.02]
    assert holm([]) == []
    assert holm([float("nan"), 0.001]) == [1.0, 0.002]


@pytest.mark.slow
def test_200_equal_metrics_over_100_runs_keep_the_run_level_false_alarm_rate_at_most_5_percent() -> None:
    rng = np.random.default_rng(20261202)
    alarms_family = alarms_per_metric = 0
    for _ in range(100):
        rows = _run(rng, 200)
        alarms_per_metric += any(r["verdict"] == REGRESSION for r in rows)  # the old rule: every metric at alpha
        gate_family(rows, lambda m: True, ALPHA)
        alarms_family += bool(_regressions(rows))
    assert alarms_family <= 5, f"{alarms_family} of 100 A/A runs flagged a regression"
    # the per-metric rule is what the family control fixes: it must have cried wolf often on the same data
    assert alarms_per_metric > alarms_family


@pytest.mark.slow
def test_a_planted_20_percent_shift_in_one_gating_metric_is_still_caught() -> None:
    rng = np.random.default_rng(7)
    caught = 0
    gating = {f"m/{i}.p50" for i in range(6)}  # six declared gating metrics, the rest information
    for _ in range(50):
        rows = _run(rng, 200, shift={3: 0.20})
        gate_family(rows, lambda m: m in gating, ALPHA)
        found = _regressions(rows)
        assert set(found) <= {"m/3.p50"}, f"false gating regression(s) {found}"
        caught += found == ["m/3.p50"]
    assert caught >= 45, f"the planted 20% shift was caught in only {caught} of 50 runs"


def test_information_metrics_never_fail_a_run() -> None:
    rng = np.random.default_rng(11)
    rows = _run(rng, 10, shift={8: 0.5})
    gate_family(rows, lambda m: m == "m/0.p50", ALPHA)
    row = next(r for r in rows if r["metric"] == "m/8.p50")
    assert row["raw_verdict"] == REGRESSION and not row["gating"]
    assert _regressions(rows) == []


def test_the_mde_matches_a_planted_shift_it_says_it_can_see() -> None:
    rng = np.random.default_rng(5)
    noise = 0.05
    mdes = [min_detectable_effect(1000 * rng.lognormal(0, noise, REPS), 1000 * rng.lognormal(0, noise, REPS),
                                  alpha=ALPHA) for _ in range(200)]
    mde = float(np.median(mdes))
    assert 0.02 < mde < 0.2

    def detection_rate(shift: float) -> float:
        hits = 0
        for _ in range(200):
            base = 1000 * rng.lognormal(0, noise, REPS)
            head = 1000 * (1 + shift) * rng.lognormal(0, noise, REPS)
            hits += compare("m", base, head, threshold=0.0, alpha=ALPHA).verdict == REGRESSION
        return hits / 200

    # at the MDE the test has ~80% power by construction; well below it, far less; above it, nearly always
    assert 0.65 <= detection_rate(mde) <= 0.95
    assert detection_rate(0.4 * mde) < 0.35
    assert detection_rate(1.5 * mde) > 0.9


def test_mde_says_when_a_metric_is_too_noisy_to_gate() -> None:
    rng = np.random.default_rng(3)
    quiet = [compare("q", 1000 * rng.lognormal(0, 0.01, REPS), 1000 * rng.lognormal(0, 0.01, REPS),
                     threshold=0.10, alpha=ALPHA).to_dict()]
    noisy = [compare("n", 1000 * rng.lognormal(0, 0.4, REPS), 1000 * rng.lognormal(0, 0.4, REPS),
                     threshold=0.10, alpha=ALPHA).to_dict()]
    for rows in (quiet, noisy):
        base = {rows[0]["metric"]: list(1000 * rng.lognormal(0, 0.01 if rows is quiet else 0.4, REPS))}
        head = {rows[0]["metric"]: list(1000 * rng.lognormal(0, 0.01 if rows is quiet else 0.4, REPS))}
        gate_family(rows, lambda m: True, ALPHA, samples=(base, head))
    assert quiet[0]["gateable"] is True and quiet[0]["mde"] < 0.10
    assert noisy[0]["gateable"] is False and noisy[0]["mde"] > 0.10


def test_sizes_that_cannot_reach_alpha_report_an_infinite_mde() -> None:
    assert min_detectable_effect([1.0, 1.1, 0.9], [1.0, 1.2, 1.05], alpha=0.01) == float("inf")
