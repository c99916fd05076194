"""One backtest, its latency points, and a latency sweep, as JSON-able results that name every assumption.

``run_backtest(loaded, opts)`` replays the loaded events under the options and returns the result document:
``assumptions`` (data source and range, sample sizes, latency source and its segments, fill rules and fees, seed,
strategy parameters), ``metrics`` (caerus.research.backtest.results) and ``orders``. Nothing in it depends on the
wall clock, so the same events, options and seed give byte-identical JSON; how long the run took is returned
apart (``timing``). The default options are the fleet's execution: latency from the fleet's profile
(``LatencyModel.default``), fills on Hyperliquid's block clock with depletion (``FillRules()``).

``price_latency(loaded, opts)`` reruns the same data and rules at each of
:func:`caerus.research.backtest.latency.latency_points` (order path 0, p50, p99, every draw doubled): PnL against
latency, in every ``caerus backtest`` result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from caerus.research.backtest import engine, results
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyError, LatencyModel, latency_points
from caerus.research.backtest.sources import Loaded
from caerus.strategy.config import StrategyConfig
from caerus.wire import Venue

FORMAT = 1


@dataclass(frozen=True)
class BacktestOptions:
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    latency: LatencyModel = field(default_factory=LatencyModel.default)
    fills: FillRules = field(default_factory=FillRules)
    seed: int = 1
    start_ns: int | None = None  # the strategy starts reading here (earlier books: the latest per venue only)


def run_backtest(loaded: Loaded, opts: BacktestOptions) -> tuple[dict[str, object], dict[str, float]]:
    """(result document, timing). The document is deterministic in (events, options, seed)."""
    rules = opts.fills
    block_from_source = rules.block_ns is None and loaded.hl_block_ns is not None
    if block_from_source:
        rules = replace(rules, block_ns=loaded.hl_block_ns)
    spec = engine.RunSpec(opts.strategy, loaded.instruments, opts.latency, rules, opts.seed, opts.start_ns,
                          int(Venue.HYPERLIQUID))
    t0 = time.perf_counter()
    out = engine.run(loaded.events, spec)
    t1 = time.perf_counter()
    names = [i.name for i in loaded.instruments][:len(out.decisions)]
    metrics = results.summarise(out, rules, int(Venue.HYPERLIQUID), names)
    fills_doc = rules.describe()
    notes = dict(out.fill_notes)
    if block_from_source and notes.get("blocks"):
        notes["block_source"] = "the source's (the offline market's hl_block_ms)"
    fills_doc["hl_block"] = notes
    ev = loaded.events
    span_s = (out.t_last - out.t_first) / 1e9
    doc: dict[str, object] = {
        "format": FORMAT,
        "assumptions": {
            "data": {"source": loaded.description, "books": len(ev), "books_by_venue": ev.counts(),
                     "books_replayed": out.events, "t_first_seen": out.t_first, "t_last_seen": out.t_last,
                     "span_s": span_s, "start_ns": opts.start_ns},
            "seed": opts.seed,
            "latency": opts.latency.describe(),
            "fills": fills_doc,
            "strategy": msgspec.to_builtins(opts.strategy),
            "instruments": names,
            "not_modelled": ["the execution engine's risk checks (rate, notional, price band)",
                             *([] if opts.latency.observed is not None else
                               ["the live strategy's latest-value ring reads (a burst skipped to its newest book): "
                                "every book is fed here"]),
                             "depth beyond the top of book",
                             *(["other takers ahead of us in a block (--top-fraction prices them)"]
                               if rules.top_fraction >= 1.0 else [])],
            "samples": {"orders": metrics["total"]["orders"], "fills": metrics["total"]["fills"]},  # type: ignore[index]
        },
        "metrics": metrics,
        "orders": results.orders_table(out),
        "order_table_full": out.table_full,
    }
    wall = t1 - t0
    timing = {"replay_s": wall, "events": out.events, "events_per_s": out.events / wall if wall else 0.0,
              "span_s": span_s, "x_real_time": span_s / wall if wall else 0.0}
    return doc, timing


def price_latency(loaded: Loaded, opts: BacktestOptions) -> dict[str, object]:
    """PnL against latency: the same data, rules and seed at each latency point of ``opts.latency``
    (:func:`latency_points`: order path 0, its p50, its p99, every draw doubled), one row each (name, what it is,
    the constant order path ns or None, orders, fills, fill rate, PnL marked/realised/fees, 1 s markout). A replay
    as observed has no points: ``{"points": [], "why": ...}``."""
    try:
        points = latency_points(opts.latency)
    except LatencyError as exc:
        return {"base": opts.latency.source, "points": [], "why": str(exc)}
    rows = []
    for pt in points:
        doc, _ = run_backtest(loaded, replace(opts, latency=pt.model))
        tot = doc["metrics"]["total"]  # type: ignore[index]
        rows.append({"point": pt.name, "label": pt.label, "order_path_ns": pt.order_path_ns,
                     "orders": tot["orders"], "fills": tot["fills"], "fill_rate": tot["fill_rate"],
                     "pnl_marked": tot["pnl"]["marked"], "pnl_realised": tot["pnl"]["realised"],
                     "fees": tot["pnl"]["fees"], "markout_1s_bps": tot["markouts"]["1000ms"]["mean_bps"]})
    return {"base": opts.latency.source, "varies": "the order path (decision + queue + pickup to sent + wire); the "
            "market data delay stays the base model's", "points": rows}


def latency_sweep(loaded: Loaded, opts: BacktestOptions, adds_ns: list[int]) -> dict[str, object]:
    """The same data and rule at each added order latency: PnL and fill rate against latency."""
    points = []
    for add in adds_ns:
        lat = replace(opts.latency, add_ns=opts.latency.add_ns + add)
        doc, _ = run_backtest(loaded, replace(opts, latency=lat))
        tot = doc["metrics"]["total"]  # type: ignore[index]
        points.append({"added_ns": add, "pnl_marked": tot["pnl"]["marked"], "pnl_realised": tot["pnl"]["realised"],
                       "orders": tot["orders"], "fills": tot["fills"], "fill_rate": tot["fill_rate"],
                       "markout_1s_bps": tot["markouts"]["1000ms"]["mean_bps"]})
    return {"format": FORMAT, "kind": "latency_sweep", "latency": opts.latency.describe(), "seed": opts.seed,
            "data": loaded.description, "points": points}


def write_json(doc: dict[str, object], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False, default=_jsonable) + "\n")
    tmp.replace(path)
    return path


def _jsonable(o: object) -> object:
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON-able: {type(o).__name__}")
