"""The research verdict: does the trained model make money net of fees and the spread, at the latency the fleet really
has, out of sample -- and does the same pipeline say NO on markets where there is nothing to find?

One run, per source (a market model's seeds, or captured books):

1. **Variants.** The market itself, and controls built from it by code (caerus.research.verdict.placebos): the
   follower decoupled from the leader, the leader's clock delayed by seconds, a lag of 0, and the target shifted into
   the future (training asked to predict a window the features cannot know). Every control must come out NO.
2. **Per variant, the whole pipeline.** Each timeline is cut by time: the first ``train_fraction`` trains, the rest
   tests. Training (caerus.research.models.train) chooses family, hyperparameters and entry threshold on validation
   folds of the training range, scored net of costs, and may decline (no tradeable model: that variant trades nothing
   and says NO). A tradeable model is replayed by the fleet's own decision code (caerus.research.backtest) over each
   test range at the verdict's latency (drawn from a measured profile unless told otherwise), Hyperliquid's fees by
   tier and the spread crossed.
3. **Intervals.** Test-range PnL in 10 s buckets, resampled by a moving-block bootstrap within timelines with the
   block length chosen from the data and at least the regime scale (caerus.research.verdict.bootstrap). Fewer than
   ``min_blocks`` blocks is "insufficient data".
4. **Verdicts.** A variant says YES when its PnL's 95 % interval lies above 0 (and there are enough blocks). The run's
   answer is YES only if the market says YES **and every control says NO**; a control that says YES makes the run
   ``CONTROL FAILED`` (the pipeline found an edge where there is none: nothing it says can be trusted).

Secondary rows, never the verdict: the naive rule at the threshold whose validation turnover matches the model's, and
the model's PnL at other latencies (zero -- named as such --, the measured p50 and p99 as constants, and twice every
drawn latency), so every result says what a microsecond is worth. Every number carries its sample size; the run
names its seeds, data ranges and options.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from caerus.instruments import InstrumentSet
from caerus.research.backtest import engine, sources
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules, estimate_block_ns
from caerus.research.backtest.latency import LatencyModel, LatencyPoint
from caerus.research.calibrate.leadlag import lead_lag
from caerus.research.models.data import Timeline, timeline, training_rows
from caerus.research.models.train import TrainOptions, train
from caerus.research.verdict import bootstrap, placebos
from caerus.research.verdict.pnl import PNL, Buckets, buckets, n_buckets, statistics
from caerus.sim.core.market_config import load_market
from caerus.strategy.config import StrategyConfig
from caerus.wire import TRADEABLE, TRADEABLE_MASK, Venue

_BN = int(Venue.BINANCE)
_HL = int(Venue.HYPERLIQUID)
MARKET = "market"
#: the controls, in the order they are reported; each must say NO
CONTROLS = ("decoupled", "leader_delayed", "lag_zero", "target_future")
CONTROL_TEXT = {
    "decoupled": "follower decoupled from the leader (its own path, a third of the span later)",
    "leader_delayed": f"leader's clock delayed by {placebos.LEADER_DELAY_S:g} s",
    "lag_zero": "lag 0 (moves reach the follower whole at its next block)",
    "target_future": "target shifted into the future",
}
#: the target_future control's shift: past the horizon, the lag's tail and the late catch-up
TARGET_SHIFT_MS = 5000.0
YES, NO, INSUFFICIENT, CONTROL_FAILED = "YES", "NO", "INSUFFICIENT DATA", "CONTROL FAILED"


@dataclass(frozen=True)
class VerdictOptions:
    train_fraction: float = 0.6
    horizon_ms: float = 1000.0
    folds: int = 3
    kinds: tuple[str, ...] = ("linear", "trees")
    train_seed: int = 1
    controls: tuple[str, ...] = CONTROLS
    bucket_s: float = 10.0
    min_block_s: float = bootstrap.MIN_BLOCK_S
    min_blocks: int = bootstrap.MIN_BLOCKS
    bootstrap: int = 2000
    bootstrap_seed: int = 0
    latency_seed: int = 1
    latency_points: bool = True  # also replay at 0, p50, p99 and 2x (the market variant)

    def check(self) -> None:
        unknown = [c for c in self.controls if c not in CONTROLS]
        if unknown:
            raise ValueError(f"verdict: unknown control(s) {', '.join(unknown)} (known: {', '.join(CONTROLS)})")
        if not 0.1 <= self.train_fraction < 1.0:
            raise ValueError(f"verdict: train_fraction must be in [0.1, 1), got {self.train_fraction}")
        if self.bootstrap < 100:
            raise ValueError(f"verdict: at least 100 bootstrap replicates, got {self.bootstrap}")


@dataclass(frozen=True)
class Source:
    """Where the variants' books come from. ``timelines(variant)`` builds each variant's books from the source's
    (the market model regenerated for ``lag_zero``; the books transformed otherwise)."""

    name: str
    description: str
    base: Callable[[], list[tuple[str, sources.Loaded]]]
    lag_zero: Callable[[], list[tuple[str, sources.Loaded]]] | None = None  # the model's own lag-0 market
    block_ns: int | None = None  # Hyperliquid's block interval when the source knows it (the market model)
    follower_blocks: bool = True  # the follower matches on a block clock (Hyperliquid; not a Binance product)
    follower: str = "hyperliquid"  # the follower's true market, for the output


def market_source(market: str, seeds: tuple[int, ...], minutes: float) -> Source:
    """A preset or market TOML, seeds 1..N, ``minutes`` simulated each."""

    def gen(lag_zero: bool) -> list[tuple[str, sources.Loaded]]:
        out = []
        for s in seeds:
            cfg = load_market(market, seed=s)
            if lag_zero:
                cfg = placebos.lag_zero_market(cfg)
            ev = sources.offline_events(cfg, minutes * 60.0)
            insts = sources._catalogue_instruments(tuple(cfg.symbols))
            out.append((f"seed {s}", sources.Loaded(ev, insts, f"market {market} seed {s}, {minutes:g} min")))
        return out

    block_ns = round(load_market(market).hl_block_ms * 1e6)
    return Source(market, f"market {market}: seeds {','.join(map(str, seeds))}, {minutes:g} min each",
                  lambda: gen(False), lambda: gen(True), block_ns)


def loaded_source(name: str, loaded: list[tuple[str, sources.Loaded]], follower: str = "hyperliquid") -> Source:
    """Captured or imported books (a session, a store): one timeline each. ``follower``: the true market in the
    follower's slot (an imported store may hold a Binance product there, which matches continuously: no block
    clock); for Hyperliquid the block interval is estimated from its books (fills.estimate_block_ns)."""
    desc = "; ".join(f"{n}: {ld.description}" for n, ld in loaded)
    blocks = follower.startswith("hyperliquid")
    hl = np.concatenate([ld.events.t_exchange[ld.events.venue == _HL] for _, ld in loaded])
    return Source(name, desc, lambda: loaded, None, estimate_block_ns(hl)[0] if blocks else None, blocks, follower)


def _transform(pairs: list[tuple[str, sources.Loaded]], f: Callable[[BookEvents], BookEvents]) \
        -> list[tuple[str, sources.Loaded]]:
    return [(n, replace(ld, events=f(ld.events))) for n, ld in pairs]


def variant_books(src: Source, variant: str, opts: VerdictOptions) -> tuple[list[Timeline], dict[str, object]]:
    """Each timeline of ``variant``, cut at the training fraction; and what was done to build it."""
    base = src.base()
    note: dict[str, object] = {}
    if variant in (MARKET, "target_future"):
        pairs = base
    elif variant == "decoupled":
        pairs = _transform(base, placebos.decoupled)
    elif variant == "leader_delayed":
        pairs = _transform(base, placebos.leader_delayed)
    elif variant == "lag_zero" and src.lag_zero is not None:
        pairs = src.lag_zero()
        note["built"] = "the market model regenerated with no lag, whole catch-up"
    elif variant == "lag_zero":
        pairs = []
        lags = {}
        for n, ld in base:
            t = timeline(n, ld, opts.train_fraction)
            lag = placebos.lead_lag_ns(ld.events, _BN, _HL, 0, t_end=t.t_split)
            lags[n] = None if not np.isfinite(lag) else round(lag / 1e6, 1)
            shift = -int(lag) if np.isfinite(lag) else 0
            pairs.append((n, replace(ld, events=placebos.shift_venue(ld.events, _HL, shift))))
        note["built"] = "the follower moved earlier by the lead-lag estimated on each training range"
        note["lead_lag_ms"] = lags
    else:
        raise ValueError(f"verdict: unknown variant {variant!r}")
    return [timeline(n, ld, opts.train_fraction) for n, ld in pairs], note


def _close_prices(events: BookEvents, t_end: int) -> dict[int, tuple[float, float]]:
    """Per instrument, Hyperliquid's last tradeable (bid, ask) at or before ``t_end``: where a position left open
    at the end is closed."""
    out: dict[int, tuple[float, float]] = {}
    ok = (events.venue == _HL) & ((events.flags & TRADEABLE_MASK) == TRADEABLE) & (events.t_exchange <= t_end)
    for sym in np.unique(events.symbol[ok]).tolist():
        idx = np.flatnonzero(ok & (events.symbol == sym))
        i = idx[np.argmax(events.t_exchange[idx])]
        out[int(sym)] = (float(events.bid_px[i]), float(events.ask_px[i]))
    return out


def backtest_range(line: Timeline, strategy: StrategyConfig, latency: LatencyModel, rules: FillRules,
                   seed: int, bucket_ns: int) -> tuple[Buckets, engine.RunOutput]:
    """One rule over one timeline's test range (books the strategy reads from the split on)."""
    spec = engine.RunSpec(strategy, line.loaded.instruments, latency, rules, seed=seed, start_ns=line.t_split,
                          target_venue=_HL)
    out = engine.run(line.loaded.events, spec)
    t_end = max(out.t_last, line.t_split + 1)
    b = buckets(out, line.t_split, t_end, rules.fee_bps_of(_HL) * 1e-4, bucket_ns,
                _close_prices(line.loaded.events, t_end))
    return b, out


