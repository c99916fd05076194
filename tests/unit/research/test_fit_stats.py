"""The goodness-of-fit statistics and distances (caerus.research.fit_stats) on synthetic streams with known answers:
a Poisson process's inter-arrivals are exponential, a random walk's returns have the sd it was given, a copy of a
stream shifted by a lag peaks at that lag, and a stream compared with itself is at distance 0."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from caerus.research import fit_stats as fs

MS = 1_000_000
S = 1_000_000_000


def poisson_quotes(rate_hz: float, seconds: float, seed: int, tick: float = 0.1) -> fs.Quotes:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1e9 / rate_hz, int(rate_hz * seconds * 1.2))).astype(np.int64)
    t = t[t < seconds * 1e9]
    bid = np.full(t.size, 100.0)
    return fs.Quotes.of("poisson", t, bid, bid + tick, tick)


def test_a_poisson_process_inter_arrivals_are_its_exponential() -> None:
    rate = 200.0
    q = poisson_quotes(rate, 600, seed=1)
    gaps = fs.inter_arrivals_ms(q)
    exp = np.random.default_rng(2).exponential(1000.0 / rate, gaps.size)
    same = fs.ks(gaps, exp)
    assert same.kind == "ks" and same.n_real == gaps.size and same.n_model == exp.size
    assert same.value < 0.02  # D of two samples of one law: ~1.36 sqrt(2/n) = 0.005 at 95 %
    assert fs.ks(gaps, np.random.default_rng(3).exponential(1000.0 / (2 * rate), gaps.size)).value > 0.2
    # the share within 1 ms is the exponential's CDF at 1 ms, and the gap quantiles its quantiles
    assert np.mean(gaps < 1.0) == pytest.approx(1.0 - math.exp(-rate / 1000.0), abs=0.01)
    for p in (10, 50, 90, 99):
        assert np.percentile(gaps, p) == pytest.approx(sps.expon(scale=1000.0 / rate).ppf(p / 100), rel=0.05)
    # and a Poisson count per second: mean = variance = rate
    per_s = fs.updates_per_window(q)
    assert per_s.size == 599  # whole windows only
    assert per_s.mean() == pytest.approx(rate, rel=0.02)
    assert per_s.var() / per_s.mean() == pytest.approx(1.0, abs=0.2)


def test_bursts_are_runs_of_updates_less_than_1_ms_apart() -> None:
    t = np.array([0, 500_000, 900_000, 3 * MS, 3 * MS + 999_999, 10 * MS, 11 * MS], dtype=np.int64)
    q = fs.Quotes.of("b", t, np.ones(t.size), np.ones(t.size) * 1.1, 0.1)
    assert fs.burst_sizes(q).tolist() == [3, 2, 1, 1]  # 1 ms exactly is a new burst
    # a Poisson process at rate r: a burst continues with probability 1 - e^(-r 1 ms), so its size is geometric
    p = poisson_quotes(300, 600, seed=4)
    sizes = fs.burst_sizes(p)
    cont = 1.0 - math.exp(-0.3)
    assert sizes.mean() == pytest.approx(1.0 / (1.0 - cont), rel=0.03)


def test_spreads_in_ticks_and_bp() -> None:
    bid = np.array([100.0, 100.0, 100.0, 99.9])
    ask = np.array([100.1, 100.2, 100.1, 100.3])
    q = fs.Quotes.of("s", np.arange(4, dtype=np.int64), bid, ask, 0.1)
    assert fs.spread_ticks(q).tolist() == [1, 2, 1, 4]
    assert fs.spread_bps(q)[0] == pytest.approx(0.1 / 100.05 * 1e4)


def test_a_random_walk_returns_have_the_sd_it_was_given_and_no_excess_kurtosis() -> None:
    rng = np.random.default_rng(5)
    step = 10 * MS
    n = 360_000  # an hour of 10 ms steps
    sd_1s_bp = 2.0
    x = np.cumsum(rng.normal(0.0, sd_1s_bp / 1e4 / math.sqrt(100), n))
    t = np.arange(n, dtype=np.int64) * step
    mid = 60_000.0 * np.exp(x)
    q = fs.Quotes.of("rw", t, mid - 0.05, mid + 0.05, 0.1)
    r1 = fs.returns_bps(q, S)
    r100 = fs.returns_bps(q, 100 * MS)
    assert r1.size == 3599 and r100.size == 35999
    assert r1.std() == pytest.approx(sd_1s_bp, rel=0.05)
    assert r100.std() == pytest.approx(sd_1s_bp / math.sqrt(10), rel=0.03)
    assert abs(fs.excess_kurtosis(r100)) < 0.15
    assert fs.excess_kurtosis(rng.laplace(size=100_000)) == pytest.approx(3.0, abs=0.2)
    assert math.isnan(fs.excess_kurtosis([1.0, 2.0]))  # too few values: NaN, never a number from nothing


def test_a_copy_shifted_by_a_lag_peaks_at_that_lag() -> None:
    rng = np.random.default_rng(6)
    t = np.cumsum(rng.exponential(5 * MS, 60_000)).astype(np.int64)
    mid = 60_000.0 * np.exp(np.cumsum(rng.normal(0.0, 1e-5, t.size)))
    a = fs.Quotes.of("a", t, mid - 0.05, mid + 0.05, 0.1)
    b = fs.Quotes.of("b", t + 200 * MS, mid - 0.05, mid + 0.05, 0.1)
    lags = np.arange(-500.0, 1001.0, 10.0)
    curve = fs.lead_lag(a, b, lags)
    assert curve.peak_ms == 200.0
    assert curve.peak > 0.95
    assert fs.lead_lag(b, a, lags).peak_ms == -200.0
    assert fs.curve_sup(curve, curve).value == 0.0
    back = fs.lead_lag(b, a, lags)
    assert fs.peak_shift(curve, back).value == -400.0
    assert fs.curve_sup(curve, back).value > 0.9


def test_distances_have_known_values_and_carry_both_sample_sizes() -> None:
    a = np.arange(100.0)
    assert fs.ks(a, a).value == 0.0
    assert fs.ks(a, a + 1000).value == 1.0
    assert fs.wasserstein(a, a + 3.0).value == pytest.approx(3.0)
    d = fs.rel_err(200.0, 150.0, 10, 20)
    assert (d.kind, d.value, d.n_real, d.n_model) == ("rel", -0.25, 10, 20)
    assert d.text() == "-25%"
    assert fs.rel_err(2.0, 50.0, 1, 1).text() == "x25"  # far off: a ratio, not +2400%
    assert math.isnan(fs.rel_err(0.0, 1.0, 1, 1).value)
    few = fs.ks([1.0, 2.0], a)
    assert math.isnan(few.value) and few.n_real == 2 and few.text() == "n/a"


def test_a_stream_compared_with_itself_is_at_distance_zero_in_every_row() -> None:
    s = fs.samples(poisson_quotes(150, 120, seed=7))
    rows = fs.compare(s, {"same": s})
    assert [r.group for r in rows] == sorted((r.group for r in rows), key=fs.GROUPS.index)
    assert {r.group for r in rows} == set(fs.GROUPS)
    for r in rows:
        for key, d in r.distances.items():
            if math.isfinite(d.value):
                assert d.value == 0.0, (r.stat, key)
    mean = next(r for r in rows if r.stat == "updates per second, mean")
    assert mean.values["real"] == pytest.approx(150, rel=0.05)
    assert mean.distances["same"].n_real == s.updates


def test_pooled_runs_keep_each_runs_own_gaps() -> None:
    a, b = fs.samples(poisson_quotes(100, 10, seed=8)), fs.samples(poisson_quotes(100, 10, seed=9))
    pooled = fs.pool([a, b])
    assert pooled.gaps_ms.size == a.gaps_ms.size + b.gaps_ms.size  # no gap across the two runs
    assert pooled.updates == a.updates + b.updates and pooled.seconds == a.seconds + b.seconds


def test_bad_streams_are_refused_naming_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="x: update times are not sorted"):
        fs.Quotes.of("x", [2, 1], [1.0, 1.0], [1.1, 1.1], 0.1)
    with pytest.raises(ValueError, match="differ in length"):
        fs.Quotes.of("x", [1, 2], [1.0], [1.1, 1.1], 0.1)
    with pytest.raises(ValueError, match="tick must be > 0"):
        fs.Quotes.of("x", [1], [1.0], [1.1], 0.0)
    q = fs.Quotes.of("x", [1, 2, 3], [1.0, float("nan"), 1.0], [1.1, 1.1, 0.9], 0.1)
    assert q.t.tolist() == [1]  # one-sided and crossed books are not quotes
