"""Market model: seeded determinism, tick grids, Binance-leads-Hyperliquid lag, bbo-on-change, rates, jumps."""

from __future__ import annotations

import bisect
import itertools
import math

import pytest

from caerus.sim.core.market import (
    BINANCE_TICK,
    BinanceQuote,
    HlBlock,
    MarketConfig,
    MarketModel,
    hl_tick,
)


def take(cfg: MarketConfig, seconds: float) -> list[BinanceQuote | HlBlock]:
    return list(itertools.takewhile(lambda e: e.t_ns < seconds * 1e9, MarketModel(cfg).events()))


def split(events: list) -> tuple[list[BinanceQuote], list[HlBlock]]:
    return [e for e in events if isinstance(e, BinanceQuote)], [e for e in events if isinstance(e, HlBlock)]


def test_same_seed_same_stream_other_seed_differs() -> None:
    a = take(MarketConfig(seed=7), 5)
    b = take(MarketConfig(seed=7), 5)
    c = take(MarketConfig(seed=8), 5)
    assert a == b
    assert a != c


def test_events_are_time_ordered() -> None:
    events = take(MarketConfig(seed=2), 10)
    times = [e.t_ns for e in events]
    assert times == sorted(times)


def test_binance_prices_on_tick_and_ids_increase() -> None:
    quotes, _ = split(take(MarketConfig(seed=3), 10))
    for q in quotes:
        for px in (q.bid, q.ask):
            assert abs(px / BINANCE_TICK - round(px / BINANCE_TICK)) < 1e-6
        assert q.ask > q.bid
        assert q.bid_qty > 0 and q.ask_qty > 0
        assert abs(q.bid_qty * 1000 - round(q.bid_qty * 1000)) < 1e-6
    ids = [q.update_id for q in quotes]
    assert all(b > a for a, b in itertools.pairwise(ids))


def test_hyperliquid_prices_follow_five_significant_figures() -> None:
    assert hl_tick(95_000.0) == 1.0
    assert hl_tick(100_500.0) == 1.0  # integer prices are always valid
    assert hl_tick(9_500.0) == 0.1
    assert hl_tick(950.0) == 0.1  # at most 6 - szDecimals(5) = 1 decimal
    _, blocks = split(take(MarketConfig(seed=4), 10))
    for b in blocks:
        assert b.bid is not None and b.ask is not None
        tick = hl_tick(b.bid.px)
        assert abs(b.bid.px / tick - round(b.bid.px / tick)) < 1e-6
        assert b.ask.px > b.bid.px


def test_default_rates_are_realistic_and_modest() -> None:
    quotes, blocks = split(take(MarketConfig(seed=5), 30))
    bn_rate, block_rate = len(quotes) / 30, len(blocks) / 30
    assert 60 <= bn_rate <= 200  # tens to a couple hundred per second, ~100 by default
    assert 12 <= block_rate <= 16  # ~70 ms blocks
    gaps_ms = [(b.t_ns - a.t_ns) / 1e6 for a, b in itertools.pairwise(blocks)]
    assert min(gaps_ms) >= 55 and max(gaps_ms) <= 85


def test_bbo_fires_only_when_the_top_changes() -> None:
    _, blocks = split(take(MarketConfig(seed=6, hl_size_change_prob=0.0), 30))
    assert blocks[0].changed
    unchanged = 0
    for prev, cur in itertools.pairwise(blocks):
        same = (prev.bid, prev.ask) == (cur.bid, cur.ask)
        assert cur.changed is (not same)
        unchanged += same
    assert unchanged > 0  # with no size noise many blocks keep the same top and must stay quiet


def _mids(quotes: list[BinanceQuote]) -> tuple[list[int], list[float]]:
    return [q.t_ns for q in quotes], [(q.bid + q.ask) / 2 for q in quotes]


def _lag_error(quotes: list[BinanceQuote], blocks: list[HlBlock], lag_ms: float) -> float:
    times, mids = _mids(quotes)
    err = 0.0
    for b in blocks:
        i = bisect.bisect_right(times, b.t_ns - lag_ms * 1e6) - 1
        if i < 0:
            continue
        hl_mid = (b.bid.px + b.ask.px) / 2  # type: ignore[union-attr]
        err += abs(hl_mid - mids[i])
    return err


@pytest.mark.parametrize("lag_ms", [100.0, 300.0])
def test_hyperliquid_trails_binance_by_the_configured_lag(lag_ms: float) -> None:
    cfg = MarketConfig(seed=11, hl_lag_ms=lag_ms, jumps_per_min=20.0)
    quotes, blocks = split(take(cfg, 60))
    errors = {cand: _lag_error(quotes, blocks, cand) for cand in (0.0, 50.0, 100.0, 200.0, 300.0, 500.0)}
    best = min(errors, key=errors.get)  # type: ignore[arg-type]
    assert best == lag_ms, errors


def test_jumps_open_a_few_bps_gaps_a_few_times_per_minute() -> None:
    quotes, blocks = split(take(MarketConfig(seed=1), 60))
    block_times = [b.t_ns for b in blocks]
    episodes, last = 0, -math.inf
    for q in quotes:
        i = bisect.bisect_right(block_times, q.t_ns) - 1
        if i < 0:
            continue
        b = blocks[i]
        hl_mid = (b.bid.px + b.ask.px) / 2  # type: ignore[union-attr]
        bn_mid = (q.bid + q.ask) / 2
        if abs(bn_mid - hl_mid) / bn_mid * 1e4 > 5 and q.t_ns - last > 1e9:
            episodes += 1
            last = q.t_ns
    assert 2 <= episodes <= 30


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="binance_rate_hz"):
        MarketModel(MarketConfig(binance_rate_hz=0))
    with pytest.raises(ValueError, match="jump_bps_max"):
        MarketModel(MarketConfig(jump_bps_min=10, jump_bps_max=5))
    with pytest.raises(ValueError, match="hl_block_jitter_ms"):
        MarketModel(MarketConfig(hl_block_ms=10, hl_block_jitter_ms=20))
