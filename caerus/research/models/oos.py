"""Out-of-sample comparison of the trained model against the naive rule: train on the first part of each timeline,
backtest both rules on the held-out rest, report every number with a bootstrap interval, and the difference.

Per market (a preset or a calibrated TOML), seeds 1..N of it are simulated offline (caerus.research.models.data).
One model is trained on the first ``train_fraction`` of every seed's time (caerus.research.models.train: walk-forward
folds choose the family, its hyperparameters and the entry threshold on validation rows only); the training
range is cut before anything is computed, so nothing after the split is read (the test truncates the data at the
split and gets the same model file and hash). Then the naive rule (``signal = "naive"``) and the model
(``signal = "model"``) are replayed by caerus.research.backtest's engine over each seed's held-out range (the
strategy starts reading at the split; earlier books set only the latest book per venue), with the same latency
model (constant book hop), the same paper fill rules and fees.

Statistics (per fill, per round trip and per minute of held-out time, pooled over seeds):

* PnL: marked PnL (USD, realised + open position at the mid - fees), as the equity change over each minute;
* hit rate: round trips (flat -> position -> flat) with PnL net of fees > 0, over round trips;
* markouts at 100 ms, 1 s, 5 s: ``side * (mid(t_fill + h) - px) / px`` (bps), mean over fills;
* Sharpe-like: mean / sd of the per-minute PnL x sqrt(minutes);
* turnover: traded notional (USD).

Intervals: a paired moving-block bootstrap with one-minute blocks (every minute of every seed's test range is a
block carrying its PnL, fills' markouts and closed round trips; replicates resample minutes with replacement, the
same minutes for both rules), percentile 95 %; the difference model - naive is computed inside each replicate.
Resampling minutes rather than orders keeps the dependence between orders of the same minute (a position's entry
and exit, bursts). Fixed seeds everywhere: the same options give the same table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from caerus.instruments import InstrumentSet
from caerus.research.backtest import engine
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.research.models.data import Timeline, market_events, timeline, training_rows
from caerus.research.models.train import TrainOptions, train
from caerus.strategy.config import StrategyConfig
from caerus.strategy.model_signal import load_model
from caerus.wire import Venue

MARKOUT_MS = (100.0, 1000.0, 5000.0)
BLOCK_NS = 60_000_000_000
CONFIDENCE = 0.95
ARMS = ("naive", "model")


@dataclass(frozen=True)
class OosOptions:
    seeds: tuple[int, ...] = tuple(range(1, 11))
    minutes: float = 20.0  # simulated per seed
    train_fraction: float = 0.6
    horizon_ms: float = 1000.0
    folds: int = 3
    kinds: tuple[str, ...] = ("linear", "trees")
    train_seed: int = 1
    feed_us: float = 300.0  # book hop, feed publish -> strategy
    bootstrap: int = 2000
    bootstrap_seed: int = 0


def train_model(lines: list[Timeline], opts: OosOptions, market: str) -> dict[str, object]:
    """The model document from the training ranges of ``lines`` only. The metadata names only what was read
    (each timeline's first time and split), so data past the split cannot change a byte of the file."""
    ds, src = training_rows(lines, opts.horizon_ms)
    ranges = [{"timeline": ln.name, "t_first": ln.t_first, "t_train_end": ln.t_split, "clock": "t_exchange"}
              for ln in lines]
    return train(ds, src, TrainOptions(n_folds=opts.folds, seed=opts.train_seed, kinds=opts.kinds),
                 {"source": {"kind": "market", "market": market, "seeds": [ln.name for ln in lines]},
                  "train_fraction": opts.train_fraction, "ranges": ranges})


@dataclass(frozen=True)
class ArmRun:
    """One rule over one seed's test range, reduced to per-minute blocks."""

    orders: int
    fills: int
    round_trips: int
    wins: int
    notional: float
    pnl: float  # marked, USD
    blocks: np.ndarray  # (minutes, 2 + 2 + 2 * len(MARKOUT_MS)): pnl, notional, round trips, wins, (sum, n) per h


def _blocks_of(out: engine.RunOutput, t0: int, t_end: int, fee_rate: float) -> ArmRun:
    """Walk the fills (average cost, as caerus.research.backtest.results) into per-minute sums."""
    o = out.orders
    n_blocks = max(1, math.ceil((t_end - t0) / BLOCK_NS))
    b = np.zeros((n_blocks, 4 + 2 * len(MARKOUT_MS)))
    t_book, mid = out.target["t"], out.target["mid"]
    qty_all = np.asarray(o["fill_qty"], dtype=float)
    filled = qty_all > 0
    side = np.asarray(o["side"], dtype=float)[filled]
    px = np.asarray(o["fill_px"], dtype=float)[filled]
    qty = qty_all[filled]
    tf = np.asarray(o["t_match"], dtype=np.int64)[filled]
    blk = np.clip((tf - t0) // BLOCK_NS, 0, n_blocks - 1)
    fees = px * qty * fee_rate
    np.add.at(b[:, 1], blk, px * qty)
    for j, h in enumerate(MARKOUT_MS):
        th = tf + int(h * 1e6)
        ok = th <= (t_book[-1] if len(t_book) else 0)
        i = np.searchsorted(t_book, th[ok], side="right") - 1
        mk = side[ok] * (mid[i] - px[ok]) / px[ok] * 1e4
        np.add.at(b[:, 4 + 2 * j], blk[ok], mk)
        np.add.at(b[:, 5 + 2 * j], blk[ok], 1.0)
    # round trips (flat -> position -> flat), PnL net of fees, booked in the minute they close
    pos = avg = rt = 0.0
    rts = wins = 0
    cash = np.zeros(len(tf))
    position = np.zeros(len(tf))
    c = 0.0
    for k, (s, p, q, f, bk) in enumerate(zip(side.tolist(), px.tolist(), qty.tolist(), fees.tolist(),
                                             blk.tolist(), strict=True)):
        new = pos + s * q
        if pos == 0.0 or (pos > 0) == (s > 0):
            avg = (avg * abs(pos) + p * q) / abs(new)
        else:
            rt += min(q, abs(pos)) * (p - avg) * (1.0 if pos > 0 else -1.0)
            if abs(new) < 1e-12:
                new = avg = 0.0
            elif (new > 0) != (pos > 0):
                avg = p
        rt -= f
        if new == 0.0 and pos != 0.0:
            rts += 1
            wins += rt > 0.0
            b[bk, 2] += 1.0
            b[bk, 3] += 1.0 if rt > 0.0 else 0.0
            rt = 0.0
        pos = new
        c -= s * p * q + f
        cash[k] = c
        position[k] = pos
    # marked equity at each minute's edge (the last edge: the end of the data): PnL per minute is its change
    edges = np.minimum(t0 + BLOCK_NS * np.arange(n_blocks + 1), t_end)
    jf = np.searchsorted(tf, edges, side="right") - 1
    ce = np.where(jf >= 0, cash[np.maximum(jf, 0)] if len(cash) else 0.0, 0.0)
    pe = np.where(jf >= 0, position[np.maximum(jf, 0)] if len(position) else 0.0, 0.0)
    im = np.searchsorted(t_book, edges, side="right") - 1
    me = np.where(im >= 0, mid[np.maximum(im, 0)], 0.0)
    equity = ce + np.where(pe != 0.0, pe * me, 0.0)
    b[:, 0] = np.diff(equity)
    return ArmRun(len(qty_all), int(filled.sum()), rts, wins, float((px * qty).sum()), float(equity[-1]), b)


def backtest_arm(events: BookEvents, instruments: InstrumentSet, strategy: StrategyConfig, t_start: int,
                 opts: OosOptions, seed: int) -> tuple[ArmRun, engine.RunOutput]:
    """One rule over the range from ``t_start`` (t_seen ns) to the end of ``events``."""
    rules = FillRules(clock="publish")
    spec = engine.RunSpec(strategy, instruments, LatencyModel.constant(0, int(opts.feed_us * 1e3)), rules,
                          seed=seed, start_ns=t_start, target_venue=int(Venue.HYPERLIQUID))
    out = engine.run(events, spec)
    return _blocks_of(out, t_start, out.t_last, rules.fee_bps_of(int(Venue.HYPERLIQUID)) * 1e-4), out


def _stats(w: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """Each statistic for every replicate: ``w`` (R x blocks) counts how often each block was drawn."""
    s = w @ b  # (R, cols)
    n = w.sum(axis=1)
    pnl_m = b[:, 0]
    mean = s[:, 0] / n
    var = (w @ (pnl_m**2)) / n - mean**2
    sd = np.sqrt(np.maximum(var, 0.0) * n / np.maximum(n - 1, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"pnl": s[:, 0], "sharpe": np.where(sd > 0, mean / sd * np.sqrt(n), np.nan),
               "hit_rate": s[:, 3] / s[:, 2], "turnover": s[:, 1]}
        for j, h in enumerate(MARKOUT_MS):
            out[f"markout_{h:g}ms"] = s[:, 4 + 2 * j] / s[:, 5 + 2 * j]
    return out


def compare(runs: dict[str, list[ArmRun]], opts: OosOptions) -> dict[str, Any]:
    """Pooled point estimates, per-arm and difference intervals (paired minute-block bootstrap)."""
    blocks = {a: np.concatenate([r.blocks for r in runs[a]]) for a in ARMS}
    nb = len(blocks["naive"])
    rng = np.random.default_rng(opts.bootstrap_seed)
    draws = rng.integers(0, nb, size=(opts.bootstrap, nb))
    w = np.zeros((opts.bootstrap, nb))
    np.add.at(w, (np.repeat(np.arange(opts.bootstrap), nb), draws.ravel()), 1.0)
    one = np.ones((1, nb))
    point = {a: {k: float(v[0]) for k, v in _stats(one, blocks[a]).items()} for a in ARMS}
    reps = {a: _stats(w, blocks[a]) for a in ARMS}
    lo_q, hi_q = (1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2

    def ci(x: np.ndarray) -> list[float | None]:
        x = x[np.isfinite(x)]
        return [float(v) for v in np.quantile(x, [lo_q, hi_q])] if len(x) else [None, None]

    metrics: dict[str, dict[str, object]] = {}
    for k in point["naive"]:
        diff = reps["model"][k] - reps["naive"][k]
        metrics[k] = {"naive": point["naive"][k], "naive_ci": ci(reps["naive"][k]),
                      "model": point["model"][k], "model_ci": ci(reps["model"][k]),
                      "diff": point["model"][k] - point["naive"][k], "diff_ci": ci(diff)}
    samples = {a: {"orders": sum(r.orders for r in runs[a]), "fills": sum(r.fills for r in runs[a]),
                   "round_trips": sum(r.round_trips for r in runs[a]),
                   "markout_n": {f"{h:g}ms": int(blocks[a][:, 5 + 2 * j].sum()) for j, h in enumerate(MARKOUT_MS)},
                   "notional_usd": sum(r.notional for r in runs[a])} for a in ARMS}
    return {"minutes": nb, "metrics": metrics, "samples": samples,
            "per_seed_pnl": {a: [r.pnl for r in runs[a]] for a in ARMS}}


def run_market(market: str, opts: OosOptions, model_path: Path) -> dict[str, Any]:
    """Train on the seeds' first part, write the model to ``model_path``, compare on the held-out rest."""
    lines = [timeline(f"seed {s}", market_events(market, s, opts.minutes * 60.0), opts.train_fraction)
             for s in opts.seeds]
    doc = train_model(lines, opts, market)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    model_path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    model = load_model(model_path)
    naive = StrategyConfig()
    with_model = StrategyConfig(signal="model", model=str(model_path))
    runs: dict[str, list[ArmRun]] = {a: [] for a in ARMS}
    test_ranges = []
    for s, ln in zip(opts.seeds, lines, strict=True):
        t0 = ln.t_split + int(opts.feed_us * 1e3)  # the split on the t_seen clock (exchange time + the book hop)
        for arm, cfg in (("naive", naive), ("model", with_model)):
            r, out = backtest_arm(ln.loaded.events, ln.loaded.instruments, cfg, t0, opts, s)
            runs[arm].append(r)
        test_ranges.append({"seed": s, "t_test_start": t0, "t_end": out.t_last, "minutes": (out.t_last - t0) / 60e9})
    res = compare(runs, opts)
    sel: dict[str, Any] = doc["selection"]["chosen"]  # type: ignore[index]
    res.update({"market": market, "model": {"path": str(model_path), "hash": model.hash, "kind": model.kind,
                                            "params": sel["params"], "entry_bps": model.entry_bps},
                "test_ranges": test_ranges})
    return res


def _f(v: object, fmt: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def _cell(m: dict, arm: str, fmt: str) -> str:
    lo, hi = m[f"{arm}_ci"]
    return f"{_f(m[arm], fmt)} [{_f(lo, fmt)}, {_f(hi, fmt)}]"


ROWS = (("pnl", "marked PnL (USD)", "+.3f"), ("sharpe", "Sharpe-like (min)", "+.2f"),
        ("hit_rate", "hit rate (round trips)", ".3f"), ("markout_100ms", "markout 100 ms (bps)", "+.2f"),
        ("markout_1000ms", "markout 1 s (bps)", "+.2f"), ("markout_5000ms", "markout 5 s (bps)", "+.2f"),
        ("turnover", "turnover (USD notional)", ",.0f"))


def render(res: dict[str, Any], opts: OosOptions) -> str:
    """The market's table: each metric for naive, model and the difference, with 95 % intervals and n."""
    m = res["metrics"]
    smp = res["samples"]
    mod = res["model"]
    lines = [f"market {res['market']}: seeds {','.join(map(str, opts.seeds))}, {opts.minutes:g} min each, "
             f"train first {opts.train_fraction:.0%}, test the rest ({res['minutes']} one-minute blocks); model "
             f"{mod['kind']} {mod['params']} entry {mod['entry_bps']:g} bps, hash {str(mod['hash'])[:16]}",
             f"{'metric':<24} {'naive [95% CI]':>28} {'model [95% CI]':>28} {'model - naive [95% CI]':>30}"]
    for key, label, fmt in ROWS:
        lines.append(f"{label:<24} {_cell(m[key], 'naive', fmt):>28} {_cell(m[key], 'model', fmt):>28} "
                     f"{_cell(m[key], 'diff', fmt):>30}")
    for a in ARMS:
        s = smp[a]
        mk = s["markout_n"]
        lines.append(f"n {a:<6} orders {s['orders']}, fills {s['fills']}, round trips {s['round_trips']}, markouts "
                     f"{mk['100ms']}/{mk['1000ms']}/{mk['5000ms']} (100 ms/1 s/5 s); per-seed PnL "
                     + " ".join(f"{v:+.2f}" for v in res["per_seed_pnl"][a]))
    lo, hi = m["pnl"]["diff_ci"]
    beats = lo is not None and lo > 0
    lines.append(f"model beats naive on PnL out of sample: {'YES' if beats else 'NO'} (difference "
                 f"{m['pnl']['diff']:+.3f} USD, 95% CI [{_f(lo, '+.3f')}, {_f(hi, '+.3f')}]"
                 f"{' excludes 0' if beats or (hi is not None and hi < 0) else ' includes 0'})")
    res["model_beats_naive"] = beats
    return "\n".join(lines)
