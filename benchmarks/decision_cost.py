"""Per-book decision cost of the latency-arb signals, in one run: the naive rule (LatencyArb), the trained model
as a linear dot product and as trees (generated code and flat arrays).

Books: the default market model offline (seed 1), fed in the backtest's t_seen order to each decision object; each
``on_book`` call is timed with ``perf_counter_ns`` around it (the timer's own cost, measured on an empty pair of
reads, is reported and not subtracted). The models are trained here on the first part of the books, one family each, by
``caerus train``'s own selection (3 folds over this benchmark's one 3- or 10-minute seed, the default node-visit
budget, so the chosen shape may differ from ``caerus train``'s defaults; the chosen shape and cost are printed) unless
``--model`` files are given: pass ``caerus train`` files to time what it actually picks. Orders are
not sent: a decision that would fire is counted and the object told nothing (it stays flat), so every form pays
the same per-book path. Printed: p50/p99 per form and the ratio of each p50/p99 to the naive rule's; goal p50 <=
2 us, p99 <= 10 us for the chosen form.

    python -m benchmarks.decision_cost [--quick] [--json PATH] [--books N] [--model linear=FILE --model trees=FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

from caerus.research.backtest import engine
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.research.models.data import market_events, timeline, training_rows
from caerus.research.models.train import TrainOptions, train
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import LatencyArb
from caerus.strategy.model_signal import DEFAULT_FORM, ModelArb, content_hash, load_model

GOAL_P50_NS = 2_000
GOAL_P99_NS = 10_000


def _met(r: dict[str, float]) -> bool:
    return r["p50_ns"] <= GOAL_P50_NS and r["p99_ns"] <= GOAL_P99_NS


def _time(arb: object, recs: list[tuple], seen: list[int], out: np.ndarray) -> None:
    on = arb.on_book  # type: ignore[attr-defined]
    clock = time.perf_counter_ns
    for k, (r, t) in enumerate(zip(recs, seen, strict=True)):
        t0 = clock()
        on(r, t)
        out[k] = clock() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.decision_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer books (a smoke run)")
    p.add_argument("--minutes", type=float, default=10.0, help="simulated minutes of the default market")
    p.add_argument("--model", action="append", default=[], metavar="KIND=FILE", help="use this model file")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    minutes = 3.0 if args.quick else args.minutes
    ln = timeline("seed 1", market_events("default", 1, minutes * 60.0), 0.5)
    files = dict(m.split("=", 1) for m in args.model)
    models = {}
    for kind in ("linear", "trees"):
        if kind in files:
            models[kind] = load_model(files[kind])
            continue
        ds, src = training_rows([ln], 1000.0)
        doc = train(ds, src, TrainOptions(n_folds=3, kinds=(kind,)), {"source": "decision_cost benchmark"})
        path = Path(f"/tmp/decision_cost_{kind}.json")
        path.write_text(json.dumps(doc))
        assert doc["hash"] == content_hash(doc)
        print(f"{kind} model trained here: {doc['selection']['chosen']}")  # type: ignore[index]
        models[kind] = load_model(path)
    lat = LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), ln.loaded.instruments, lat, FillRules(), 1)
    _, recs, seen, _ = engine.prepare(ln.loaded.events, spec, LatencyDraws(lat, 1))
    cfg = StrategyConfig(warmup_ms=0.0)
    forms = {"naive": lambda: LatencyArb(cfg),
             "linear": lambda: ModelArb(cfg, models["linear"], form="linear"),
             "trees_code": lambda: ModelArb(cfg, models["trees"], form="trees_code"),
             "trees_arrays": lambda: ModelArb(cfg, models["trees"], form="trees_arrays")}
    clock = time.perf_counter_ns
    empty = np.empty(20_000, dtype=np.int64)
    for k in range(len(empty)):
        t0 = clock()
        empty[k] = clock() - t0
    results: dict[str, dict[str, float]] = {}
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):  # two rounds, the second kept: caches and branch history warm for every form
            for name, make in forms.items():
                out = np.empty(len(recs), dtype=np.int64)
                _time(make(), recs, seen, out)
                results[name] = {"n": len(out), "p50_ns": float(np.percentile(out, 50)),
                                 "p99_ns": float(np.percentile(out, 99)), "p999_ns": float(np.percentile(out, 99.9))}
    finally:
        gc.enable()
    base = results["naive"]
    for kind, m in models.items():
        print(f"{kind} model: hash {m.hash[:16]}, {m.path}")
    print(f"per-book decision cost, {len(recs)} books of the default market (seed 1, {minutes:g} min); timer "
          f"overhead p50 {np.percentile(empty, 50):.0f} ns (included)")
    print(f"{'form':<13} {'n':>7} {'p50 us':>7} {'p99 us':>7} {'p99.9 us':>8} {'p50/naive':>9} {'p99/naive':>9}")
    for name, r in results.items():
        r["p50_ratio"] = r["p50_ns"] / base["p50_ns"]
        r["p99_ratio"] = r["p99_ns"] / base["p99_ns"]
        print(f"{name:<13} {r['n']:>7} {r['p50_ns'] / 1e3:>7.2f} {r['p99_ns'] / 1e3:>7.2f} "
              f"{r['p999_ns'] / 1e3:>8.2f} {r['p50_ratio']:>9.2f} {r['p99_ratio']:>9.2f}")
    trees = min(("trees_code", "trees_arrays"), key=lambda f: results[f]["p50_ns"])
    print(f"fastest trees form: {trees} (DEFAULT_FORM: {DEFAULT_FORM['trees']}); goal p50 <= "
          f"{GOAL_P50_NS / 1e3:g} us, p99 <= {GOAL_P99_NS / 1e3:g} us: "
          + ", ".join(f"{f} {'met' if _met(results[f]) else 'NOT met'}" for f in ("linear", trees)))
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "decision_cost", "books": len(recs), "minutes": minutes,
                                         "timer_p50_ns": float(np.percentile(empty, 50)), "forms": results,
                                         "model_hashes": {k: m.hash for k, m in models.items()}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
