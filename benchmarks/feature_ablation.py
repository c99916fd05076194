"""Which features could the model do without? Drop-feature ablation on validation folds only (issue 29: fewer
features per book is the way left to a cheaper decision).

The rows are the verdict's training range (caerus.research.verdict: seeds 1..N of a market,
the first ``train_fraction`` of each seed's time), so nothing here reads the held-out test range. For each feature
set (all features, then each candidate dropped, then some pairs) every candidate of ``caerus train``'s grid is
fitted on each walk-forward fold's training rows and scored on its validation rows: mean validation R^2, and the
validation walk total net of costs (bps) at the best threshold of the entry grid, as ``caerus train``
scores them. Printed per
set: the best candidate by mean R^2 with both numbers, then every candidate's R^2/total. Seeded: the same options
print the same table. The sets are of the current feature schema (caerus.strategy.feature_vector.NAMES); schema 1's run,
which chose schema 2 (without bn_ofi and hl_block_phase), is quoted in docs/research.md, Decision cost.

    python -m benchmarks.feature_ablation [--market default] [--seeds 10] [--minutes 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from caerus.research.models.data import market_events, timeline, training_rows
from caerus.research.models.train import (
    ENTRY_GRID,
    LINEAR_GRID,
    TREES_GRID,
    TrainOptions,
    _fit,
    _net,
    _r2,
    round_trip_cost,
    walk_entries,
)
from caerus.research.models.walkforward import folds
from caerus.research.verdict.pipeline import VerdictOptions
from caerus.strategy.feature_vector import NAMES

#: the features dropped alone (the costlier ones per book first), then together (the two spreads: bn_spread's drop
#: raised validation R^2 in schema 1's run, docs/research.md)
SINGLE = ("bn_ret_50ms", "bn_ret_200ms", "catch_up", "hl_book_age_ms", "bn_micro_dev", "bn_spread", "hl_spread",
          "bn_imbalance")
PAIRS = (("bn_spread", "hl_spread"), ("bn_ret_200ms", "catch_up"))
_UNKNOWN = sorted((set(SINGLE) | {n for d in PAIRS for n in d}) - set(NAMES))
if _UNKNOWN:  # a set naming a feature the schema no longer has would silently drop nothing
    raise ImportError(f"feature_ablation drops {', '.join(_UNKNOWN)}, not in the feature schema {NAMES}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.feature_ablation", description=__doc__.split("\n\n")[0])
    p.add_argument("--market", default="default", help="a preset or a TOML file")
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    p.add_argument("--minutes", type=float, default=20.0, help="simulated minutes per seed (default 20)")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    args = p.parse_args(argv)
    if args.seeds < 1 or not args.minutes > 0:
        print("feature_ablation: --seeds must be >= 1 and --minutes > 0", file=sys.stderr)
        return 2
    opts = VerdictOptions()
    t0 = time.perf_counter()
    lines = [timeline(f"seed {s}", market_events(args.market, s, args.minutes * 60.0), opts.train_fraction)
             for s in range(1, args.seeds + 1)]
    ds, src = training_rows(lines, opts.horizon_ms)
    fs = folds(ds.t, opts.folds, int(ds.horizon_ms * 1e6), source=src)
    cool = int(TrainOptions().cooldown_ms * 1e6)
    cost = round_trip_cost(ds, TrainOptions().fee_per_leg_bps())  # as caerus train scores: net of fees and spread
    print(f"market {args.market}: seeds 1-{args.seeds}, {args.minutes:g} min each, training range (first "
          f"{opts.train_fraction:.0%}) only: {len(ds)} rows, {opts.folds} walk-forward folds")
    sets = {"all": ()} | {f"-{n}": (n,) for n in SINGLE} | {" ".join(f"-{n}" for n in d): d for d in PAIRS}
    results: dict[str, dict[str, list[float]]] = {}
    for label, drop in sets.items():
        cols = [i for i, n in enumerate(NAMES) if n not in drop]
        res: dict[str, list[float]] = {}
        for kind, grid in (("linear", LINEAR_GRID), ("trees", TREES_GRID)):
            for params in grid:
                r2s, oof = [], []
                for f in fs:
                    m = _fit(kind, params, ds.X[f.train][:, cols], ds.y[f.train], 1)
                    pred = np.asarray(m.predict(ds.X[f.val][:, cols]), dtype=np.float64)  # type: ignore[attr-defined]
                    r2s.append(_r2(pred, ds.y[f.val]))
                    oof.append(_net(pred, ds.half_spread[f.val]))
                total = max(sum(walk_entries(ds.t[f.val], o, ds.y[f.val], cost[f.val], thr, cool)[1]
                                for f, o in zip(fs, oof, strict=True)) for thr in ENTRY_GRID)
                res[f"{kind} {params}"] = [float(np.mean(r2s)), float(total)]
        results[label] = res
        name, (r2, tot) = max(res.items(), key=lambda kv: kv[1][0])
        print(f"{label:40s} best {name:62s} mean R^2 {r2:.4f}  walk total {tot:8.1f} bps | "
              + " ".join(f"{v[0]:.4f}/{v[1]:.0f}" for v in res.values()), flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "feature_ablation", "market": args.market, "rows": len(ds),
                                         "seeds": args.seeds, "minutes": args.minutes, "sets": results},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
