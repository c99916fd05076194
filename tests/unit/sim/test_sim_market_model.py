"""The stochastic market model (issue 27): each mechanism does what it says, the fixed-lag preset is the old model
event for event, runs are deterministic per seed."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import random
import statistics

import pytest

from caerus.sim.core.follower import Follower, lognormal_sigma
from caerus.sim.core.market import BinanceQuote, HlBlock, MarketConfig, MarketModel
from caerus.sim.core.market_config import load_market
from caerus.sim.core.regime import Regime

QUIET = dict(annual_vol=0.001, jumps_per_min=0.0)  # a flat fair price: only the mechanism under test moves


def take(cfg: MarketConfig, seconds: float) -> list[BinanceQuote | HlBlock]:
    return list(itertools.takewhile(lambda e: e.t_ns < seconds * 1e9, MarketModel(cfg).events()))


def digest(cfg: MarketConfig, n: int) -> str:
    h = hashlib.sha256()
    for ev in itertools.islice(MarketModel(cfg).events(), n):
        h.update(repr(ev).encode())
    return h.hexdigest()


def mids(events: list) -> tuple[list[int], list[float], list[int], list[float]]:
    """(Binance times, mids, Hyperliquid block times, mids)."""
    bt, bm, ht, hm = [], [], [], []
    for e in events:
        if isinstance(e, BinanceQuote):
            bt.append(e.t_ns)
            bm.append((e.bid + e.ask) / 2)
        elif e.bid is not None and e.ask is not None:
            ht.append(e.t_ns)
            hm.append((e.bid.px + e.ask.px) / 2)
    return bt, bm, ht, hm


def at(times: list[int], values: list[float], t: float) -> float:
    return values[max(0, bisect.bisect_right(times, t) - 1)]


@pytest.mark.parametrize("seed", [1, 2, 7])
def test_the_fixed_lag_preset_is_the_old_model_event_for_event(seed: int) -> None:
    # MarketConfig() is the pre-issue-27 model (its digest is pinned in test_sim_multi_market); the preset file
    # must give exactly its events
    assert digest(load_market("fixed-lag", seed=seed), 3000) == digest(MarketConfig(seed=seed), 3000)


def test_the_default_market_is_deterministic_per_seed() -> None:
    a = take(load_market("default", seed=3), 20)
    b = take(load_market("default", seed=3), 20)
    c = take(load_market("default", seed=4), 20)
    assert a == b
    assert a != c


def test_the_default_market_is_not_the_fixed_lag_market() -> None:
    assert take(load_market("default", seed=1), 5) != take(load_market("fixed-lag", seed=1), 5)


def test_many_instruments_are_deterministic_and_time_ordered() -> None:
    cfg = load_market("default", seed=2, symbols=("BTC", "ETH", "SOL", "PURR", "BTCDOM"))
    a = take(cfg, 5)
    assert a == take(cfg, 5)
    assert [e.t_ns for e in a] == sorted(e.t_ns for e in a)
    assert {e.symbol for e in a} == {0, 1, 2, 3, 4}


def test_lognormal_sigma_gives_the_asked_standard_deviation() -> None:
    sigma = lognormal_sigma(650.0, 300.0)
    sd = 650.0 * math.sqrt(math.exp(sigma**2) * (math.exp(sigma**2) - 1.0))
    assert sd == pytest.approx(300.0, rel=1e-9)
    assert lognormal_sigma(650.0, 0.0) == 0.0


def _arrival_lags(cfg: MarketConfig, moves: int = 1500) -> list[float]:
    """One isolated 10 bps move every 5 s, fed to a Follower; each move's lag found on a 1 ms block grid."""
    f = Follower(cfg, "BTC", 100.0, random.Random(5), Regime(cfg, random.Random(6)))
    gap_ns = 5_000_000_000
    lags = []
    price = 100.0
    for k in range(moves):
        t0 = k * gap_ns
        before = f.touch_at(t0)[0]
        price *= 1.001
        f.observe(t0, price)
        t = t0
        while f.touch_at(t)[0] == before:
            t += 1_000_000
            assert t - t0 < gap_ns, "a move never arrived"
        lags.append((t - t0) / 1e6)
    return lags


def test_lags_are_drawn_per_move_with_the_configured_median_and_dispersion() -> None:
    cfg = MarketConfig(hl_lag_ms=650.0, hl_lag_sd_ms=300.0)
    lags = _arrival_lags(cfg)
    assert statistics.median(lags) == pytest.approx(650.0, abs=25.0)
    assert statistics.stdev(lags) == pytest.approx(300.0, rel=0.12)
    assert min(lags) < 400.0 < 1000.0 < max(lags)  # drawn, not a constant


def test_a_zero_dispersion_lag_is_a_constant() -> None:
    lags = _arrival_lags(MarketConfig(hl_lag_ms=300.0, catch_up=0.9), moves=50)  # catch_up < 1: the follower
    assert set(lags) == {300.0}


