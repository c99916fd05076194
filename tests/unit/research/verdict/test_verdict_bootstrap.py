"""The verdict's intervals respect time: blocks stay inside one timeline, are at least the regime scale, grow with
the data's own dependence, cover the truth on dependent data where independent resampling does not, and too few
blocks is insufficient data."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.research.verdict import bootstrap


def _ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def test_blocks_never_cross_from_one_timeline_into_another() -> None:
    """Two timelines, one all 1s and one all 1000s: every drawn block lies in one of them, so each replicate's
    draws come in runs of whole blocks taken from a single timeline."""
    a, b = np.ones(50), np.full(30, 1000.0)
    p = bootstrap.plan([a, b], 10.0, min_block_s=100.0, min_blocks=1)
    assert p.block_buckets == 10
    starts = bootstrap.block_starts(p)
    assert starts.tolist() == list(range(0, 41)) + list(range(50, 71))  # a block fits inside its timeline
    w = bootstrap.weights(p, 300, seed=1)
    assert np.allclose(w.sum(axis=1), 80)  # each replicate holds as many buckets as the data
    # the first timeline's last bucket (49) is covered only by the block starting at 40: 1 of 62 starts, 8 blocks a
    # replicate -> 0.13 draws on average; blocks allowed to straddle (starts 0..70) would cover it from 10 of 71
    # starts -> 1.13
    assert w[:, 49].mean() == pytest.approx(8 / 62, abs=0.08)
    assert w[:, 45].mean() == pytest.approx(6 * 8 / 62, abs=0.2)  # covered from starts 36..40


def test_the_block_is_at_least_the_regime_scale_and_longer_for_dependent_data() -> None:
    rng = np.random.default_rng(3)
    white = bootstrap.plan([rng.normal(size=2000)], 10.0, min_block_s=0.0)
    sticky = bootstrap.plan([_ar1(2000, 0.9, rng)], 10.0, min_block_s=0.0)
    assert white.auto_buckets < 3 < 10 < sticky.auto_buckets
    floored = bootstrap.plan([rng.normal(size=2000)], 10.0)
    assert floored.block_s == bootstrap.MIN_BLOCK_S  # white noise still gets regime-long blocks


@pytest.mark.parametrize(("minutes", "sufficient"), [(1.0, False), (6.0, False), (40.0, True)])
def test_too_few_blocks_is_insufficient(minutes: float, sufficient: bool) -> None:
    """One minute (the old docs' passing example had one block) and six minutes hold fewer than 10 blocks of 240 s;
    40 minutes hold 10."""
    n = int(minutes * 6)
    p = bootstrap.plan([np.random.default_rng(1).normal(size=n)], 10.0)
    assert p.sufficient is sufficient
    assert p.describe()["sufficient"] is sufficient


@pytest.mark.slow
def test_moving_blocks_cover_the_truth_on_dependent_data_where_independent_draws_do_not() -> None:
    """AR(1) PnL with mean 0 and strong persistence (regimes): the block interval of the total covers 0 about 95 %
    of the time; resampling buckets one by one (blocks of 1) covers it far less often."""
    rng = np.random.default_rng(11)
    cover = {"blocks": 0, "independent": 0}
    trials = 120
    for k in range(trials):
        x = _ar1(600, 0.9, rng)
        for name, floor in (("blocks", 200.0), ("independent", 0.0)):
            p = bootstrap.plan([x], 10.0, min_block_s=floor, min_blocks=1)
            if name == "independent":
                p = bootstrap.BlockPlan(10.0, 1, 1, p.auto_buckets, p.n_buckets, p.n_buckets, 1, p.lengths)
            ci = bootstrap.interval(bootstrap.weights(p, 400, seed=k) @ x)
            assert ci is not None
            cover[name] += ci[0] <= 0.0 <= ci[1]
    assert cover["blocks"] / trials > 0.8
    assert cover["independent"] / trials < 0.5


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="bucket_s must be > 0"):
        bootstrap.plan([np.zeros(5)], 0.0)
