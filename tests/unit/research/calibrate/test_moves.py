"""caerus.research.calibrate.moves on synthetic Binance series whose flickers and jumps are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from caerus.research.calibrate import moves as mv

MS = 1_000_000
BP = 1e-4


def quotes(events: list[tuple[int, float]], end_ns: int, step_ns: int = 10 * MS) -> tuple[np.ndarray, np.ndarray]:
    """A flat log price quoted every ``step_ns`` with level changes ``(time, log move)`` applied from that time."""
    t = np.arange(0, end_ns, step_ns, dtype=np.int64)
    x = np.zeros(t.size)
    for when, move in events:
        x[t >= when] += move
    return t, x


def test_classify_moves_tells_flickers_from_jumps_and_times_the_direct_pairs() -> None:
    # two flickers (up 20 bp for 300 ms, down 12 bp for 800 ms) and two jumps that never revert
    events = [(1000 * MS, 20 * BP), (1300 * MS, -20 * BP), (3000 * MS, 15 * BP), (6000 * MS, -12 * BP),
              (6800 * MS, 12 * BP), (11000 * MS, -25 * BP)]
    t, x = quotes(events, 15_000 * MS)
    got = mv.classify_moves(t, x, 5 * BP, 3000 * MS)
    assert got.direct.tolist() == [300 * MS, 800 * MS]
    assert got.direct_t.tolist() == [1000 * MS, 6000 * MS]
    assert got.jumps.t.tolist() == [3000 * MS, 11000 * MS] and got.raw_jumps == 2
    assert got.jumps.size == pytest.approx([15 * BP, -25 * BP])
    assert got.candidates_t.size == 6 and got.near_miss.size == 0


def test_classify_moves_records_a_near_miss_as_a_placebo_not_a_pair() -> None:
    # a 20 bp rise and a 16 bp fall 500 ms later: 4 bp apart, inside the near-miss band (3..9 x 1 bp), not a pair
    t, x = quotes([(1000 * MS, 20 * BP), (1500 * MS, -16 * BP)], 6000 * MS)
    got = mv.classify_moves(t, x, 5 * BP, 3000 * MS)
    assert got.direct.size == 0 and got.raw_jumps == 2
    assert got.near_miss.tolist() == [500 * MS]
    assert got.near_miss_scale == pytest.approx(1 / 6)


def test_classify_moves_rejects_a_threshold_or_window_that_is_not_positive() -> None:
    t, x = quotes([], 1000 * MS)
    with pytest.raises(ValueError, match="jump threshold must be > 0"):
        mv.classify_moves(t, x, 0.0, 3000 * MS)
    with pytest.raises(ValueError, match="flicker window must be > 0"):
        mv.classify_moves(t, x, 5 * BP, 0)


def competing(rng: np.random.Generator, n: int, mean: float, hazard: float) -> np.ndarray:
    """Lifetimes of flickers that ended by themselves before the next flicker replaced them."""
    end = rng.exponential(mean, n)
    replaced = rng.exponential(1.0 / hazard, n) if hazard > 0 else np.full(n, np.inf)
    return end[end < replaced]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flicker_lifetime_takes_out_false_pairs_and_replacement(seed: int) -> None:
    rng = np.random.default_rng(seed)
    window, mean, hazard = 3000.0, 400.0, 0.6e-3  # ms, ms, per ms (0.6 flickers a second)
    true_pairs = competing(rng, 3000, mean, hazard)
    # false pairs: coincidences spread over the window, 1 per 6 near misses (the bands' width ratio)
    near = rng.uniform(0.0, window, 1800)
    false = rng.uniform(0.0, window, 300)
    got = mv.flicker_lifetime(np.concatenate([true_pairs, false]), near, 1 / 6, window, hazard)
    assert abs(got.value - mean) <= 3 * got.se, (got, mean)
    assert 0 < got.se < 0.05 * mean and abs(got.n - true_pairs.size) < 0.1 * true_pairs.size
    # each correction matters: without either the estimate is off by more than 4 SE (the test can fail)
    pairs = np.concatenate([true_pairs, false])
    no_placebo = mv.flicker_lifetime(pairs, [], 1 / 6, window, hazard)
    no_replacement = mv.flicker_lifetime(pairs, near, 1 / 6, window, 0.0)
    assert no_placebo.value - mean > 4 * got.se and mean - no_replacement.value > 4 * got.se


def test_flicker_lifetime_without_false_pairs_or_replacement_is_the_truncated_mle() -> None:
    rng = np.random.default_rng(4)
    d = rng.exponential(250.0, 4000)
    d = d[d < 3000.0]
    got = mv.flicker_lifetime(d, [], 1 / 6, 3000.0)
    assert got.value == pytest.approx(250.0, rel=0.05) and got.n == d.size


def test_flicker_lifetime_refuses_too_few_pairs_and_a_hazard_above_the_rate() -> None:
    with pytest.raises(ValueError, match="at least 2 direct pairs, got 1"):
        mv.flicker_lifetime([300.0], [], 1 / 6, 3000.0)
    with pytest.raises(ValueError, match="replacement hazard"):
        mv.flicker_lifetime([300.0, 310.0, 290.0], [], 1 / 6, 3000.0, replace_hazard=1.0)
    with pytest.raises(ValueError, match="window"):
        mv.flicker_lifetime([300.0, 310.0], [], 1 / 6, math.inf)


def test_share_is_a_proportion_with_its_binomial_se_and_nan_for_nothing() -> None:
    got = mv.share(30, 100)
    assert got.value == 0.3 and got.se == pytest.approx(math.sqrt(0.21 / 100)) and got.n == 100
    empty = mv.share(0, 0)
    assert math.isnan(empty.value) and empty.n == 0


def test_uniform_bounds_robust_recovers_the_range_despite_outliers() -> None:
    rng = np.random.default_rng(5)
    s = np.concatenate([rng.uniform(8.0, 30.0, 2000), [60.0, 70.0, 1.0]])  # three merged or split moves
    lo, hi = mv.uniform_bounds_robust(s)
    assert lo.value == pytest.approx(8.0, abs=0.6) and hi.value == pytest.approx(30.0, abs=0.6)
    assert lo.n == s.size and 0 < lo.se < 0.6
    with pytest.raises(ValueError, match="at least 5 samples, got 4"):
        mv.uniform_bounds_robust([1.0, 2.0, 3.0, 4.0])