@pytest.mark.slow
def test_catch_up_below_one_shows_in_the_regression_of_hyperliquid_on_binance() -> None:
    def slope(cfg: MarketConfig) -> float:
        bt, bm, ht, hm = mids(take(cfg, 600))
        lag, window = cfg.hl_lag_ms * 1e6, 10e9
        xy = xx = 0.0
        for k in range(1, 59):
            t = k * window
            x = math.log(at(bt, bm, t + window) / at(bt, bm, t))
            y = math.log(at(ht, hm, t + window + lag) / at(ht, hm, t + lag))
            xy += x * y
            xx += x * x
        return xy / xx

    base = dict(seed=9, jumps_per_min=30.0, hl_lag_ms=300.0, hl_lag_sd_ms=30.0)
    assert slope(MarketConfig(**base)) == pytest.approx(1.0, abs=0.08)
    assert slope(MarketConfig(**base, catch_up=0.5)) == pytest.approx(0.5, abs=0.08)
    # the late share of the remainder arrives too: 0.5 + 0.5 x 0.6 = 0.8 once it has (mean 500 ms later)
    assert slope(MarketConfig(**base, catch_up=0.5, catch_up_late=0.6, catch_up_late_ms=500.0)) == pytest.approx(
        0.8, abs=0.08)


def _binance_jumps(bt: list[int], bm: list[float], bps: float) -> list[tuple[int, float, float]]:
    """(time, level before, level after) of every quote-to-quote move above ``bps``."""
    return [(bt[i], bm[i - 1], bm[i]) for i in range(1, len(bm)) if abs(bm[i] / bm[i - 1] - 1) * 1e4 > bps]


@pytest.mark.slow
def test_flickers_revert_on_binance_and_hyperliquid_never_follows_them() -> None:
    # Flickers draw from a stream of their own: the same seed without them has the same fair price, the same quote
    # times and the same Hyperliquid books, so every difference is a flicker.
    base = MarketConfig(seed=4, annual_vol=0.01, jumps_per_min=4.0, hl_lag_ms=300.0, hl_lag_sd_ms=100.0,
                        catch_up=0.7, catch_up_late=0.5)
    noisy = MarketConfig(**{**base.__dict__, "flicker_share": 0.75, "flicker_ms": 300.0})
    a, b = take(base, 900), take(noisy, 900)
    hl_a = [e for e in a if isinstance(e, HlBlock)]
    hl_b = [e for e in b if isinstance(e, HlBlock)]
    assert hl_a == hl_b  # Hyperliquid never follows the noise
    qa = [e for e in a if isinstance(e, BinanceQuote)]
    qb = [e for e in b if isinstance(e, BinanceQuote)]
    assert [q.t_ns for q in qa] == [q.t_ns for q in qb]
    # episodes: runs of quotes away from the noiseless quote by more than 5 bps; each ends back on it (reverts)
    episodes: list[tuple[int, int]] = []
    start = None
    for x, y in zip(qa, qb, strict=True):
        away = abs(y.bid / x.bid - 1) * 1e4 > 5.0
        if away and start is None:
            start = x.t_ns
        elif not away and start is not None:
            episodes.append((start, x.t_ns))
            assert abs(y.bid - x.bid) <= 0.1 + 1e-9  # back on the information price (same tick)
            start = None
    # flicker_share = 0.75: three flickers per information jump (4/min -> 12/min over 15 min: ~180)
    assert len(episodes) == pytest.approx(180, rel=0.25)
    info = len(_binance_jumps(*mids(a)[:2], 5.0))
    assert len(episodes) / (len(episodes) + info) == pytest.approx(0.75, abs=0.07)
    assert statistics.mean(e - s for s, e in episodes) / 1e6 == pytest.approx(300.0, rel=0.25)


def test_without_flickers_no_binance_jump_reverts() -> None:
    bt, bm, _, _ = mids(take(MarketConfig(seed=4, annual_vol=0.001, jumps_per_min=4.0), 300))
    jumps = [(t, before) for t, before, _ in _binance_jumps(bt, bm, 5.0) if t < 297e9]
    assert len(jumps) > 10
    assert not [t for t, before in jumps if abs(at(bt, bm, t + 3e9) / before - 1) * 1e4 < 1.0]


def test_hyperliquid_moves_on_its_own_while_binance_is_flat() -> None:
    cfg = MarketConfig(seed=6, **QUIET, hl_own_jumps_per_min=10.0, hl_own_bps_min=10.0, hl_own_bps_max=20.0,
                       hl_own_blocks=4)
    _, bm, _, hm = mids(take(cfg, 120))
    assert (max(bm) - min(bm)) / bm[0] * 1e4 < 2.0  # Binance: flat
    steps = [abs(b / a - 1) * 1e4 for a, b in itertools.pairwise(hm) if b != a]
    assert (max(hm) - min(hm)) / hm[0] * 1e4 > 20.0
    assert len(steps) >= 4 * 10  # ~20 own moves in 2 min, each over 4 blocks
    assert max(steps) < 20.0 / 4 + 2.0  # spread over its blocks, never all at once