@dataclass
class ArmResult:
    """One rule's test-range results over every timeline."""

    name: str
    runs: list[Buckets]
    latency: str

    @property
    def table(self) -> np.ndarray:
        return np.concatenate([r.table for r in self.runs])

    def counts(self) -> dict[str, int]:
        return {"orders": sum(r.orders for r in self.runs), "fills": sum(r.fills for r in self.runs),
                "round_trips": sum(r.round_trips for r in self.runs)}


def summarise(arm: ArmResult, w: np.ndarray, confidence: float) -> dict[str, Any]:
    """Point values, intervals and sample sizes of one arm under bootstrap weights ``w``."""
    table = arm.table
    point = statistics(np.ones((1, len(table))), table)
    reps = statistics(w, table)
    out: dict[str, Any] = {"label": arm.name, "latency": arm.latency, **arm.counts(),
                           "per_timeline_pnl": [round(r.pnl, 6) for r in arm.runs]}
    for k, v in point.items():
        out[k] = {"value": _finite(v[0]), "ci": bootstrap.interval(reps[k], confidence)}
    mk = table[:, 5::2] if table.size else np.zeros((0, 3))
    out["markout_n"] = [int(x) for x in table[:, 6::2].sum(axis=0)] if len(mk) else [0, 0, 0]
    return out


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def run_variant(src: Source, variant: str, opts: VerdictOptions, latency: LatencyModel, rules: FillRules,
                model_dir: Path, points: list[LatencyPoint]) -> dict[str, Any]:
    """The whole pipeline on one variant: train, decide, replay, resample; its verdict. ``rules`` carry the block
    interval the fills and the training target share."""
    lines, note = variant_books(src, variant, opts)
    shift = TARGET_SHIFT_MS if variant == "target_future" else 0.0
    res: dict[str, Any] = {"variant": variant, "control": variant != MARKET,
                           "what": CONTROL_TEXT.get(variant, "the market as it is"), **note,
                           "ranges": [{"timeline": ln.name, "t_first": ln.t_first, "t_split": ln.t_split,
                                       "t_last": ln.t_last, "test_minutes": round((ln.t_last - ln.t_split) / 60e9, 3)}
                                      for ln in lines]}
    if rules.blocks and rules.block_ns is None:  # a source that does not know its block interval: the books say
        hl = np.concatenate([ln.loaded.events.t_exchange[ln.loaded.events.venue == _HL] for ln in lines])
        rules = replace(rules, block_ns=estimate_block_ns(hl)[0])
    bucket_ns = int(opts.bucket_s * 1e9)
    n_b = [n_buckets(ln.t_split, max(ln.t_last, ln.t_split + 1), bucket_ns) for ln in lines]
    try:
        order_ns = latency.order_path_quantiles((0.5,))[0.5]
        block_ns = (rules.block_ns or 0) if rules.blocks else 0
        ds, rows_src = training_rows(lines, opts.horizon_ms, shift_ms=shift, latency=latency, seed=opts.latency_seed,
                                     order_ns=order_ns, block_ns=block_ns)
        # training is scored at the fee the backtest charges (one definition: the fill rules')
        topts = TrainOptions(n_folds=opts.folds, seed=opts.train_seed, kinds=opts.kinds,
                             fee_bps=rules.fee_bps_of(_HL))
        doc: dict[str, Any] = train(ds, rows_src, topts,
                    {"source": {"kind": src.name, "variant": variant}, "train_fraction": opts.train_fraction,
                     "target_shift_ms": shift,
                     "ranges": [{"timeline": ln.name, "t_first": ln.t_first, "t_train_end": ln.t_split}
                                for ln in lines]})
    except ValueError as exc:  # too few rows to train on: nothing is traded, and the data is what is short
        doc = {"tradeable": False, "decline": f"training could not run: {exc}"}
        res["training_failed"] = str(exc)
    path = model_dir / f"model-{variant}.json"
    res.update({"tradeable": doc["tradeable"], "decline": doc["decline"]})
    if "hash" in doc:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        dec = doc["decision"]
        res["model"] = {"path": str(path), "hash": doc["hash"], "kind": doc["kind"],
                        "params": doc["selection"]["chosen"]["params"], "entry_bps": dec["entry_bps"],
                        "validation": dec["validation"], "training_rows": doc["training"]["rows"]}
    if doc["tradeable"]:
        model_cfg = StrategyConfig(signal="model", model=str(path))
        arms = {"model": ArmResult("model", [], latency.source)}
        for k, ln in enumerate(lines):
            arms["model"].runs.append(backtest_range(ln, model_cfg, latency, rules, opts.latency_seed + k,
                                                     bucket_ns)[0])
        naive_cfg = StrategyConfig(entry_bps=float(dec["naive_matched"]["entry_bps"]))
        arms["naive_matched"] = ArmResult("naive_matched", [backtest_range(
            ln, naive_cfg, latency, rules, opts.latency_seed + k, bucket_ns)[0] for k, ln in enumerate(lines)],
            latency.source)
        if variant == MARKET and opts.latency_points:
            for pt in points:
                arms[f"latency {pt.name}"] = ArmResult(pt.label, [backtest_range(
                    ln, model_cfg, pt.model, rules, opts.latency_seed + k, bucket_ns)[0] for k, ln in enumerate(lines)],
                    pt.model.headline())
    else:
        arms = {"model": ArmResult("model", [Buckets.empty(n) for n in n_b], latency.source)}
    series = [r.table[:, PNL] for r in arms["model"].runs]
    plan = bootstrap.plan(series, opts.bucket_s, min_block_s=opts.min_block_s, min_blocks=opts.min_blocks)
    w = bootstrap.weights(plan, opts.bootstrap, opts.bootstrap_seed)
    res["bootstrap"] = plan.describe()
    res["arms"] = {name: summarise(a, w, bootstrap.CONFIDENCE) for name, a in arms.items()}
    if "naive_matched" in arms:
        diff = statistics(w, arms["model"].table)["pnl"] - statistics(w, arms["naive_matched"].table)["pnl"]
        res["model_minus_naive"] = {"value": res["arms"]["model"]["pnl"]["value"]
                                    - res["arms"]["naive_matched"]["pnl"]["value"],
                                    "ci": bootstrap.interval(diff),
                                    "naive_entry_bps": dec["naive_matched"]["entry_bps"]}
    res["verdict"], res["why"] = _verdict(res, plan)
    return res


