"""Binance's quote-arrival estimators (caerus.research.calibrate.arrivals) on streams with known answers: batch
sizes drawn from the model's power law, a two-state rate with long spells, and the market model's own arrivals
(its settings recovered where the estimators are meant to recover them; docs/research.md says which are not)."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from caerus.research.calibrate import arrivals as ar
from caerus.sim.core.market import batch_size, binance_update_times
from caerus.sim.core.market_config import MarketConfig

S = 1_000_000_000


def test_a_batch_is_a_run_of_updates_less_than_1_ms_apart() -> None:
    first, sizes = ar.batches([0, 10, 999_999 + 10, 2_100_000, 5_000_000, 5_000_001])
    assert first.tolist() == [0, 3, 4] and sizes.tolist() == [3, 1, 2]
    assert ar.within_share([0, 10, 999_999 + 10, 2_100_000, 5_000_000, 5_000_001]) == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="sorted"):
        ar.batches([2, 1])


@pytest.mark.parametrize("alpha", [1.3, 1.6, 2.5])
def test_the_power_law_tail_is_recovered_from_drawn_batch_sizes(alpha: float) -> None:
    rng = random.Random(int(alpha * 10))
    sizes = [batch_size(rng, alpha, 100) for _ in range(20_000)]
    est = ar.power_law_alpha(sizes, 100)
    assert est.n == 20_000
    assert abs(est.value - alpha) < 3 * est.se  # within 3 SE of the truth
    assert est.se < 0.05
    assert math.isinf(ar.power_law_alpha([1] * 50).value)  # every batch a single update: no tail


def test_a_two_state_rate_with_long_spells_is_split_into_its_states() -> None:
    # quiet 50 updates/s for Exp(20 s), busy 200/s for Exp(10 s), one hour
    rng = np.random.default_rng(3)
    now, busy, times = 0.0, False, []
    while now < 3600.0:
        spell = rng.exponential(10.0 if busy else 20.0)
        rate = 200.0 if busy else 50.0
        n = rng.poisson(rate * spell)
        times.append(now + np.sort(rng.uniform(0.0, spell, n)))
        now += spell
        busy = not busy
    stamps = (np.concatenate(times) * 1e9).astype(np.int64)
    act = ar.activity(stamps)
    assert act.busy_hz / act.quiet_hz == pytest.approx(4.0, rel=0.15)
    assert act.busy_len_s.value == pytest.approx(10.0, rel=0.35)
    assert act.quiet_len_s.value == pytest.approx(20.0, rel=0.35)
    assert act.busy_share == pytest.approx(1 / 3, abs=0.08)
    assert act.bic_gain > 10  # two states describe these counts better than one


def test_the_models_own_arrivals_give_back_its_batches_and_rate() -> None:
    truth = dataclasses.replace(MarketConfig(), binance_rate_hz=100.0, burst_prob_per_s=0.9, burst_multiplier=3.2,
                                burst_len_s=0.86, binance_batch_alpha=1.6, binance_batch_gap_us=1.4)
    t = np.asarray(binance_update_times(truth, 1200.0, seed=5), dtype=np.int64)
    got = ar.estimate(t, seed=1, sim_s=1200.0)
    # the within-1 ms share and the mean rate are matched through the model, the batch law's tail and the inner
    # gaps are recovered; the burst settings are a two-state reading of the per-second spread (biased on the
    # model's own output, docs/research.md), so only their direction is checked
    assert got.binance_batch_alpha.value == pytest.approx(1.6, abs=0.08)
    assert got.binance_rate_hz.value == pytest.approx(100.0, rel=0.1)
    assert got.binance_batch_gap_us.value == pytest.approx(1.4, rel=0.05)
    assert got.burst_multiplier.value > 1.5
    assert got.cross_checks["within_1ms_share"] == pytest.approx(ar.within_share(t))
    refit = dataclasses.replace(truth, **got.settings())
    again = np.asarray(binance_update_times(refit, 1200.0, seed=9), dtype=np.int64)
    assert ar.within_share(again) == pytest.approx(ar.within_share(t), abs=0.01)
    assert again.size / 1200.0 == pytest.approx(t.size / 1200.0, rel=0.05)


def test_too_short_or_unsorted_streams_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 100 updates"):
        ar.estimate(np.arange(50) * 1_000_000)
    with pytest.raises(ValueError, match="sorted"):
        ar.estimate(np.arange(200)[::-1] * 1_000_000)
    with pytest.raises(ValueError, match="at least 10 windows"):
        ar.activity(np.arange(500) * 1_000_000)  # half a second
