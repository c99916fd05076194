"""`caerus verdict`: is the model's PnL above 0 net of costs, at the fleet's latency, out of sample -- with placebo
markets in the same run that must all say NO (caerus.research.verdict.pipeline).

    caerus verdict [--market default|FILE --seeds 10 --minutes 20 | --session DIR ... | --store DIR ...]
        [--latency-from SESSION | --latency CONST] [--wire D] [--fee-tier N | --fee-bps X]
        [--controls decoupled,leader_delayed,lag_zero,target_future] [--train-fraction 0.6] [--folds 3]
        [--bootstrap 2000] [--min-block-s 240] [--min-blocks 10] [--out DIR] [--json PATH]

Exit 0 with the answer (YES, NO or INSUFFICIENT DATA: each a result); 3 when a control says YES (CONTROL FAILED:
the pipeline found an edge where there is none); 2 with one line on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from caerus.research.backtest import sources
from caerus.research.backtest.app import parse_latency
from caerus.research.backtest.fills import FillError, FillRules
from caerus.research.backtest.latency import LatencyError, LatencyModel, latency_points
from caerus.research.verdict import pipeline, render
from caerus.sim.core.market_config import MarketFileError

EXIT_CONTROL_FAILED = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--market", default=None, help="market preset or TOML run offline (default: default)")
    src.add_argument("--session", type=Path, action="append", metavar="DIR",
                     help="a captured session folder (repeatable: one timeline each)")
    src.add_argument("--store", type=Path, action="append", metavar="DIR",
                     help="a chDB capture store, e.g. from `caerus data import` (repeatable)")
    p.add_argument("--seeds", type=int, default=10, help="market: seeds 1..N (default 10)")
    p.add_argument("--minutes", type=float, default=20.0, help="market: simulated minutes per seed (default 20)")
    lat = p.add_mutually_exclusive_group()
    lat.add_argument("--latency-from", type=Path, metavar="SESSION",
                     help="draw every order's path from this session's measured histograms")
    lat.add_argument("--latency", metavar="CONST",
                     help="a constant order latency instead of the fleet's profile (e.g. 1ms; 0 is named ZERO)")
    p.add_argument("--wire", default=None, metavar="D", help="one-way wire time to the venue (default: the profile's)")
    p.add_argument("--block-ms", type=float, default=None,
                   help="Hyperliquid's block interval (default: the market's, or estimated from the books)")
    p.add_argument("--fee-tier", type=int, default=0, help="Hyperliquid taker tier (default 0: 4.5 bps)")
    p.add_argument("--fee-bps", type=float, default=None, help="one taker fee per leg instead of the tier's")
    p.add_argument("--controls", default=",".join(pipeline.CONTROLS), help="controls to run (comma separated)")
    p.add_argument("--train-fraction", type=float, default=0.6, help="first part of each timeline trained on")
    p.add_argument("--horizon-ms", type=float, default=1000.0, help="target horizon (default 1000)")
    p.add_argument("--folds", type=int, default=3, help="walk-forward folds (default 3)")
    p.add_argument("--seed", type=int, default=1, help="training seed (default 1)")
    p.add_argument("--kind", choices=("auto", "linear", "trees"), default="auto",
                   help="model family trained (auto: both, chosen on validation)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--min-block-s", type=float, default=pipeline.bootstrap.MIN_BLOCK_S,
                   help=f"shortest bootstrap block, s (default {pipeline.bootstrap.MIN_BLOCK_S:g}: the regime scale)")
    p.add_argument("--min-blocks", type=int, default=pipeline.bootstrap.MIN_BLOCKS,
                   help=f"fewest blocks for a verdict (default {pipeline.bootstrap.MIN_BLOCKS})")
    p.add_argument("--no-latency-points", action="store_true", help="skip PnL at 0 / p50 / p99 / 2x")
    p.add_argument("--out", type=Path, default=Path("verdicts/latest"), help="model files and verdict.json here")
    p.add_argument("--json", type=Path, help="also write the result document here")


def build_source(args: argparse.Namespace) -> pipeline.Source:
    """The verdict's books from the arguments (SourceError / MarketFileError on a bad one)."""
    if args.session or args.store:
        loaded = [(Path(p).name, sources.from_session(p)) for p in args.session or []]
        loaded += [(Path(p).name, sources.from_store(p)) for p in args.store or []]
        followers = {follower_market(Path(p)) for p in args.store or []} | ({"hyperliquid"} if args.session else set())
        if len(followers) > 1:
            raise ValueError(f"the sources' followers are different markets ({', '.join(sorted(followers))}): "
                             "one verdict is about one pair")
        return pipeline.loaded_source("captured books", loaded, followers.pop())
    if args.seeds < 1 or not args.minutes > 0:
        raise ValueError("--seeds must be >= 1 and --minutes > 0")
    return pipeline.market_source(args.market or "default", tuple(range(1, args.seeds + 1)), args.minutes)


def follower_market(store: Path) -> str:
    """The true market in an imported store's follower slot ("hyperliquid" for a store the fleet captured)."""
    from caerus.data.imports.meta import load_meta

    if not (store / "import.json").is_file():
        return "hyperliquid"
    m = [m for m in load_meta(store).get("markets", []) if m.get("slot") == "hyperliquid"]
    if len(m) != 1:
        raise ValueError(f"--store {store}: {len(m)} markets in the follower's slot, one needed")
    return f"{m[0]['venue']} {m[0]['product']} {m[0]['symbol']}"


def verdict_latency(args: argparse.Namespace) -> LatencyModel:
    """The fleet's measured profile by default; a session's histograms; or a named constant."""
    wire = None if args.wire is None else parse_latency(args.wire)
    if args.latency_from is not None:
        return LatencyModel.from_session(args.latency_from, wire_ns=wire)
    if args.latency is not None:
        return LatencyModel.constant(parse_latency(args.latency))
    return LatencyModel.default(wire_ns=wire)


def run(args: argparse.Namespace) -> int:
    try:
        opts = pipeline.VerdictOptions(
            train_fraction=args.train_fraction, horizon_ms=args.horizon_ms, folds=args.folds, train_seed=args.seed,
            kinds=("linear", "trees") if args.kind == "auto" else (args.kind,),
            controls=tuple(c for c in args.controls.split(",") if c), bootstrap=args.bootstrap,
            min_block_s=args.min_block_s, min_blocks=args.min_blocks, latency_points=not args.no_latency_points)
        opts.check()
        src = build_source(args)
        latency = verdict_latency(args)
        rules = FillRules(fee_tier=args.fee_tier, fee_bps=args.fee_bps,
                          block_ns=None if args.block_ms is None else round(args.block_ms * 1e6))
        rules.check()
        points = latency_points(latency) if opts.latency_points and latency.observed is None else []
        doc = pipeline.run(src, opts, latency, rules, args.out, points)
    except (sources.SourceError, MarketFileError, LatencyError, FillError, ValueError, OSError) as exc:
        print(f"caerus verdict: {exc}", file=sys.stderr)
        return 2
    text = render.render(doc)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    body = json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"
    (args.out / "verdict.json").write_text(body)
    (args.out / "verdict.txt").write_text(text + "\n")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(body)
    if doc["verdict"] == pipeline.CONTROL_FAILED:
        print(f"caerus verdict: CONTROL FAILED: {doc['why']}", file=sys.stderr)
        return EXIT_CONTROL_FAILED
    return 0
