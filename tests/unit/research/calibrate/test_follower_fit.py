"""caerus.research.calibrate.follower_fit on a synthetic follower whose lag, catch-up, late part, fade, basis and own
moves are known: a flat leader quoted every 10 ms with isolated jumps, a follower updated every 70 ms block."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from caerus.research.calibrate import estimators as est
from caerus.research.calibrate import follower_fit as ff

MS = 1_000_000
BP = 1e-4
BLOCK = 70 * MS
HALF_SPREAD = 0.5 * BP


@dataclass
class Synthetic:
    lead_t: np.ndarray
    lead_x: np.ndarray
    jumps: est.Jumps
    lags: np.ndarray
    touch: ff.Touch


def synthetic(seed: int, n_moves: int = 200, gap_s: float = 12.0, c: float = 0.6, a: float = 0.2,
              late_s: float = 2.0, fade: float = 0.0) -> Synthetic:
    """Leader jumps every ``gap_s``; each reaches the follower's mid after a lag uniform in 200..800 ms (share c)
    and a late part a, Exp(late_s) later; the exposed side fades by ``fade`` of what is still owed."""
    rng = np.random.default_rng(seed)
    end = int((n_moves + 1) * gap_s * 1e9)
    jt = (np.arange(1, n_moves + 1) * gap_s * 1e9).astype(np.int64)
    m = rng.uniform(10, 30, n_moves) * BP * rng.choice([-1.0, 1.0], n_moves)
    lag = rng.uniform(200, 800, n_moves) * MS
    late = rng.exponential(late_s * 1e9, n_moves)
    lead_t = np.arange(0, end, 10 * MS, dtype=np.int64)
    steps = np.zeros(lead_t.size)
    idx = np.searchsorted(lead_t, jt)
    steps[idx] = m
    lead_x = np.cumsum(steps)
    bt = np.arange(0, end, BLOCK, dtype=np.int64)
    h = np.zeros(bt.size)
    owed = np.zeros(bt.size)
    for k in range(n_moves):
        first, second = jt[k] + lag[k], jt[k] + lag[k] + late[k]
        h += np.where(bt >= first, c * m[k], 0.0) + np.where(bt >= second, a * m[k], 0.0)
        owed += np.where((bt >= jt[k]) & (bt < first), (c + a) * m[k], 0.0)
        owed += np.where((bt >= first) & (bt < second), a * m[k], 0.0)
    bid = h - HALF_SPREAD + np.minimum(0.0, fade * owed)
    ask = h + HALF_SPREAD + np.maximum(0.0, fade * owed)
    return Synthetic(lead_t, lead_x, est.Jumps(idx.astype(np.int64), jt, m), lag, ff.Touch(bt, bid, ask))


@pytest.fixture(scope="module")
def plain() -> Synthetic:
    return synthetic(1)


def test_match_unexposed_brackets_every_lag_between_two_blocks(plain: Synthetic) -> None:
    got = ff.match_unexposed(plain.lead_t, plain.lead_x, plain.jumps, plain.touch, 0.3, 2000 * MS)
    assert got.matched.all()
    assert np.all(got.lo < plain.lags) and np.all(plain.lags <= got.hi) and np.all(got.hi - got.lo == BLOCK)


def test_match_unexposed_reads_the_side_fading_does_not_move() -> None:
    # with fading the exposed side moves at once; read there the lag would be ~0, on the unexposed side it is right
    s = synthetic(2, n_moves=60, fade=0.8)
    got = ff.match_unexposed(s.lead_t, s.lead_x, s.jumps, s.touch, 0.3, 2000 * MS)
    assert got.matched.all() and np.all((got.lo < s.lags) & (s.lags <= got.hi))


def test_match_unexposed_with_no_moves_gives_empty_bounds(plain: Synthetic) -> None:
    none = est.Jumps(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
    got = ff.match_unexposed(plain.lead_t, plain.lead_x, none, plain.touch, 0.3, 2000 * MS)
    assert got.lo.size == 0 and not got.matched.any()


def test_early_response_is_the_catch_up(plain: Synthetic) -> None:
    matched = ff.match_unexposed(plain.lead_t, plain.lead_x, plain.jumps, plain.touch, 0.3, 2000 * MS)
    got = ff.early_response(plain.jumps, matched, plain.touch, BLOCK)
    # one block after the first response a late part Exp(2 s) has arrived with chance ~3.5 %: 0.6 + 0.2 x 0.035
    assert got.value == pytest.approx(0.607, abs=0.01) and got.n == 200 and got.se < 0.01
    few = est.MovesMatched(matched.lo[:2], matched.hi[:2], matched.matched[:2])
    two = est.Jumps(plain.jumps.index[:2], plain.jumps.t[:2], plain.jumps.size[:2])
    assert math.isnan(ff.early_response(two, few, plain.touch, BLOCK).value)  # fewer than 3 moves: NaN


def test_late_curve_recovers_the_late_share_and_its_delay(plain: Synthetic) -> None:
    matched = ff.match_unexposed(plain.lead_t, plain.lead_x, plain.jumps, plain.touch, 0.3, 2000 * MS)
    got = ff.late_curve(plain.jumps, matched, plain.touch, BLOCK, 2500 * MS, 0.0, n_boot=40, seed=1)
    assert got.moves == 200
    assert abs(got.late.value - 0.2) <= max(3 * got.late.se, 0.03)
    assert 1400 <= got.delay_ms.value <= 2800 and got.delay_ms.se > 0
    assert got.betas[0] < got.betas[-1] <= 0.81


def test_late_curve_with_too_few_clean_moves_is_nan(plain: Synthetic) -> None:
    matched = ff.match_unexposed(plain.lead_t, plain.lead_x, plain.jumps, plain.touch, 0.3, 2000 * MS)
    # moves 12 s apart are never clear of each other for 20 s before: only the first is clean
    got = ff.late_curve(plain.jumps, matched, plain.touch, BLOCK, 20_000 * MS, 0.0, n_boot=5)
    assert got.moves == 1 and math.isnan(got.late.value) and math.isnan(got.delay_ms.value)


def test_fade_is_the_spread_widening_on_the_pending_part() -> None:
    s = synthetic(3, n_moves=80, fade=0.8)
    matched = ff.match_unexposed(s.lead_t, s.lead_x, s.jumps, s.touch, 0.3, 2000 * MS)
    got = ff.fade(s.jumps, matched, s.touch, 0.8)  # pending share c + a
    assert got.value == pytest.approx(0.8, abs=0.01) and got.n == 80
    flat = ff.fade(s.jumps, est.MovesMatched(matched.lo, matched.hi, np.zeros(80, bool)), s.touch, 0.8)
    assert math.isnan(flat.value) and flat.n == 0  # nothing matched: NaN


def test_basis_half_life_of_an_ou_basis() -> None:
    rng = np.random.default_rng(4)
    n, half = 7200, 30.0  # 2 hours on a 1 s grid, half-life 30 s
    phi = 2.0 ** (-1.0 / half)
    b = np.zeros(n)
    for i in range(1, n):
        b[i] = phi * b[i - 1] + rng.normal(0.0, 1e-4)
    t = np.arange(n, dtype=np.int64) * 1_000_000_000
    flat = ff.Touch(t, np.zeros(n), np.zeros(n))
    got, slow = ff.basis_half_life(t, b, flat)
    assert got.value == pytest.approx(half, rel=0.3) and slow > 0.5 and got.n == n - 1
    short, _ = ff.basis_half_life(t[:30], b[:30], ff.Touch(t[:30], np.zeros(30), np.zeros(30)))
    assert math.isnan(short.value)  # 30 s hold no lag of 10 s or more to fit: NaN


def test_own_moves_counts_runs_sizes_and_blocks_in_clean_time() -> None:
    rng = np.random.default_rng(5)
    bt = np.arange(0, 1800 * 1_000_000_000, BLOCK, dtype=np.int64)
    steps = np.zeros(bt.size)
    starts = np.sort(rng.choice(np.arange(100, bt.size - 10, 300), 30, replace=False))
    sizes = rng.uniform(6.0, 18.0, 30)
    for k, s in zip(starts, sizes, strict=True):
        steps[k:k + 4] = math.log1p(s * rng.choice([-1.0, 1.0]) / 1e4) / 4  # one move over 4 blocks
    mid = np.cumsum(steps)
    touch = ff.Touch(bt, mid, mid)
    got = ff.own_moves(np.empty(0, np.int64), touch, BLOCK, 2_000_000_000, 1 * BP, 4 * BP)
    assert got.rate_per_clean_min.n == 30 and got.clean_min == pytest.approx(30.0, rel=0.01)
    assert got.rate_per_clean_min.value == pytest.approx(1.0, rel=0.01)
    assert got.blocks.value == 4 and 4.5 <= got.bps_min.value <= 7.0 and 17.0 <= got.bps_max.value <= 19.5
    quiet = ff.own_moves(np.empty(0, np.int64), ff.Touch(bt, np.zeros(bt.size), np.zeros(bt.size)), BLOCK,
                         2_000_000_000, 1 * BP, 4 * BP)
    assert quiet.rate_per_clean_min.value == 0.0 and math.isnan(quiet.bps_min.value)
