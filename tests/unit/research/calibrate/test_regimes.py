"""caerus.research.calibrate.regimes on a synthetic price whose volatility switches at known times."""

from __future__ import annotations

import numpy as np
import pytest

from caerus.research.calibrate import regimes as rg

MS = 1_000_000
WINDOW = 15_000 * MS


@pytest.fixture(autouse=True)
def _no_core_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    # scikit-learn's joblib would run `cat /proc/cpuinfo` to count cores (a subprocess: refused in unit tests)
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")


def switching(seed: int, labels: np.ndarray, mult: float, sigma: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian random walk quoted every 50 ms; window k (15 s) has volatility sigma x (mult if labels[k])."""
    rng = np.random.default_rng(seed)
    per = WINDOW // (50 * MS)
    scale = np.repeat(np.where(labels, mult, 1.0), per)
    t = np.arange(scale.size + 1, dtype=np.int64) * 50 * MS
    x = np.concatenate([[0.0], np.cumsum(rng.normal(0.0, sigma, scale.size) * scale)])
    return t, x


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_split_finds_the_volatile_windows_and_their_volatility_ratio(seed: int) -> None:
    # 10 cycles of 8 calm windows (120 s) and 4 volatile ones (60 s): spells known, volatility x 2
    labels = np.tile(np.r_[np.zeros(8, bool), np.ones(4, bool)], 10)
    t, x = switching(seed, labels, 2.0)
    stats = rg.window_stats(t, x, 250 * MS, WINDOW, exclude=[])
    got = rg.split(stats, seed=seed)
    assert got.two and (got.volatile == labels[: got.volatile.size]).mean() > 0.97
    assert abs(got.vol_mult.value - 2.0) <= 3 * got.vol_mult.se + 0.02
    assert got.volatile_share == pytest.approx(1 / 3, abs=0.03)
    # spells read through the continuous-time chain: 120 s calm, 60 s volatile, within a factor 1.5
    assert 80 <= got.calm_s.value <= 180 and 40 <= got.volatile_s.value <= 90
    assert got.calm_s.n >= 9


def test_split_sees_one_regime_in_a_constant_volatility() -> None:
    labels = np.zeros(80, bool)
    t, x = switching(4, labels, 1.0)
    got = rg.split(rg.window_stats(t, x, 250 * MS, WINDOW, exclude=[]))
    assert not got.two and not got.volatile.any()
    assert got.vol_mult.value == 1.0 and got.jump_mult.value == 1.0 and np.isnan(got.calm_s.value)


def test_window_stats_leaves_out_large_moves_and_counts_them() -> None:
    labels = np.zeros(8, bool)
    t, x = switching(5, labels, 1.0)
    x = x.copy()
    jump_at = 20_000 * MS
    x[t >= jump_at] += 30e-4
    with_jump = rg.window_stats(t, x, 250 * MS, WINDOW, exclude=[jump_at])
    assert with_jump.moves.tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    assert with_jump.sum_sq[1] < 10 * with_jump.sum_sq[0]  # the 30 bp move is not in the window's variance
    assert with_jump.n_ret[1] == with_jump.n_ret[0] - 1


def test_window_stats_needs_four_windows() -> None:
    t, x = switching(6, np.zeros(3, bool), 1.0)
    with pytest.raises(ValueError, match="3 windows of 15 s, need at least 4"):
        rg.window_stats(t, x, 250 * MS, WINDOW, exclude=[])
