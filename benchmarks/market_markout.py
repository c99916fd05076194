"""Is the emulator's market arbitrageable by construction? The naive latency-arb rule's paper markouts, per seed.

For each seed the market model is run offline (caerus.sim.core.offline: the model's event iterator, no sockets, the
books the feeds would have published), and the fleet's own decision code (caerus.strategy's Desk / LatencyArb,
unmodified, default StrategyConfig unless --strategy-config) is fed book by book through caerus.research.backtest's
engine, whose IOCs are priced with the paper transport's rules: matched against the latest Hyperliquid book the
execution engine had read (paper ``latency_ms = 0``, ``--clock publish``), at the touch, at most the top size.
Feed latency is a constant book hop (``--feed-us``), as on loopback.

A fill's markout at 1 s is ``side * (mid(t_fill + 1 s) - px) / px`` in bps, mid = Hyperliquid's prevailing mid
(the paper account's convention). Printed per seed: orders, fills, the mean markout and a bootstrap 95% interval
(resampling fills); then every fill pooled, and the seeds whose mean is positive.

    python -m benchmarks.market_markout [--market default|fixed-lag|FILE] [--seeds 10] [--duration 300]
        [--set KEY=VALUE ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caerus.config import load_config
from caerus.instruments import DEFAULT as BTC_ONLY
from caerus.research.backtest import engine, sources
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.sim.core.market_config import DEFAULT_MARKET, MarketConfig, MarketFileError, load_market, parse_market
from caerus.strategy.config import StrategyConfig
from caerus.wire import Venue

HORIZON_MS = 1000.0
BOOTSTRAP = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class SeedResult:
    seed: int
    orders: int
    fills: int
    markouts_bps: np.ndarray  # one per fill whose horizon lies inside the run

    @property
    def mean(self) -> float:
        return float(self.markouts_bps.mean()) if len(self.markouts_bps) else float("nan")


def bootstrap_ci(x: np.ndarray, seed: int, n: int = BOOTSTRAP, level: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (resampling its elements); NaNs with fewer than 2."""
    if len(x) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n, len(x)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def events_of(cfg: MarketConfig, duration_s: float) -> BookEvents:
    """The offline market as the backtest's columnar events (the backtest's own offline source)."""
    return sources.offline_events(cfg, duration_s)


def run_seed(cfg: MarketConfig, duration_s: float, strategy: StrategyConfig, feed_ns: int) -> SeedResult:
    """The naive rule over one seed's market: its orders, fills and per-fill markouts at HORIZON_MS."""
    events = events_of(cfg, duration_s)
    spec = engine.RunSpec(strategy, BTC_ONLY, LatencyModel.constant(0, feed_ns), FillRules(clock="publish"),
                          seed=cfg.seed, target_venue=int(Venue.HYPERLIQUID))
    out = engine.run(events, spec)
    o = out.orders
    qty = np.asarray(o["fill_qty"], dtype=float)
    filled = qty > 0
    side = np.asarray(o["side"], dtype=float)[filled]
    px = np.asarray(o["fill_px"], dtype=float)[filled]
    t_h = np.asarray(o["t_match"], dtype=np.int64)[filled] + int(HORIZON_MS * 1e6)
    t_book, mid = out.target["t"], out.target["mid"]
    inside = t_h <= (t_book[-1] if len(t_book) else 0)
    i = np.searchsorted(t_book, t_h[inside], side="right") - 1  # the prevailing mid at t_fill + horizon
    markouts = side[inside] * (mid[i] - px[inside]) / px[inside] * 1e4
    return SeedResult(cfg.seed, len(qty), int(filled.sum()), markouts)


def _fmt(v: float) -> str:
    return "   n/a" if v != v else f"{v:+6.2f}"


def table(results: list[SeedResult], title: str) -> tuple[str, dict[str, object]]:
    lines = [title, f"{'seed':>4} {'orders':>6} {'fills':>5} {'n@1s':>5} {'mean 1s bps':>11}  95% bootstrap interval"]
    rows = []
    for r in results:
        lo, hi = bootstrap_ci(r.markouts_bps, r.seed)
        lines.append(f"{r.seed:>4} {r.orders:>6} {r.fills:>5} {len(r.markouts_bps):>5} {_fmt(r.mean):>11}  "
                     f"[{_fmt(lo)}, {_fmt(hi)}]")
        rows.append({"seed": r.seed, "orders": r.orders, "fills": r.fills, "n": len(r.markouts_bps),
                     "mean_bps": r.mean, "ci95": [lo, hi]})
    pooled = np.concatenate([r.markouts_bps for r in results]) if results else np.zeros(0)
    lo, hi = bootstrap_ci(pooled, 0)
    mean = float(pooled.mean()) if len(pooled) else float("nan")
    positive = sum(1 for r in results if r.mean > 0)
    lines.append(f"{'all':>4} {sum(r.orders for r in results):>6} {sum(r.fills for r in results):>5} "
                 f"{len(pooled):>5} {_fmt(mean):>11}  [{_fmt(lo)}, {_fmt(hi)}]")
    verdict = ("reliably positive (the pooled interval is above 0)" if lo > 0
               else "not reliably positive (the pooled interval reaches 0 or below)")
    lines.append(f"seeds with a positive mean: {positive}/{len(results)}; pooled markout at 1 s is {verdict}")
    return "\n".join(lines), {"seeds": rows, "pooled": {"n": len(pooled), "mean_bps": mean, "ci95": [lo, hi]},
                              "positive_seeds": positive, "reliably_positive": bool(lo > 0)}


def _settings(pairs: list[str]) -> dict[str, object]:
    """--set KEY=VALUE pairs, read as TOML values and checked as a market file's keys are."""
    text = "\n".join(f"{k.strip()} = {v.strip()}" for k, _, v in (p.partition("=") for p in pairs))
    return parse_market(text, "--set")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.market_markout", description=__doc__.split("\n\n")[0])
    p.add_argument("--market", default=DEFAULT_MARKET, help="preset name or market TOML file (default: default)")
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    p.add_argument("--duration", type=float, default=300.0, help="simulated seconds per seed (default 300)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a market setting")
    p.add_argument("--strategy-config", type=Path, help="strategy TOML (default: StrategyConfig defaults)")
    p.add_argument("--feed-us", type=float, default=300.0, help="book hop, feed publish -> strategy (us)")
    p.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = p.parse_args(argv)
    if args.seeds < 1 or not args.duration > 0:
        print("market_markout: --seeds must be >= 1 and --duration > 0", file=sys.stderr)
        return 2
    try:
        overrides = _settings(args.set)
        strategy = load_config(StrategyConfig, args.strategy_config, "strategy")
        cfgs = [load_market(args.market, **{**overrides, "seed": s}) for s in range(1, args.seeds + 1)]
    except (MarketFileError, ValueError, OSError) as exc:
        print(f"market_markout: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = [run_seed(cfg, args.duration, strategy, int(args.feed_us * 1e3)) for cfg in cfgs]
    wall = time.perf_counter() - t0
    title = (f"naive latency-arb rule, paper fills, markout at {HORIZON_MS:g} ms -- market {args.market}"
             f"{' ' + ' '.join(args.set) if args.set else ''}, {args.duration:g} s per seed")
    text, doc = table(results, title)
    print(text)
    print(f"({args.seeds} seeds x {args.duration:g} s simulated in {wall:.1f} s)")
    if args.json is not None:
        doc.update({"market": args.market, "set": args.set, "duration_s": args.duration, "horizon_ms": HORIZON_MS})
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