def _verdict(res: dict[str, Any], plan: bootstrap.BlockPlan) -> tuple[str, str]:
    # too little test data says nothing either way, whether or not training found something to trade
    if "training_failed" in res:
        return INSUFFICIENT, f"too little data to train on: {res['training_failed']}"
    if not plan.sufficient:
        return INSUFFICIENT, (f"{plan.n_blocks:.1f} blocks of {plan.intended_buckets * plan.bucket_s:g} s in the "
                              f"test ranges, {plan.min_blocks} needed")
    if not res["tradeable"]:
        return NO, f"training declined: {res['decline']}"
    pnl = res["arms"]["model"]["pnl"]
    ci = pnl["ci"]
    if ci is not None and ci[0] > 0:
        return YES, f"PnL {pnl['value']:+.2f} USD, 95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}] above 0"
    lo, hi = ci if ci is not None else (float("nan"), float("nan"))
    return NO, f"PnL {pnl['value']:+.2f} USD, 95% CI [{lo:+.2f}, {hi:+.2f}] not above 0"


def overall(variants: list[dict[str, Any]]) -> tuple[str, str]:
    """The run's answer from the market's verdict and its controls'."""
    market = next(v for v in variants if v["variant"] == MARKET)
    failed = [v["variant"] for v in variants if v["control"] and v["verdict"] == YES]
    if failed:
        return CONTROL_FAILED, (f"control(s) {', '.join(failed)} said YES on a market with nothing to find: the "
                                f"pipeline finds edges that are not there, so the market's verdict means nothing")
    if market["verdict"] == INSUFFICIENT:
        return INSUFFICIENT, market["why"]
    unchecked = [v["variant"] for v in variants if v["control"] and v["verdict"] == INSUFFICIENT]
    if market["verdict"] == YES and unchecked:
        return INSUFFICIENT, f"control(s) {', '.join(unchecked)} could not be judged"
    if market["verdict"] == YES:
        return YES, market["why"] + "; every control said NO"
    return NO, market["why"]


