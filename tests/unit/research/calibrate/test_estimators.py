"""The calibration estimators on synthetic series whose answers are known (caerus.research.calibrate.estimators)."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate.lag_law import lognormal_law

MS = 1_000_000


def brownian(rng: np.random.Generator, seconds: float, sigma_per_sqrt_s: float, step_ns: int = MS):
    """A latent Brownian log price on a fine grid: (times, values)."""
    n = int(seconds * 1e9 / step_ns)
    t = np.arange(n, dtype=np.int64) * step_ns
    x = np.cumsum(rng.normal(0.0, sigma_per_sqrt_s * np.sqrt(step_ns / 1e9), n))
    return t, x


def poisson_times(rng: np.random.Generator, rate_hz: float, end_ns: int) -> np.ndarray:
    n = int(rate_hz * end_ns / 1e9 * 1.2) + 10
    t = np.cumsum(rng.exponential(1e9 / rate_hz, n)).astype(np.int64)
    return np.unique(t[t < end_ns])


def observe(t_lat: np.ndarray, x_lat: np.ndarray, at: np.ndarray) -> np.ndarray:
    return est.previous_tick(t_lat, x_lat, at)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hy_and_cross_correlation_peak_at_the_lag_of_asynchronous_lagged_paths(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lag = 230 * MS
    t_lat, x_lat = brownian(rng, 600.0, 1e-3)
    ta = poisson_times(rng, 50.0, t_lat[-1])
    tb = poisson_times(rng, 12.0, t_lat[-1])
    tb = tb[tb >= lag]
    xa = observe(t_lat, x_lat, ta)
    xb = observe(t_lat, x_lat, tb - lag)  # B shows A's price lag ago
    lags = np.arange(0, 501 * MS, 10 * MS)
    _, corr = est.hayashi_yoshida(ta, xa, tb, xb, lags)
    assert abs(est.peak_lag(lags, corr) - lag) <= 15 * MS
    assert corr.max() > 0.5 and corr[0] < 0.5 * corr.max()  # a real peak, not a flat curve
    cc = est.cross_correlation(ta, xa, tb, xb, lags, 100 * MS)
    assert abs(est.peak_lag(lags, cc) - lag) <= 30 * MS


def test_hy_matches_the_double_loop_definition() -> None:
    rng = np.random.default_rng(7)
    ta = np.sort(rng.choice(10_000, 60, replace=False)).astype(np.int64)
    tb = np.sort(rng.choice(10_000, 25, replace=False)).astype(np.int64)
    xa, xb = rng.normal(size=ta.size), rng.normal(size=tb.size)
    lags = np.array([-700, -50, 0, 13, 400, 2500], dtype=np.int64)
    cov, _ = est.hayashi_yoshida(ta, xa, tb, xb, lags)
    for k, lag in enumerate(lags):
        sb = tb - lag
        ref = 0.0
        for i in range(1, ta.size):
            for j in range(1, sb.size):
                if max(ta[i - 1], sb[j - 1]) < min(ta[i], sb[j]):
                    ref += (xa[i] - xa[i - 1]) * (xb[j] - xb[j - 1])
        assert cov[k] == pytest.approx(ref, abs=1e-12)


def test_hy_on_synchronous_ticks_is_the_realised_covariance() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(500, dtype=np.int64) * 1000
    xa, xb = np.cumsum(rng.normal(size=500)), np.cumsum(rng.normal(size=500))
    cov, _ = est.hayashi_yoshida(t, xa, t, xb, [0])
    assert cov[0] == pytest.approx(float(np.dot(np.diff(xa), np.diff(xb))))


def test_cross_correlation_of_a_path_with_itself_is_one_at_zero_lag() -> None:
    rng = np.random.default_rng(4)
    t, x = brownian(rng, 30.0, 1e-3)
    cc = est.cross_correlation(t, x, t, x, [0, 50 * MS], 10 * MS)
    assert cc[0] == pytest.approx(1.0)
    assert abs(cc[1]) < 0.2


def test_peak_lag_refines_between_grid_points() -> None:
    lags = np.arange(0, 100, 10)
    assert est.peak_lag(lags, -((lags - 43.0) ** 2)) == pytest.approx(43.0)
    assert est.peak_lag(lags, lags.astype(float)) == 90.0  # at the edge: the grid point
    with pytest.raises(ValueError, match="no finite value"):
        est.peak_lag([0, 1], [np.nan, np.nan])


@pytest.mark.parametrize("noise_bps", [0.0, 0.5, 1.0])
def test_roll_noise_share_matches_the_noise_variance(noise_bps: float) -> None:
    rng = np.random.default_rng(5)
    n, sd_m, sd_e = 200_000, 1e-4, noise_bps * 1e-4
    x = np.cumsum(rng.normal(0.0, sd_m, n)) + rng.normal(0.0, sd_e, n)
    noise = est.roll_noise(np.diff(x))
    truth = 2 * sd_e**2 / (sd_m**2 + 2 * sd_e**2)
    assert abs(noise.share.value - truth) <= max(4 * noise.share.se, 0.01)
    assert noise.noise_sd == pytest.approx(sd_e, abs=0.1 * sd_m)


@pytest.mark.parametrize("noise_bps", [0.0, 1.0])
def test_realised_vol_recovers_sigma_with_jumps_left_out_and_noise_taken_off(noise_bps: float) -> None:
    rng = np.random.default_rng(6)
    sigma_annual = 0.5
    per_sqrt_s = sigma_annual / np.sqrt(est.SECONDS_PER_YEAR)
    t, x = brownian(rng, 3600.0, per_sqrt_s, step_ns=10 * MS)
    jump_at = rng.choice(t.size, 40, replace=False)
    for i in jump_at:
        x[i:] += rng.choice([-1, 1]) * 30e-4  # 30 bp jumps, 40 of them
    x = x + rng.normal(0.0, noise_bps * 1e-4, x.size)
    vol = est.realised_vol(t, x, 1000 * MS, exclude=t[jump_at], noise_var=(noise_bps * 1e-4) ** 2)
    assert abs(vol.value - sigma_annual) <= 3 * vol.se
    assert vol.se < 0.05 * sigma_annual
    with_jumps = est.realised_vol(t, x, 1000 * MS, noise_var=(noise_bps * 1e-4) ** 2, truncate_sd=0)
    assert with_jumps.value > 1.5 * sigma_annual  # the jumps would have inflated it
    truncated = est.realised_vol(t, x, 1000 * MS, noise_var=(noise_bps * 1e-4) ** 2)
    assert abs(truncated.value - sigma_annual) <= 3 * truncated.se  # the threshold alone catches 30 bp jumps
    if noise_bps:
        uncorrected = est.realised_vol(t, x, 1000 * MS, exclude=t[jump_at])
        assert uncorrected.value - sigma_annual > 3 * vol.se  # and so would the noise


def test_detect_jumps_finds_persistent_moves_not_reverting_spikes() -> None:
    t = np.arange(1000, dtype=np.int64) * 10 * MS
    x = np.zeros(1000)
    x[300:] += 20e-4  # a jump that stays
    x[600:] -= 15e-4
    x[800] += 25e-4  # a one-tick spike that reverts
    jumps = est.detect_jumps(t, x, threshold=5e-4)
    assert jumps.index.tolist() == [300, 600]
    assert jumps.size == pytest.approx([20e-4, -15e-4])
    assert jumps.t.tolist() == [t[300], t[600]]


def test_detect_jumps_merges_moves_within_the_dead_time() -> None:
    t = np.arange(100, dtype=np.int64) * 10 * MS
    x = np.zeros(100)
    x[30:] += 10e-4
    x[32:] += 10e-4  # the same event finishing two ticks later
    assert est.detect_jumps(t, x, 5e-4, dead_ns=100 * MS).index.tolist() == [30]
    assert est.detect_jumps(t, x, 5e-4, dead_ns=0).index.tolist() == [30, 32]


def test_uniform_bounds_cover_the_true_range() -> None:
    rng = np.random.default_rng(8)
    lo, hi = est.uniform_bounds(rng.uniform(10.0, 40.0, 300))
    assert abs(lo.value - 10.0) <= 3 * lo.se and abs(hi.value - 40.0) <= 3 * hi.se
    assert lo.se < 0.5


def _leader_follower(seed: int, lag_median_ms: float, lag_sd_ms: float, catch: float = 1.0):
    """Leader: 100 Hz Poisson ticks of a path with 20 bp jumps every ~3 s; follower: a 70 +- 15 ms block clock,
    each block showing the leader's book as it was one drawn lag earlier (a lag per block), moved `catch` of the
    way from its previous value."""
    rng = np.random.default_rng(seed)
    end = 1200 * 1000 * MS
    t_lat, x_lat = brownian(rng, end / 1e9, 2e-5)
    jumps = np.sort(rng.choice(t_lat.size, 400, replace=False))
    steps = np.zeros(t_lat.size)
    steps[jumps] = rng.choice([-1.0, 1.0], jumps.size) * 20e-4
    x_lat = x_lat + np.cumsum(steps)
    ta = poisson_times(rng, 100.0, end)
    xa = observe(t_lat, x_lat, ta)
    tb = np.cumsum(rng.uniform(55.0, 85.0, int(end / (55 * MS))) * MS).astype(np.int64)
    tb = tb[(tb < end) & (tb > 1000 * MS)]
    lags = rng.normal(lag_median_ms, lag_sd_ms, tb.size) * MS
    target = observe(ta, xa, (tb - lags).astype(np.int64))  # the leader's book as it was one lag earlier
    xb = np.empty(tb.size)
    level = target[0]
    for k in range(tb.size):
        level += catch * (target[k] - level)
        xb[k] = level
    return ta, xa, tb, xb


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_per_move_matching_recovers_the_lag_law(seed: int) -> None:
    ta, xa, tb, xb = _leader_follower(seed, 300.0, 40.0)
    moves = est.detect_jumps(ta, xa, threshold=10e-4, dead_ns=500 * MS)
    assert moves.index.size > 300
    m = est.match_moves(ta, xa, moves, tb, xb, share=0.5)
    assert m.matched.mean() > 0.95
    ok = m.matched
    law = lognormal_law(m.lo[ok], m.hi[ok], np.full(int(ok.sum()), 2000.0 * MS), 2000 * MS, n_boot=100)
    assert abs(law.median.value - 300) <= max(3 * law.median.se, 10)
    assert abs(law.sd.value - 40) <= max(3 * law.sd.se, 10)


def test_per_move_matching_sees_a_constant_lag_as_no_dispersion() -> None:
    ta, xa, tb, xb = _leader_follower(21, 150.0, 0.0)
    moves = est.detect_jumps(ta, xa, threshold=10e-4, dead_ns=500 * MS)
    m = est.match_moves(ta, xa, moves, tb, xb)
    assert m.matched.mean() > 0.98  # a move and its reverse inside one block can leave nothing to see
    ok = m.matched
    assert np.all(m.lo[ok] < 150 * MS) and np.all(m.hi[ok] >= 150 * MS)  # every interval holds the lag
    law = lognormal_law(m.lo[ok], m.hi[ok], np.full(int(ok.sum()), 2000.0 * MS), 2000 * MS, n_boot=100)
    assert law.sd.value < 10


@pytest.mark.parametrize("catch", [1.0, 0.6])
def test_catch_up_slope_is_the_share_followed(catch: float) -> None:
    ta, xa, tb, xb = _leader_follower(31, 200.0, 10.0, catch=catch)
    moves = est.detect_jumps(ta, xa, threshold=10e-4, dead_ns=500 * MS)
    one_block = est.catch_up(moves, tb, xb, window_ns=200 * MS + 100 * MS)
    settled = est.catch_up(moves, tb, xb, window_ns=1500 * MS)
    assert settled.value == pytest.approx(1.0, abs=0.05)  # given time, the follower gets all the way
    if catch == 1.0:
        assert one_block.value == pytest.approx(1.0, abs=0.1)
    else:
        assert one_block.value < 0.9 and abs(one_block.value - catch) < 0.2


def test_block_cadence_is_the_median_gap_and_skipped_blocks_do_not_count() -> None:
    rng = np.random.default_rng(10)
    t = np.cumsum(rng.uniform(55.0, 85.0, 5000) * MS).astype(np.int64)
    sent = t[rng.random(t.size) < 0.9]  # 10% of blocks changed nothing and were not sent
    both = np.sort(np.concatenate([sent, sent]))  # two coins per block: one time, twice
    cad = est.block_cadence(both)
    assert abs(cad.median_gap_ns.value - 70 * MS) < 2 * MS
    assert abs(cad.jitter_ns - 15 * MS) < 2 * MS


def test_isolated_keeps_moves_with_nothing_just_before() -> None:
    t = np.array([100, 150, 1000, 3000], dtype=np.int64) * MS
    moves = est.Jumps(np.arange(4, dtype=np.int64) + 1, t, np.full(4, 1e-3))
    assert est.isolated(moves, 500 * MS).t.tolist() == [t[0], t[2], t[3]]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="A times must be sorted"):
        est.hayashi_yoshida([3, 1, 2], [0.0, 1.0, 2.0], [1, 2], [0.0, 1.0], [0])
    with pytest.raises(ValueError, match="B: 2 times but 3 values"):
        est.hayashi_yoshida([1, 2], [0.0, 1.0], [1, 2], [0.0, 1.0, 2.0], [0])
    with pytest.raises(ValueError, match="non-finite"):
        est.cross_correlation([1, 2], [0.0, np.nan], [1, 2], [0.0, 1.0], [0], 1)
