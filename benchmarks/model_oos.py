"""The research verdict out of sample, per market, with its placebo controls: ``caerus verdict`` (the code is
caerus.research.verdict) over the default stochastic market, a calibrated one and the known-edge positive control.

Per market: seeds 1..N simulated offline; the market and each control (follower decoupled, leader delayed, lag 0,
target shifted into the future) trained on the first part of every seed's time and replayed on the rest at the
verdict's latency, net of fees and spread; PnL with a moving-block bootstrap interval; YES only where the market
says YES and every control says NO. Exit 3 when any control says YES (the run fails loudly), else 0.

    python -m benchmarks.model_oos [--quick] [--markets default,docs/markets/calibrated.toml,known-edge]
        [--seeds 10] [--minutes 20] [--out DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel, latency_points
from caerus.research.verdict import pipeline, render

CALIBRATED = "docs/markets/calibrated.toml"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.model_oos", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="2 seeds x 4 min, 2 folds, 300 replicates: a smoke run (its verdicts say insufficient data)")
    p.add_argument("--markets", default=f"default,{CALIBRATED},known-edge", help="comma-separated presets or TOMLs")
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N per market (default 10)")
    p.add_argument("--minutes", type=float, default=20.0, help="simulated minutes per seed (default 20)")
    p.add_argument("--out", type=Path, default=Path("/tmp/caerus-model-oos"), help="model files go here")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    args = p.parse_args(argv)
    seeds, minutes = args.seeds, args.minutes
    opts = pipeline.VerdictOptions()
    if args.quick:
        seeds, minutes = 2, 4.0
        opts = pipeline.VerdictOptions(folds=2, bootstrap=300)
    if seeds < 1 or not minutes > 0:
        print("model_oos: --seeds must be >= 1 and --minutes > 0", file=sys.stderr)
        return 2
    latency = LatencyModel.default()  # the fleet's measured profile
    results, failed = [], []
    for k, market in enumerate(m for m in args.markets.split(",") if m):
        t0 = time.perf_counter()
        try:
            doc = pipeline.run(pipeline.market_source(market, tuple(range(1, seeds + 1)), minutes), opts, latency,
                               FillRules(), args.out / f"market-{k}", latency_points(latency))
        except (ValueError, OSError) as exc:
            print(f"model_oos: {market}: {exc}", file=sys.stderr)
            return 2
        print(render.render(doc))
        print(f"({time.perf_counter() - t0:.0f} s)\n")
        results.append(doc)
        if doc["verdict"] == pipeline.CONTROL_FAILED:
            failed.append(market)
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "model_oos", "markets": results}, indent=1, default=str) + "\n")
    if failed:
        print(f"model_oos: CONTROL FAILED on {', '.join(failed)}: a placebo said YES", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
