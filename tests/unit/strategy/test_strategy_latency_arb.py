"""Latency-arb decisions on scripted book sequences: fire, cooldown, exits, guards, kill switch, price grid."""

from __future__ import annotations

import pytest

from caerus.strategy.bench import BenchFireEveryBook
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import (
    G_COOLDOWN,
    G_HALTED,
    G_INFO_AGE_HL,
    G_INVALID_BN,
    G_INVALID_HL,
    G_POSITION,
    G_STALE_BN,
    G_STALE_HL,
    LatencyArb,
    round_to_grid,
)
from caerus.wire import BookFlags, OrderReason, Side, Venue
from tests.fixtures.pipeline import ConfirmingFills, make_book

MS = 1_000_000
T0 = 1_700_000_000_000_000_000
BN = Venue.BINANCE
HL = Venue.HYPERLIQUID


def warm(arb: LatencyArb, t: int = T0, hl_bid: float = 95_000.0, bn_mid: float = 95_000.5, ms: int = 1100) -> int:
    """Flat market for ``ms`` ms (Binance every 10 ms, HL every 100 ms); returns the time after it."""
    for i in range(0, ms, 10):
        now = t + i * MS
        if i % 100 == 0:
            assert arb.on_book(make_book(HL, hl_bid, hl_bid + 1, now), now) is None
        assert arb.on_book(make_book(BN, bn_mid - 0.05, bn_mid + 0.05, now), now) is None
    return t + ms * MS


def jump(arb: LatencyArb, now: int, bps: float, base: float = 95_000.5) -> tuple | None:
    mid = base * (1 + bps * 1e-4)
    return arb.on_book(make_book(BN, mid - 0.05, mid + 0.05, now), now)


def fire(arb: LatencyArb, d: tuple, now: int) -> tuple:
    """Push the decision and confirm a full fill (what the engine reports for an IOC at the touch)."""
    ConfirmingFills(arb, 1).fire(d, now)
    return d


def test_up_jump_buys_hyperliquid_ioc_at_touch_plus_slippage_on_grid() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    d = jump(arb, t, 10.0)
    assert d is not None
    side, reason, px, qty = d
    assert side == Side.BUY and reason == OrderReason.ENTRY and qty == pytest.approx(0.001)
    # HL ask 95001 * (1 + 2 bps) = 95020.0002 -> 5 significant figures rounded up -> 95021
    assert px == 95021.0
    assert arb.signal == pytest.approx(10.0, abs=0.1)


def test_down_jump_sells_at_bid_minus_slippage_rounded_down() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    d = jump(arb, t, -10.0)
    assert d is not None and d[0] == Side.SELL and d[1] == OrderReason.ENTRY
    assert d[2] == 94981.0  # 95000 * (1 - 2 bps) = 94981.0 exactly on the grid: not pushed a tick lower


def test_small_move_and_hyperliquid_only_move_do_not_fire() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    assert jump(arb, t, 3.0) is None  # below the 5 bps entry
    # Hyperliquid drops 10 bps alone: the signal is large, but HL is not the leader: no entry on an HL book
    assert arb.on_book(make_book(HL, 94_905.0, 94_906.0, t + MS), t + MS) is None
    assert arb.signal > 5.0
    assert arb.decisions == 0


def test_no_entry_during_warmup() -> None:
    arb = LatencyArb(StrategyConfig(warmup_ms=1000))
    t = warm(arb, ms=500)
    assert jump(arb, t, 20.0) is None
    assert arb.decisions == 0


def test_exit_when_hyperliquid_catches_up_then_cooldown_blocks_next_entry() -> None:
    arb = LatencyArb(StrategyConfig(cooldown_ms=1000))
    t = warm(arb)
    d = fire(arb, jump(arb, t, 10.0), t)
    assert arb.position == pytest.approx(0.001)
    # Binance stays up; HL catches up 150 ms later -> basis back to its EWMA -> exit at threshold, sell HL bid
    t2 = t + 150 * MS
    hl_bid = 95_095.0
    e = arb.on_book(make_book(HL, hl_bid, hl_bid + 1, t2), t2)
    assert e is not None
    assert e[0] == Side.SELL and e[1] == OrderReason.EXIT_THRESHOLD and e[3] == pytest.approx(0.001)
    fire(arb, e, t2)
    assert arb.position == 0.0
    # another jump 300 ms after the exit: inside the cooldown
    t3 = t2 + 300 * MS
    assert jump(arb, t3, 25.0) is None
    assert arb.guards[G_COOLDOWN] == 1
    # after the cooldown it fires again
    t4 = t2 + 1001 * MS
    assert jump(arb, t4, 40.0) is not None
    assert d[0] == Side.BUY


