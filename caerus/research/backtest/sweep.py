"""Parameter sweeps: a grid of strategy parameters backtested in parallel worker processes, resumable, with
out-of-sample discipline (``invoke sweep``, ``python -m caerus.research.backtest.sweep``).

* Grid: ``--param entry_bps=3,5,8 --param ewma_half_life_s=1,3`` -> every combination (validated like a config).
* Each combination runs on the ``--train`` range and on the ``--test`` range; one JSON per (set, range) under
  ``<out>/runs/<key>.json``, the key a hash of everything the result depends on (source, range, parameters,
  latency, fills, seed). An existing file is skipped, so an interrupted sweep resumes where it stopped.
* Workers: ``concurrent.futures.ProcessPoolExecutor`` with ``--workers`` processes (bounded; default: CPUs - 1,
  at least 1); each worker loads the source once and keeps it. Progress with rich.
* Choice: the parameter set with the best marked PnL on **train** only; its test result is reported beside it,
  and the sweep report (``sweep.json``, ``sweep.html``) shows train and test heatmaps of every set.

Ranges are ``A..B``: ns since the epoch or ISO 8601, or seconds from the data's first book (``0..60``). Latency
and fills default to the fleet's execution, as ``caerus backtest``'s (the fleet's latency profile, Hyperliquid's
block clock, depletion); ``--latency 0`` / ``--zero-latency`` is the optimistic ZERO, named in every result.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import itertools
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from caerus.research.backtest import app as bt_app
from caerus.research.backtest import runner, sources
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.sim.core.market_config import DEFAULT_MARKET
from caerus.strategy.config import StrategyConfig


@dataclass(frozen=True)
class SourceSpec:
    """How a worker loads the data (picklable): one of session / store / offline."""

    kind: str  # "session" | "store" | "offline"
    path: str = ""
    offline_s: float = 0.0
    market_seed: int = 1
    symbols: tuple[str, ...] = ("BTC",)
    market: str = DEFAULT_MARKET  # offline: a preset name or a market TOML path

    def load(self) -> sources.Loaded:
        if self.kind == "session":
            return sources.from_session(Path(self.path))
        if self.kind == "store":
            return sources.from_store(Path(self.path))
        return sources.offline_market(self.offline_s, self.market_seed, self.symbols, self.market)


@dataclass(frozen=True)
class Job:
    key: str
    split: str  # "train" | "test"
    params: dict[str, Any]
    source: SourceSpec
    rng: tuple[str, str]
    latency: str  # latency_model spec: "profile:default", "session:<dir>", "const:<ns>", "zero" [";wire=<ns>"]
    fills: dict[str, Any]
    seed: int
    path: str


def parse_grid(pairs: list[str]) -> list[dict[str, Any]]:
    """``name=v1,v2`` pairs -> every combination (values decoded as JSON numbers/booleans, else strings)."""
    names: list[str] = []
    values: list[list[Any]] = []
    fields = set(StrategyConfig.__struct_fields__)
    for p in pairs:
        name, sep, vals = p.partition("=")
        if not sep or name not in fields or not vals:
            raise ValueError(f"--param {p!r}: expected NAME=V1,V2,... with NAME a strategy setting")
        names.append(name)
        values.append([_value(v) for v in vals.split(",")])
    grid = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    for g in grid:
        bt_app.parse_params([f"{k}={json.dumps(v)}" for k, v in g.items()], StrategyConfig())
    return grid


def _value(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def parse_range(text: str) -> tuple[str, str]:
    a, sep, b = text.partition("..")
    if not sep or not a or not b:
        raise ValueError(f"range {text!r} is not A..B")
    for x in (a, b):
        _resolve(x, 0)
    return a, b


def _resolve(x: str, t0: int) -> int:
    """An absolute time (ns or ISO 8601) or seconds from ``t0``."""
    x = x.strip()
    try:
        v = float(x)
    except ValueError:
        return bt_app.parse_time(x)
    return int(v) if v >= 1e15 else t0 + int(v * 1e9)


def latency_model(spec: str) -> LatencyModel:
    """The model a job's latency spec names (``kind:arg`` and an optional ``;wire=<ns>``): ``profile:default`` (the
    fleet's, the default), ``profile:<file>``, ``session:<dir>``, ``const:<ns>``, ``zero``."""
    head, _, wire_part = spec.partition(";wire=")
    wire = int(wire_part) if wire_part else None
    kind, _, arg = head.partition(":")
    if kind == "profile":
        return LatencyModel.default(wire_ns=wire) if arg == "default" else LatencyModel.from_profile(Path(arg),
                                                                                                     wire_ns=wire)
    if kind == "session":
        return LatencyModel.from_session(Path(arg), wire_ns=wire)
    if kind == "const":
        return LatencyModel.constant(int(arg))
    if kind == "zero":
        return LatencyModel.zero()
    raise ValueError(f"latency spec {spec!r} is not profile:..., session:..., const:<ns> or zero")


