"""What keeping an instrument's trade tapes costs the emulator's driver (issue 33 item 4).

The driver handles every market-model event (Binance quote, Hyperliquid block top) of a two-instrument session
(BTC, ETH) with nobody subscribed, twice per round: once with ETH's tapes idle (nobody read them: what a fleet
reading only bookTicker / bbo pays) and once with them kept (a REST read). BTC's tapes are always kept, in both.
Rounds alternate the order; printed: ns per event p50 over the rounds for each, and kept / idle (the ratio within
one round, p50 over rounds), so a busy machine moves both alike. The same pre-generated events are replayed in
each pass on a fresh driver.

    python -m benchmarks.sim_tape_cost [--events N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from caerus.sim.core.driver import MarketDriver
from caerus.sim.core.hub import Topics
from caerus.sim.core.market import BinanceQuote, HlBlock, MarketConfig, MarketModel


def _pass(model: MarketModel, events: list[BinanceQuote | HlBlock], keep_eth: bool) -> float:
    """ns per event for one replay of ``events`` through a fresh driver."""
    drv = MarketDriver(model, Topics())
    if keep_eth:
        drv.binance_tape_of("ETHUSDT")
        drv.hl_tape_of("ETH")
    t0 = time.perf_counter_ns()
    for ev in events:
        if isinstance(ev, BinanceQuote):
            drv._binance(ev)
        else:
            drv._hyperliquid(ev)
    return (time.perf_counter_ns() - t0) / len(events)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    model = MarketModel(MarketConfig(seed=1, symbols=("BTC", "ETH")))
    gen = model.events()
    events = [next(gen) for _ in range(args.events)]
    idle, kept, ratios = [], [], []
    for r in range(args.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {k: _pass(model, events, k) for k in order}
        idle.append(got[False])
        kept.append(got[True])
        ratios.append(got[True] / got[False])
    print(f"events per pass: {len(events)}, rounds: {args.rounds} (interleaved)")
    print(f"ETH tapes idle: {statistics.median(idle):.0f} ns/event p50 (min {min(idle):.0f}, max {max(idle):.0f})")
    print(f"ETH tapes kept: {statistics.median(kept):.0f} ns/event p50 (min {min(kept):.0f}, max {max(kept):.0f})")
    print(f"kept / idle: {statistics.median(ratios):.3f} p50 (min {min(ratios):.3f}, max {max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