def test_arbitrage_pulls_hyperliquid_back_with_the_half_life() -> None:
    cfg = MarketConfig(seed=6, **QUIET, hl_own_jumps_per_min=30.0, hl_own_bps_min=10.0, hl_own_bps_max=20.0,
                       hl_basis_half_life_s=2.0)
    bt, bm, ht, hm = mids(take(cfg, 300))
    basis = [abs(at(ht, hm, t) / at(bt, bm, t) - 1) * 1e4 for t in range(10**9, 300 * 10**9, 10**8)]
    kept = MarketConfig(**{**cfg.__dict__, "hl_basis_half_life_s": 0.0})
    bt2, bm2, ht2, hm2 = mids(take(kept, 300))
    basis_kept = [abs(at(ht2, hm2, t) / at(bt2, bm2, t) - 1) * 1e4 for t in range(10**9, 300 * 10**9, 10**8)]
    # Hyperliquid's own moves (15 bps on average, 30 a minute): without arbitrage the deviation is a random walk
    # (after 5 min ~ sqrt(150) x 15 bps), with a 2 s half-life it stays within a few moves
    assert statistics.mean(basis) < 25.0
    assert statistics.mean(basis_kept[-500:]) > 3 * statistics.mean(basis)


def test_fading_moves_the_exposed_side_of_the_touch_at_once() -> None:
    cfg = MarketConfig(hl_lag_ms=500.0, hl_fade=0.5)
    f = Follower(cfg, "BTC", 100.0, random.Random(1), Regime(cfg, random.Random(2)))
    f.observe(10_000_000, 100.2)  # +20 bps on Binance
    lo, hi = f.touch_at(80_000_000)  # next block: the mid has not moved, the ask has
    assert lo == pytest.approx(100.0)
    assert hi == pytest.approx(100.0 * math.exp(0.5 * math.log(1.002)))
    lo, hi = f.touch_at(600_000_000)  # the move arrived: nothing owed, both at the new mid
    assert lo == hi == pytest.approx(100.2)
    f.observe(700_000_000, 100.0)  # a fall to come: the bid fades down
    lo, hi = f.touch_at(750_000_000)
    assert hi == pytest.approx(100.2) and lo < 100.2


def test_fading_shows_in_the_hyperliquid_spread_after_binance_jumps() -> None:
    cfg = MarketConfig(seed=3, annual_vol=0.001, jumps_per_min=20.0, hl_lag_ms=600.0, hl_fade=0.8)
    events = take(cfg, 120)
    wide = sum(1 for e in events if isinstance(e, HlBlock) and e.ask is not None and e.bid is not None
               and (e.ask.px - e.bid.px) > 2.0)  # BTC's tick is 1 USD: faded tops span several
    assert wide > 50


def test_regimes_switch_and_scale_the_clocks() -> None:
    cfg = MarketConfig(regime_vol_mult=3.0, regime_jump_mult=4.0, regime_calm_s=30.0, regime_volatile_s=10.0)
    r = Regime(cfg, random.Random(1))
    hour = 3600 * 10**9
    states = [r.state(t) for t in range(0, hour, 10**8)]
    assert sum(states) / len(states) == pytest.approx(10.0 / 40.0, abs=0.06)  # share of time volatile
    t_vol = next(t for t in range(0, hour, 10**8) if r.state(t) == 1 and r.state(t + 10**6) == 1)
    t_calm = next(t for t in range(0, hour, 10**8) if r.state(t) == 0 and r.state(t + 10**6) == 0)
    assert r.var_s(t_vol, t_vol + 10**6) == pytest.approx(9.0 * 1e-3)
    assert r.var_s(t_calm, t_calm + 10**6) == pytest.approx(1e-3)
    assert r.jump_ns(t_vol + 10**6) - r.jump_ns(t_vol) == pytest.approx(4.0 * 10**6)
    assert r.jump_ns(t_calm + 10**6) - r.jump_ns(t_calm) == pytest.approx(10**6)


def test_without_regimes_the_clocks_are_the_identity() -> None:
    r = Regime(MarketConfig(), random.Random(1))
    assert r.var_s(5, 2_000_000_005) == 2.0
    assert r.jump_ns(123_456) == 123_456
    assert r.state(10**12) == 0


@pytest.mark.slow
def test_the_volatile_regime_carries_more_jumps() -> None:
    cfg = MarketConfig(seed=2, annual_vol=0.001, jumps_per_min=6.0, regime_jump_mult=5.0, regime_calm_s=60.0,
                       regime_volatile_s=30.0)
    bt, bm, _, _ = mids(take(cfg, 1200))
    regime = Regime(cfg, random.Random(f"caerus-sim:{cfg.seed}:regime"))  # the model's own regime path
    counts, time_in = [0, 0], [0, 0]
    for t, _, _ in _binance_jumps(bt, bm, 5.0):
        counts[regime.state(t)] += 1
    for t in range(0, 1200 * 10**9, 10**8):
        time_in[regime.state(t)] += 1
    rates = [counts[s] / time_in[s] for s in (0, 1)]
    assert rates[1] / rates[0] == pytest.approx(5.0, rel=0.35)
