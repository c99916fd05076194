"""`caerus train`: walk-forward training of the lead-lag model on the market model's seeds or a captured session,
written as one model file (JSON: plain numbers, feature schema, training range and source, per-fold metrics,
library versions, content hash) that ``signal = "model"`` strategies load.

    caerus train -o model.json [--market default|FILE --seeds 1,2,3 --minutes 10] [--session DIR] [--store DIR]
        [--train-fraction 0.75] [--horizon-ms 1000] [--folds 4] [--kind auto|linear|trees] [--seed 1]
        [--max-node-visits N] [--fee-tier N | --fee-bps X]

Candidates are scored net of both legs' taker fees and the spread crossed in and out (caerus.research.models.train).
When none has a positive validation edge net of those costs, the file is written with ``tradeable: false`` and its
reason (the strategy refuses it) and the command exits 3 with one line saying so. Bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from caerus.research.backtest import sources
from caerus.research.backtest.sources import SourceError
from caerus.research.models.data import market_events, session_events, timeline, training_rows
from caerus.research.models.train import MAX_NODE_VISITS, TrainOptions, train
from caerus.sim.core.market_config import MarketFileError

#: exit status when training declines to trade (no candidate with a positive validation edge net of costs)
EXIT_DECLINED = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=Path, required=True, help="model file to write (JSON)")
    p.add_argument("--market", default="default", help="market preset or TOML (default: default)")
    p.add_argument("--seeds", default="1,2,3", help="market seeds to train on (default 1,2,3)")
    p.add_argument("--minutes", type=float, default=10.0, help="simulated minutes per seed (default 10)")
    p.add_argument("--session", type=Path, help="train on a captured session folder instead of the market model")
    p.add_argument("--store", type=Path, help="train on a chDB capture store (e.g. `caerus data import`'s) instead")
    p.add_argument("--fee-tier", type=int, default=0, help="Hyperliquid taker tier the costs use (default 0: 4.5 bps)")
    p.add_argument("--fee-bps", type=float, default=None, help="one taker fee per leg instead of the tier's")
    p.add_argument("--train-fraction", type=float, default=0.75,
                   help="the first part of each timeline trained on; the rest is held out (default 0.75)")
    p.add_argument("--horizon-ms", type=float, default=1000.0, help="target horizon (default 1000 ms)")
    p.add_argument("--folds", type=int, default=4, help="walk-forward folds (default 4)")
    p.add_argument("--kind", choices=("auto", "linear", "trees"), default="auto",
                   help="model family (auto: best mean validation R^2)")
    p.add_argument("--seed", type=int, default=1, help="training seed (default 1)")
    p.add_argument("--max-node-visits", type=int, default=MAX_NODE_VISITS,
                   help="decision cost budget: candidates costing more node visits (trees: mean summed path "
                        f"length; linear: nonzero weights) are not chosen; 0 = none (default {MAX_NODE_VISITS})")


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from None
    if not seeds:
        raise ValueError("--seeds names no seed")
    return seeds


def run(args: argparse.Namespace) -> int:
    try:
        if not 0.1 <= args.train_fraction <= 1.0:
            raise ValueError(f"--train-fraction must be in [0.1, 1], got {args.train_fraction}")
        if args.max_node_visits < 0:
            raise ValueError(f"--max-node-visits must be >= 0 (0: no budget), got {args.max_node_visits}")
        if not args.minutes > 0 or not args.horizon_ms > 0 or args.folds < 1:
            raise ValueError("--minutes and --horizon-ms must be > 0 and --folds >= 1")
        source: dict[str, object]
        if args.session is not None and args.store is not None:
            raise ValueError("--session and --store are two sources: give one")
        if args.session is not None:
            lines = [timeline(str(args.session), session_events(args.session), args.train_fraction)]
            source = {"kind": "session", "path": str(args.session)}
        elif args.store is not None:
            lines = [timeline(str(args.store), sources.from_store(args.store), args.train_fraction)]
            source = {"kind": "store", "path": str(args.store)}
        else:
            seeds = _seeds(args.seeds)
            lines = [timeline(f"seed {s}", market_events(args.market, s, args.minutes * 60.0), args.train_fraction)
                     for s in seeds]
            source = {"kind": "market", "market": args.market, "seeds": seeds, "minutes": args.minutes}
        ds, src = training_rows(lines, args.horizon_ms)
        kinds = ("linear", "trees") if args.kind == "auto" else (args.kind,)
        ranges = [{"timeline": ln.name, "t_first": ln.t_first, "t_train_end": ln.t_split, "t_last": ln.t_last,
                   "clock": "t_exchange"} for ln in lines]
        doc = train(ds, src, TrainOptions(n_folds=args.folds, seed=args.seed, kinds=kinds,
                                          max_node_visits=args.max_node_visits, fee_tier=args.fee_tier,
                                          fee_bps=args.fee_bps),
                    {"source": source, "train_fraction": args.train_fraction, "ranges": ranges})
    except (ValueError, SourceError, MarketFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if not doc["tradeable"]:
        print(f"caerus train: no tradeable model ({args.output} says so, and the strategy refuses it): "
              f"{doc['decline']}", file=sys.stderr)
        return EXIT_DECLINED
    sel: dict[str, Any] = doc["selection"]  # type: ignore[assignment]
    dec: dict[str, Any] = doc["decision"]  # type: ignore[assignment]
    chosen = sel["chosen"]
    best = next(c for c in sel["candidates"] if c["kind"] == chosen["kind"] and c["params"] == chosen["params"])
    val = dec["validation"]
    print(f"{args.output}: {doc['kind']} {chosen['params']}, validation net of costs {val['total_bps']:+.1f} bps "
          f"over {val['entries']} entries at entry {dec['entry_bps']:g} bps "
          f"(mean validation R^2 {best['mean_r2']:.4f}, {args.folds} folds), cost {chosen['cost']:g} "
          f"{best['cost_unit']}, {doc['training']['rows']} rows, hash {str(doc['hash'])[:16]}")  # type: ignore[index]
    return 0
