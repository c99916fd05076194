"""How far the emulator's perp trades from its index: the premium samples caerus.sim.core.marks takes (every 5 s of
model time) over a run of the market model, per venue, with their |premium| median and p90 and the funding rate each
venue's rules give at the end (issue 33). Seeded: the same options print the same numbers.

    python -m benchmarks.sim_premium [--market default] [--symbols BTC,ETH] [--seed 1] [--seconds 300]
"""

from __future__ import annotations

import argparse

from caerus.sim.core.market import BinanceQuote, MarketModel
from caerus.sim.core.market_config import load_market
from caerus.sim.core.marks import BINANCE_FUNDING, HL_FUNDING, PREMIUM_SAMPLE_NS, Marks


def run(market: str, symbols: tuple[str, ...], seed: int, seconds: int) -> dict[str, tuple[int, float, float, float]]:
    """Per venue: (samples, |premium| median bp, |premium| p90 bp, mean predicted rate at the end)."""
    model = MarketModel(load_market(market, seed=seed, symbols=symbols))
    bn = {k: Marks(BINANCE_FUNDING) for k in range(len(symbols))}
    hl = {k: Marks(HL_FUNDING) for k in range(len(symbols))}
    samples: dict[str, list[float]] = {"binance": [], "hyperliquid": []}
    due = PREMIUM_SAMPLE_NS
    for ev in model.events():
        if ev.t_ns > seconds * 1_000_000_000:
            break
        while ev.t_ns >= due:
            for venue, marks in (("binance", bn), ("hyperliquid", hl)):
                for m in marks.values():
                    m.sample(due // 1_000_000)
                    if m.mark is not None:
                        samples[venue].append(abs(m.premium) * 1e4)
            due += PREMIUM_SAMPLE_NS
        if isinstance(ev, BinanceQuote):
            bn[ev.symbol].on_top(ev.t_ns, ev.bid, ev.ask, None)
        elif ev.bid is not None and ev.ask is not None:
            hl[ev.symbol].on_top(ev.t_ns, ev.bid.px, ev.ask.px, None)
    out = {}
    for venue, marks in (("binance", bn), ("hyperliquid", hl)):
        xs = sorted(samples[venue])
        n = len(xs)
        rate = sum(m.rate for m in marks.values()) / len(marks)
        out[venue] = (n, xs[n // 2] if n else 0.0, xs[int(n * 0.9)] if n else 0.0, rate)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--market", default="default")
    p.add_argument("--symbols", default="BTC,ETH")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=int, default=300)
    a = p.parse_args()
    symbols = tuple(s.strip() for s in a.symbols.split(",") if s.strip())
    for venue, (n, med, p90, rate) in run(a.market, symbols, a.seed, a.seconds).items():
        print(f"{venue:12s} samples {n:5d}  |premium| median {med:6.2f} bp  p90 {p90:6.2f} bp  "
              f"predicted rate (mean over symbols) {rate:.8f}")


if __name__ == "__main__":
    main()