def run(src: Source, opts: VerdictOptions, latency: LatencyModel, rules: FillRules, model_dir: Path,
        points: list[LatencyPoint] | None = None) -> dict[str, Any]:
    """Every variant of ``src``; the result document (deterministic in the source, options and seeds). The block
    interval is the rules' when given, else the source's."""
    opts.check()
    if not src.follower_blocks:
        rules = replace(rules, blocks=False)  # a follower that matches continuously (a Binance product)
    elif rules.block_ns is None and src.block_ns is not None:
        rules = replace(rules, block_ns=src.block_ns)
    variants = [run_variant(src, v, opts, latency, rules, model_dir, points or [])
                for v in (MARKET, *opts.controls)]
    answer, why = overall(variants)
    facts: dict[str, Any] = {"follower": src.follower}
    if src.lag_zero is None:  # captured books: the lead-lag they show, on each training range
        facts["lead_lag"] = {}
        for name, ld in src.base():
            ln = timeline(name, ld, opts.train_fraction)
            try:
                ll = lead_lag(ld.events.take(np.flatnonzero(ld.events.t_exchange < ln.t_split)), _BN, _HL)
                facts["lead_lag"][name] = {**ll.describe(), "text": ll.text()}
            except ValueError as exc:
                facts["lead_lag"][name] = {"text": f"not estimated: {exc}"}
    return {"kind": "verdict", "source": src.description, "facts": facts, "options": _jsonable(opts.__dict__),
            "latency": {**latency.describe(), "headline": latency.headline()}, "fills": rules.describe(),
            "fill_rule": rules.rule_text(), "variants": variants,
            "verdict": answer, "why": why}


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def instruments_of(pairs: list[tuple[str, sources.Loaded]]) -> InstrumentSet:
    return pairs[0][1].instruments