def job_key(params: dict[str, Any], source: SourceSpec, rng: tuple[str, str], latency: str, fills: dict[str, Any],
            seed: int) -> str:
    blob = json.dumps({"params": params, "source": msgspec.to_builtins(source), "range": list(rng),
                       "latency": latency, "fills": fills, "seed": seed, "format": runner.FORMAT}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


_CACHE: dict[SourceSpec, sources.Loaded] = {}


def _adopt(source: SourceSpec, loaded: sources.Loaded) -> None:
    """Worker start-up: the books the parent loaded once. Workers never open the store themselves: chDB serves a
    store path to one process at a time, so two workers opening it at once fail (seen: "Error initializing
    EmbeddedServer" under load)."""
    _CACHE[source] = loaded


def run_job(job: Job) -> tuple[str, dict[str, Any]]:
    """Worker: one backtest; writes its JSON; returns (key, summary)."""
    loaded = _CACHE.get(job.source)
    if loaded is None:
        loaded = _CACHE[job.source] = job.source.load()
    t0 = int(loaded.events.t_recv[0]) if bool((loaded.events.t_recv != 0).any()) else \
        int(loaded.events.t_exchange[0])
    start, end = _resolve(job.rng[0], t0), _resolve(job.rng[1], t0)
    clock = loaded.events.t_recv if bool((loaded.events.t_recv != 0).any()) else loaded.events.t_exchange
    mask = (clock >= start) & (clock < end)
    if not mask.any():
        raise sources.SourceError(f"{job.split} range {job.rng[0]}..{job.rng[1]} holds no books")
    part = replace(loaded, events=loaded.events.take(mask),
                   description=f"{loaded.description}; {job.split} range [{start}, {end})")
    lat = latency_model(job.latency)
    cfg = bt_app.parse_params([f"{k}={json.dumps(v)}" for k, v in job.params.items()], StrategyConfig())
    doc, _ = runner.run_backtest(part, runner.BacktestOptions(cfg, lat, FillRules(**job.fills), job.seed))
    doc["sweep"] = {"key": job.key, "split": job.split, "params": job.params}
    runner.write_json(doc, Path(job.path))
    return job.key, _summary(doc)


def _summary(doc: dict[str, Any]) -> dict[str, Any]:
    tot = doc["metrics"]["total"]
    return {"pnl_marked": tot["pnl"]["marked"], "orders": tot["orders"], "fills": tot["fills"],
            "fill_rate": tot["fill_rate"], "hit_rate": tot["hit_rate"], "max_drawdown": tot["max_drawdown"],
            "books": doc["assumptions"]["data"]["books_replayed"]}


def run_sweep(grid: list[dict[str, Any]], source: SourceSpec, train: tuple[str, str], test: tuple[str, str],
              latency: str, fills: dict[str, Any], seed: int, out: Path, workers: int,
              loaded: sources.Loaded | None = None) -> dict[str, Any]:
    from rich.progress import Progress

    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    jobs: list[Job] = []
    for params in grid:
        for split, rng in (("train", train), ("test", test)):
            key = job_key(params, source, rng, latency, fills, seed)
            jobs.append(Job(key, split, params, source, rng, latency, fills, seed, str(runs / f"{key}.json")))
    results: dict[str, dict[str, Any]] = {}
    todo = []
    for j in jobs:
        p = Path(j.path)
        if p.is_file():
            results[j.key] = _summary(json.loads(p.read_text()))  # done before: resumed
        else:
            todo.append(j)
    with Progress() as progress:
        task = progress.add_task(f"sweep: {len(todo)} runs ({len(jobs) - len(todo)} resumed)", total=len(todo))
        # spawn, not fork: the parent may already hold chDB's (or numpy's) threads, and a forked child inherits
        # their locks held and deadlocks on its first query (seen: a session-source sweep hung with 0 runs done)
        if todo:
            books = loaded if loaded is not None else source.load()  # once, here, handed to every worker
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_adopt, initargs=(source, books)) as pool:
                futures = [pool.submit(run_job, j) for j in todo]
                for f in as_completed(futures):
                    key, summary = f.result()
                    results[key] = summary
                    progress.advance(task)
    rows = []
    for params in grid:
        rows.append({"params": params,
                     "train": results[job_key(params, source, train, latency, fills, seed)],
                     "test": results[job_key(params, source, test, latency, fills, seed)]})
    best = max(rows, key=lambda r: r["train"]["pnl_marked"])  # chosen on train only
    doc = {"format": runner.FORMAT, "kind": "sweep", "source": msgspec.to_builtins(source), "train": list(train),
           "test": list(test), "latency": latency, "fills": fills, "seed": seed, "grid": rows,
           "chosen": {"params": best["params"], "by": "marked PnL on train", "train": best["train"],
                      "test": best["test"]}}
    runner.write_json(doc, out / "sweep.json")
    render(doc, out / "sweep.html")
    return doc


