"""The default strategy config against the venue emulator's default market model: fires a few times a minute.

Replays the emulator's seeded event stream (caerus.sim.core.market, pure) through LatencyArb in-process, with
Hyperliquid books received 20 ms after their block time; checks the defaults neither stay silent nor machine-gun.
"""

from __future__ import annotations

from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import LatencyArb
from caerus.wire import OrderReason
from tests.fixtures.pipeline import ConfirmingFills, make_book

T0 = 1_700_000_000_000_000_000
MINUTES = 2.0


def test_defaults_fire_a_few_times_per_minute_on_the_emulator_market() -> None:
    arb = LatencyArb(StrategyConfig())
    engine = ConfirmingFills(arb)
    entries = exits = 0
    for ev in MarketModel(MarketConfig(seed=1)).events():
        if ev.t_ns > MINUTES * 60e9:
            break
        if isinstance(ev, BinanceQuote):
            t = T0 + ev.t_ns + 1_000_000
            book = make_book(1, ev.bid, ev.ask, t, t_exchange=T0 + ev.t_ns)
        else:
            if not ev.changed or ev.bid is None or ev.ask is None:
                continue
            t = T0 + ev.t_ns + 20_000_000
            book = make_book(2, ev.bid.px, ev.ask.px, t, t_exchange=T0 + ev.t_ns)
        d = arb.on_book(book, t)
        if d is not None:
            engine.fire(d, t)  # the engine confirms a full fill
            if d[1] == OrderReason.ENTRY:
                entries += 1
            else:
                exits += 1
    per_min = entries / MINUTES
    assert 1.0 <= per_min <= 30.0, f"{entries} entries in {MINUTES} simulated minutes"
    assert exits >= entries - 1  # every position but possibly the last one was closed
