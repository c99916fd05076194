"""Does the trained model beat the naive rule out of sample? The table of caerus.research.models.oos for the default
stochastic market and a calibrated one.

Per market: seeds 1..N simulated offline, one model trained on the first part of every seed's time (walk-forward
folds choose the family, hyperparameters and entry threshold on validation rows only), then the naive rule and
the model backtested on the held-out rest with the same latency and paper fill rules. Printed per market: marked
PnL, Sharpe-like (per-minute PnL mean/sd x sqrt(minutes)), hit rate, markouts at 100 ms/1 s/5 s and turnover,
each with a paired one-minute-block bootstrap 95 % interval for naive, model and model - naive, and the sample
sizes. Seeded: the same options print the same table.

    python -m benchmarks.model_oos [--quick] [--markets default,docs/markets/calibrated.toml] [--seeds 10]
        [--minutes 20] [--out DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from caerus.research.models.oos import OosOptions, render, run_market

CALIBRATED = "docs/markets/calibrated.toml"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.model_oos", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 seeds x 3 min, 200 bootstrap draws (a smoke run)")
    p.add_argument("--markets", default=f"default,{CALIBRATED}", help="comma-separated presets or TOML files")
    p.add_argument("--seeds", type=int, default=10, help="seeds 1..N per market (default 10)")
    p.add_argument("--minutes", type=float, default=20.0, help="simulated minutes per seed (default 20)")
    p.add_argument("--out", type=Path, default=Path("/tmp/caerus-model-oos"), help="model files go here")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    args = p.parse_args(argv)
    opts = OosOptions(seeds=tuple(range(1, args.seeds + 1)), minutes=args.minutes)
    if args.quick:
        opts = replace(opts, seeds=(1, 2), minutes=3.0, folds=2, bootstrap=200)
    if not opts.seeds or not opts.minutes > 0:
        print("model_oos: --seeds must be >= 1 and --minutes > 0", file=sys.stderr)
        return 2
    results = []
    for k, market in enumerate(m for m in args.markets.split(",") if m):
        t0 = time.perf_counter()
        try:
            res = run_market(market, opts, args.out / f"model-{k}.json")
        except (ValueError, OSError) as exc:
            print(f"model_oos: {market}: {exc}", file=sys.stderr)
            return 2
        print(render(res, opts))
        print(f"({time.perf_counter() - t0:.0f} s)\n")
        results.append(res)
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "model_oos", "options": opts.__dict__, "markets": results},
                                        indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