def render(doc: dict[str, Any], path: Path) -> Path:
    """Heatmaps of marked PnL on train and test (the first two parameters; the best over the others)."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = doc["grid"]
    names = list(rows[0]["params"])
    xs = sorted({r["params"][names[0]] for r in rows}, key=str)
    ys = sorted({r["params"][names[1]] for r in rows}, key=str) if len(names) > 1 else [None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, split in zip(axes, ("train", "test"), strict=True):
        grid = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            i = ys.index(r["params"][names[1]]) if len(names) > 1 else 0
            j = xs.index(r["params"][names[0]])
            v = r[split]["pnl_marked"]
            grid[i, j] = v if np.isnan(grid[i, j]) else max(grid[i, j], v)
        im = ax.imshow(grid, cmap="RdYlGn", aspect="auto", origin="lower")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [str(y) for y in ys])
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1] if len(names) > 1 else "")
        ax.set_title(f"marked PnL, {split} {doc[split][0]}..{doc[split][1]}")
        fig.colorbar(im, ax=ax)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    img = base64.b64encode(buf.getvalue()).decode()
    ch = doc["chosen"]
    e = _escape
    head = "".join(f"<th>{e(n)}</th>" for n in names) + "<th>train PnL</th><th>train fills</th><th>test PnL</th>" \
        "<th>test fills</th>"
    body = "".join("<tr>" + "".join(f"<td>{e(r['params'][n])}</td>" for n in names)
                   + f"<td>{r['train']['pnl_marked']:.4g}</td><td>{e(r['train']['fills'])}</td>"
                   f"<td>{r['test']['pnl_marked']:.4g}</td><td>{e(r['test']['fills'])}</td></tr>" for r in rows)
    # Everything from the document is escaped: the source is a session folder's name or a path (a host-listed
    # session folder may be named anything `invoke collect` accepts, `<img src=x onerror=...>` included), and
    # parameter names and values, ranges and latency come from the command line.
    page = (f"<html><head><meta charset='utf-8'><title>Sweep</title></head><body><h1>Parameter sweep</h1>"
            f"<p>Source {e(json.dumps(doc['source']))}; latency {e(doc['latency'])}; "
            f"fills {e(json.dumps(doc['fills']))}; seed {e(doc['seed'])}. "
            f"Train {e(doc['train'][0])}..{e(doc['train'][1])}, test {e(doc['test'][0])}..{e(doc['test'][1])}.</p>"
            f"<p><b>Chosen on train only</b> ({e(ch['by'])}): {e(json.dumps(ch['params']))} -- "
            f"train PnL {ch['train']['pnl_marked']:.4g}, <b>test PnL {ch['test']['pnl_marked']:.4g}</b> (out of "
            f"sample).</p><img src='data:image/png;base64,{img}'><table border=1><tr>{head}</tr>{body}</table>"
            f"</body></html>")
    path.write_text(page)
    return path


def _escape(value: Any) -> str:
    """Text from the sweep's document made safe in HTML (``<``, ``&`` and both quotes)."""
    return html.escape(str(value), quote=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sweep", description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--session", type=Path)
    src.add_argument("--store", type=Path)
    src.add_argument("--offline", type=float, metavar="SECONDS")
    p.add_argument("--market", default=DEFAULT_MARKET, help="offline: a preset or a market TOML (default: default)")
    p.add_argument("--market-seed", type=int, default=1)
    p.add_argument("--symbols", default="BTC")
    p.add_argument("--param", action="append", required=True, metavar="NAME=V1,V2")
    p.add_argument("--train", required=True, metavar="A..B")
    p.add_argument("--test", required=True, metavar="A..B")
    lat = p.add_mutually_exclusive_group()
    lat.add_argument("--latency-from", type=Path, metavar="SESSION")
    lat.add_argument("--latency-profile", type=Path, metavar="FILE")
    lat.add_argument("--latency", default=None, metavar="CONST", help="constant order latency (0: ZERO, optimistic)")
    lat.add_argument("--zero-latency", action="store_true")
    p.add_argument("--paper", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--out", type=Path, default=Path("sweeps") / "latest")
    args = p.parse_args(argv)
    try:
        grid = parse_grid(args.param)
        train, test = parse_range(args.train), parse_range(args.test)
        if args.workers < 1 or args.workers > 64:
            raise ValueError(f"--workers must be 1..64, got {args.workers}")
        if args.latency_from is not None:
            latency = f"session:{args.latency_from}"
        elif args.latency is not None:
            latency = f"const:{bt_app.parse_latency(args.latency)}"
        elif args.zero_latency:
            latency = "zero"
        else:  # the default: the fleet's profile
            latency = f"profile:{args.latency_profile or 'default'}"
        if args.paper and not latency.startswith(("const", "zero")):
            latency += ";wire=0"  # the paper transport has no wire
        latency_model(latency)  # a bad session or profile fails here, once, not in every worker
        source = (SourceSpec("session", str(args.session)) if args.session else
                  SourceSpec("store", str(args.store)) if args.store else
                  SourceSpec("offline", offline_s=args.offline, market_seed=args.market_seed,
                             symbols=tuple(args.symbols.split(",")), market=str(args.market)))
        loaded = source.load()  # a missing session fails here; the workers get these books
    except (ValueError, sources.SourceError) as exc:  # LatencyError is a ValueError
        print(f"sweep: {exc}", file=sys.stderr)
        return 2
    fills = {"clock": "publish", "blocks": False, "deplete": False} if args.paper else {}  # FillRules.paper()
    doc = run_sweep(grid, source, train, test, latency, fills, args.seed, args.out, args.workers, loaded)
    ch = doc["chosen"]
    print(f"sweep: {len(grid)} parameter sets -> {args.out / 'sweep.html'}; chosen on train {ch['params']}: "
          f"train PnL {ch['train']['pnl_marked']:.4f}, test PnL {ch['test']['pnl_marked']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