def test_max_hold_exit() -> None:
    arb = LatencyArb(StrategyConfig(max_hold_ms=500, ewma_half_life_s=1000.0))
    t = warm(arb)
    fire(arb, jump(arb, t, 10.0), t)
    assert jump(arb, t + 100 * MS, 10.0) is None  # still diverged, too young to exit
    e = jump(arb, t + 500 * MS, 10.0)
    assert e is not None and e[1] == OrderReason.EXIT_MAX_HOLD and e[0] == Side.SELL


def test_reversal_exit() -> None:
    arb = LatencyArb(StrategyConfig(reversal_bps=3.0))
    t = warm(arb)
    fire(arb, jump(arb, t, 10.0), t)
    e = jump(arb, t + 50 * MS, -4.0)  # Binance reverses below the EWMA: against the long
    assert e is not None and e[1] == OrderReason.EXIT_REVERSAL and e[0] == Side.SELL


def test_position_limit_blocks_adding() -> None:
    arb = LatencyArb(StrategyConfig(cooldown_ms=0, max_position=0.001, ewma_half_life_s=1000.0))
    t = warm(arb)
    fire(arb, jump(arb, t, 10.0), t)
    assert jump(arb, t + MS, 12.0) is None  # would be a second long entry: beyond max_position
    assert arb.guards[G_POSITION] == 1


def test_stale_binance_book_blocks() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    mid = 95_000.5 * 1.001
    late = t + 600 * MS  # the jump record was received 600 ms before we look at it (> 500 ms)
    assert arb.on_book(make_book(BN, mid - 0.05, mid + 0.05, t), late) is None
    assert arb.guards[G_STALE_BN] == 1 and arb.decisions == 1


def test_stale_hyperliquid_book_blocks() -> None:
    arb = LatencyArb(StrategyConfig(max_book_age_ms_hyperliquid=300))
    t = warm(arb)  # last HL book at t - 100 ms
    assert jump(arb, t + 250 * MS, 10.0) is None
    assert arb.guards[G_STALE_HL] == 1


def test_hyperliquid_information_age_blocks() -> None:
    arb = LatencyArb(StrategyConfig(max_info_age_ms_hyperliquid=1000))
    t = warm(arb)
    arb.on_book(make_book(HL, 95_000.0, 95_001.0, t, t_exchange=t - 1500 * MS), t)
    assert jump(arb, t + MS, 10.0) is None
    assert arb.guards[G_INFO_AGE_HL] == 1


def _blocked_until_the_next_valid_hl_book(arb: LatencyArb, t: int) -> None:
    """After an untradeable Hyperliquid book at ``t``: a jump 1 ms later is blocked (G_INVALID_HL, once), and the
    next valid Hyperliquid book lifts the guard."""
    assert jump(arb, t + MS, 10.0) is None
    assert arb.guards[G_INVALID_HL] == 1
    arb.on_book(make_book(HL, 95_000.0, 95_001.0, t + 2 * MS), t + 2 * MS)
    assert jump(arb, t + 3 * MS, 10.0) is not None


def test_invalid_hyperliquid_book_blocks_and_does_not_move_prices() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    arb.on_book(make_book(HL, 90_000.0, 90_001.0, t, flags=int(BookFlags.VALID | BookFlags.STALE)), t)
    assert arb.hl_mid == 95_000.5  # the stale record's prices are ignored
    _blocked_until_the_next_valid_hl_book(arb, t)


def test_a_rejected_record_withdraws_the_previous_quote_until_the_next_valid_one() -> None:
    # Issue 12 item 4: the feed publishes REJECTED (not VALID) when the venue withdraws its quote (here a null side,
    # NaN prices); the previous VALID quote must stop being traded at once, not after the book-age guard.
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    nan = float("nan")
    arb.on_book(make_book(HL, nan, nan, t, flags=int(BookFlags.REJECTED)), t)
    _blocked_until_the_next_valid_hl_book(arb, t)


def test_binance_record_without_valid_flag_blocks() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    mid = 95_000.5 * 1.001
    assert arb.on_book(make_book(BN, mid - 0.05, mid + 0.05, t, flags=0), t) is None
    assert arb.bn_mid == pytest.approx(95_000.5)  # not taken
    assert arb.guards[G_INVALID_BN] == 0  # no decision: the invalid record did not move the signal
    # the next valid record is taken again
    assert jump(arb, t + MS, 10.0) is not None


def test_kill_switch_halts_orders() -> None:
    arb = LatencyArb(StrategyConfig())
    t = warm(arb)
    arb.halted = True
    assert jump(arb, t, 10.0) is None
    assert arb.guards[G_HALTED] == 1


