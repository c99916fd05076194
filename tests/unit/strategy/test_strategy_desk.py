"""The strategy's instruments: one decision state per instrument, its own parameters, results routed by id."""

from __future__ import annotations

import pytest

from caerus.config import ConfigError
from caerus.instruments import BTC, Instrument, InstrumentSet
from caerus.strategy.config import InstrumentParams, StrategyConfig
from caerus.strategy.instrument_desk import Desk
from caerus.wire import Outcome, Venue
from tests.fixtures.pipeline import make_book, make_exec

T0 = 1_700_000_000_000_000_000
HL, BN = int(Venue.HYPERLIQUID), int(Venue.BINANCE)
ETH = Instrument(id=1, name="ETH", binance_symbol="ETHUSDT", hl_coin="ETH", tick_size=0.01, lot_size=0.001,
                 min_qty=0.001, min_notional=20.0, hl_asset=1, sz_decimals=4)
TWO = InstrumentSet([BTC, ETH])


def feed_pair(desk: Desk, sym: int, hl: float, bn: float, t: int) -> tuple | None:
    arb = desk.arbs[sym]
    arb.on_book(make_book(HL, hl, hl * 1.0001, t, symbol=sym), t)
    return arb.on_book(make_book(BN, bn, bn * 1.0001, t, symbol=sym), t)


def test_each_instrument_decides_on_its_own_books_with_its_own_parameters() -> None:
    cfg = StrategyConfig(warmup_ms=0, instruments={"ETH": InstrumentParams(entry_bps=50.0, order_qty=0.2,
                                                                           max_position=0.4)})
    desk = Desk(cfg, TWO)
    feed_pair(desk, 0, 95_000.0, 95_000.0, T0)
    feed_pair(desk, 1, 3_500.0, 3_500.0, T0)
    # the same 20 bps lead on both: BTC (entry 5 bps) fires, ETH (entry 50 bps) does not
    d_btc = feed_pair(desk, 0, 95_000.0, 95_190.0, T0 + 10_000_000)
    d_eth = feed_pair(desk, 1, 3_500.0, 3_507.0, T0 + 10_000_000)
    assert d_btc is not None and d_btc[3] == cfg.order_qty and d_eth is None
    assert desk.arbs[1].order_qty == 0.2 and desk.arbs[1]._dec == ETH.hl_max_decimals


def test_entries_are_sized_to_the_notional_at_the_first_hyperliquid_book() -> None:
    desk = Desk(StrategyConfig(order_notional=100.0, warmup_ms=0), TWO)
    feed_pair(desk, 0, 95_000.0, 95_000.0, T0)
    feed_pair(desk, 1, 3_500.0, 3_500.0, T0)
    assert desk.arbs[0].order_qty == pytest.approx(0.00105)  # floor(100 / 95000.x) on 5 decimals
    assert desk.arbs[1].order_qty == pytest.approx(0.0285)  # on ETH's 4 decimals
    assert desk.arbs[1]._max_pos == pytest.approx(0.0285 * 2)  # the default ratio: two entries a side


def test_bench_orders_are_sized_per_instrument_and_cross_the_hyperliquid_touch() -> None:
    """Bench mode in a many-instrument session (issue 32): ETH's orders are ETH's size (order_notional at its
    first Hyperliquid book, or its own order_qty), not BTC's 0.001 (worth $3.5, below Hyperliquid's $10 minimum,
    which the venue refused), and each IOC is priced at the touch it crosses."""
    desk = Desk(StrategyConfig(mode="bench", order_notional=100.0), TWO)
    d_btc = feed_pair(desk, 0, 95_000.0, 95_000.0, T0)
    d_eth = feed_pair(desk, 1, 3_500.0, 3_500.0, T0)
    assert d_btc is not None and d_btc[3] == pytest.approx(0.00105)
    assert d_eth is not None and d_eth[3] == pytest.approx(0.0285) and d_eth[3] * 3_500.0 >= 10.0
    assert d_eth[0] == 1 and d_eth[2] == pytest.approx(3_500.0 * 1.0001)  # a buy at the Hyperliquid ask
    desk.arbs[1].fired(d_eth, T0)
    sell = feed_pair(desk, 1, 3_500.0, 3_500.0, T0 + 1)
    assert sell is not None and sell[0] == -1 and sell[2] == 3_500.0  # a sell at the bid
    own = Desk(StrategyConfig(mode="bench", order_notional=100.0,
                              instruments={"ETH": InstrumentParams(order_qty=0.5, max_position=1.0)}), TWO)
    d = feed_pair(own, 1, 3_500.0, 3_500.0, T0)
    assert d is not None and d[3] == 0.5


def test_results_reach_the_instrument_that_sent_the_order() -> None:
    desk = Desk(StrategyConfig(warmup_ms=0), TWO)
    feed_pair(desk, 1, 3_500.0, 3_500.0, T0)
    d = feed_pair(desk, 1, 3_500.0, 3_510.0, T0 + 10_000_000)
    assert d is not None
    desk.arbs[1].fired(d, T0 + 10_000_000, order_id=77, seq=5)
    rec = make_exec(77, 5, d[0], d[3], Outcome.FILLED, fill_qty=d[3], fill_px=3_500.0, symbol=1)
    desk.on_exec(rec)
    assert desk.arbs[1].position == pytest.approx(d[3]) and desk.arbs[0].position == 0.0 and desk.position == 0.0


def test_parameters_for_an_instrument_must_keep_the_rules() -> None:
    with pytest.raises(ConfigError, match=r"instruments\.ETH: exit_bps"):
        StrategyConfig(instruments={"ETH": InstrumentParams(entry_bps=1.0, exit_bps=2.0)}).check()