def test_flatten_on_halt_closes_the_position_once() -> None:
    arb = LatencyArb(StrategyConfig(flatten_on_halt=True, ewma_half_life_s=1000.0))
    t = warm(arb)
    fire(arb, jump(arb, t, 10.0), t)
    arb.halted = True
    f = jump(arb, t + MS, 10.0)  # still diverged: no exit signal, but halted with a position -> flatten
    assert f is not None and f[1] == OrderReason.FLATTEN and f[0] == Side.SELL and f[3] == pytest.approx(0.001)
    assert f[2] == 94_981.0  # HL bid 95000 - 2 bps, on the grid
    fire(arb, f, t + MS)
    assert arb.position == 0.0
    assert jump(arb, t + 2000 * MS, 30.0) is None  # flat and halted (cooldown over): nothing more
    assert arb.guards[G_HALTED] == 1


def test_halt_without_flatten_keeps_the_position() -> None:
    arb = LatencyArb(StrategyConfig(ewma_half_life_s=1000.0))
    t = warm(arb)
    fire(arb, jump(arb, t, 10.0), t)
    arb.halted = True
    assert jump(arb, t + MS, 0.0) is None  # an exit would fire, but halted blocks it
    assert arb.position == pytest.approx(0.001) and arb.guards[G_HALTED] == 1


def test_ewma_half_life() -> None:
    arb = LatencyArb(StrategyConfig(ewma_half_life_s=1.0))
    t = warm(arb, ms=100)
    assert arb.ewma == pytest.approx(0.0, abs=1e-9)
    # basis steps to ~+10 bps and stays: after one half-life the EWMA is half way
    for i in range(0, 1001, 10):
        now = t + i * MS
        mid = 95_000.5 * 1.001
        arb.on_book(make_book(BN, mid - 0.05, mid + 0.05, now), now)
    assert arb.ewma == pytest.approx(arb.basis / 2, rel=0.02)


@pytest.mark.parametrize(
    ("px", "up", "want"),
    [(95_020.0002, True, 95_021.0), (95_020.9, False, 95_020.0), (95_020.0, True, 95_020.0),
     (104_321.4, True, 104_322.0), (104_321.6, False, 104_321.0), (104_321.0, True, 104_321.0),
     (1_234.56, True, 1_234.6), (12.3456, False, 12.3)],
)
def test_round_to_hyperliquid_grid(px: float, up: bool, want: float) -> None:
    assert round_to_grid(px, 5, 1, up) == want


def test_round_to_grid_is_the_double_nearest_the_decimal_grid_price() -> None:
    """Against exact decimal arithmetic: the grid price rounded the right way, as the nearest double (what
    float(str) of the decimal gives), for prices across magnitudes, figures and decimals."""
    import random
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    rng = random.Random(7)
    for _ in range(20_000):
        px = rng.choice([rng.uniform(1e-4, 1.0), rng.uniform(1.0, 1e3), rng.uniform(1e3, 3e5)])
        sig, dec, up = rng.randint(2, 6), rng.randint(0, 8), rng.random() < 0.5
        exp = Decimal(px).adjusted() - (sig - 1)
        decimals = min(dec, -exp) if exp < 0 else 0
        step = Decimal(1).scaleb(-decimals)
        # the function's tolerance: within 1e-9 of a tick of a grid point counts as on it
        units = Decimal(px) / step
        near = units.to_integral_value()
        if abs(units - near) <= Decimal("1e-9"):
            units = near
        want = float(units.to_integral_value(ROUND_CEILING if up else ROUND_FLOOR) * step)
        assert round_to_grid(px, sig, dec, up) == want, (px, sig, dec, up)


def test_bench_strategy_fires_on_every_valid_binance_book_alternating() -> None:
    s = BenchFireEveryBook(StrategyConfig(mode="bench"))
    assert s.on_book(make_book(HL, 95_000.0, 95_001.0, T0), T0) is None
    sides = []
    for i in range(4):
        d = s.on_book(make_book(BN, 95_000.0, 95_000.1, T0 + i), T0 + i)
        assert d is not None and d[1] == OrderReason.BENCH
        assert d[2] == (95_001.0 if d[0] > 0 else 95_000.0)  # the Hyperliquid touch it crosses
        s.fired(d, T0 + i)
        sides.append(d[0])
    assert sides == [1, -1, 1, -1]
    assert s.on_book(make_book(BN, 95_000.0, 95_000.1, T0, flags=0), T0) is None
    s.halted = True
    assert s.on_book(make_book(BN, 95_000.0, 95_000.1, T0), T0) is None
    assert s.position == pytest.approx(0.0)
