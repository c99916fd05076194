"""What every benchmark shares: its command-line flags, percentile summaries, goal checks and the JSON it writes.

JSON schema (read by `invoke regress` and the baselines):
``{"benchmark": str, "schema": 1, "quick": bool, "started_ns": int, "machine": {...},
   "metrics": {name: {"unit": "ns", "n": int, "p50": .., "p90": .., "p99": .., "p999": .., "max": .., "mean": ..}},
   "ratios": {name: float}, "goals": [{"name": str, "target": str, "actual": float, "met": bool}]}``
Ratios are always measured against a reference taken in the same run, because these machines are shared and
noisy: an absolute time means little, a same-run ratio means a lot.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = 1
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))


def time_each(handle: Callable[[Any], object], items: list[Any]) -> np.ndarray:
    """ns per call of ``handle(item)``, one sample per item in order (perf_counter_ns around each call)."""
    pc = time.perf_counter_ns
    out = np.empty(len(items), dtype=np.int64)
    for i, item in enumerate(items):
        t0 = pc()
        handle(item)
        out[i] = pc() - t0
    return out


def time_reads(read: Callable[[bytes, list[bytes]], None], wire: list[bytes],
               after: Callable[[int, list[bytes]], None] | None = None) -> tuple[np.ndarray, list[bytes]]:
    """ns per call of ``read(chunk, got)`` (a reader appending what it parsed to ``got``), one sample per chunk in
    order, and what it parsed; ``after(i, got)`` runs untimed after each read (a check, or dropping what was read)."""
    pc = time.perf_counter_ns
    out = np.empty(len(wire), dtype=np.int64)
    got: list[bytes] = []
    for i, chunk in enumerate(wire):
        t0 = pc()
        read(chunk, got)
        out[i] = pc() - t0
        if after is not None:
            after(i, got)
    return out, got


def measure_rounds(rounds: int, names: Sequence[str],
                   measure: Callable[[str], np.ndarray]) -> dict[str, dict[str, float]]:
    """Each contender's summary over ``rounds`` rounds of ``measure(name)`` (its samples, ns). A round 0 warms up
    first and is dropped; the contenders' order is reversed every other round, so none always runs first."""
    samples: dict[str, list[np.ndarray]] = {}
    for rnd in range(rounds + 1):
        for name in (names if rnd % 2 else names[::-1]):
            t = measure(name)
            if rnd:
                samples.setdefault(name, []).append(t)
    return {name: summarize(np.concatenate(samples[name])) for name in names}


def benchmark_parser(doc: str) -> argparse.ArgumentParser:
    """A benchmark's command line, described by its docstring's first line, with the common options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_common_args(parser)
    return parser


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="short run (seconds), for CI and smoke checks")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON to PATH")
    parser.add_argument("--seed", type=int, default=1, help="seed for anything random")


def parse_sized(argv: list[str] | None, doc: str, flag: str, what: str, quick: int,
                full: int) -> tuple[argparse.Namespace, int]:
    """A benchmark's command line: the common options and ``--<flag> N`` (how many ``what``; default ``quick``
    under --quick, else ``full``). Returns the arguments and that count."""
    p = benchmark_parser(doc)
    p.add_argument(f"--{flag}", type=int, help=what)
    args = p.parse_args(argv)
    return args, getattr(args, flag.replace("-", "_")) or (quick if args.quick else full)


def summarize(samples_ns: Iterable[float] | np.ndarray) -> dict[str, float]:
    """Percentile summary of raw samples in nanoseconds (exact, from the samples, not a histogram)."""
    a = np.asarray(samples_ns if isinstance(samples_ns, np.ndarray) else list(samples_ns), dtype=np.float64)
    if a.size == 0:
        return {"unit": "ns", "n": 0, **{k: float("nan") for k, _ in PERCENTILES}, "max": float("nan"),
                "mean": float("nan")}
    out: dict[str, float] = {"unit": "ns", "n": int(a.size)}
    for key, q in PERCENTILES:
        out[key] = float(np.percentile(a, q))
    out["max"] = float(a.max())
    out["mean"] = float(a.mean())
    return out


def summarize_histogram(hist) -> dict[str, float]:
    """Percentile summary of an HdrHistogram (values in ns)."""
    n = int(hist.get_total_count())
    out: dict[str, float] = {"unit": "ns", "n": n}
    for key, q in PERCENTILES:
        out[key] = float(hist.get_value_at_percentile(q)) if n else float("nan")
    out["max"] = float(hist.get_max_value()) if n else float("nan")
    out["mean"] = float(hist.get_mean_value()) if n else float("nan")
    return out


@dataclass(frozen=True)
class Goal:
    name: str
    target: str  # human text, e.g. "<= 1000 ns"
    actual: float
    met: bool


def at_most(name: str, actual: float, limit: float, unit: str = "ns") -> Goal:
    return Goal(name, f"<= {limit:g} {unit}", actual, bool(actual <= limit))


def at_least(name: str, actual: float, limit: float, unit: str = "x") -> Goal:
    return Goal(name, f">= {limit:g} {unit}", actual, bool(actual >= limit))


def raise_priority(nice: int) -> int:
    """Lower this process's nice value (root only) so a shared machine's other work disturbs the measurement less.

    Not a real-time class on purpose: SCHED_FIFO spinners hit RT throttling (~50 ms stalls, DESIGN.md).
    Returns the nice value in force (children inherit it).
    """
    if nice < 0 and os.geteuid() != 0:
        return os.nice(0)
    try:
        return os.nice(nice - os.nice(0))
    except OSError:
        return os.nice(0)


def machine_summary() -> dict[str, object]:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def _fmt_ns(v: float) -> str:
    if v != v:  # NaN
        return "-"
    return f"{v / 1000:.2f} us" if v >= 1000 else f"{v:.0f} ns"


def emit(
    benchmark: str,
    metrics: dict[str, dict[str, float]],
    *,
    ratios: dict[str, float] | None = None,
    goals: list[Goal] | None = None,
    quick: bool = False,
    json_path: Path | None = None,
    extra: dict | None = None,
) -> dict:
    """Print the percentile table, ratios and goals; write the JSON document; return it."""
    from rich.console import Console
    from rich.table import Table

    ratios = ratios or {}
    goals = goals or []
    console = Console(width=max(120, Console().width))  # CI logs are not terminals: keep rows on one line
    table = Table(title=f"{benchmark}{' (quick)' if quick else ''}")
    for col in ("metric", "n", "p50", "p90", "p99", "p99.9", "max"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, m in metrics.items():
        table.add_row(name, str(m["n"]), *(_fmt_ns(m[k]) for k in ("p50", "p90", "p99", "p999", "max")))
    console.print(table)
    for name, value in ratios.items():
        console.print(f"ratio {name}: {value:.2f}x")
    for g in goals:
        mark = "[green]met[/green]" if g.met else "[red]missed[/red]"
        console.print(f"goal {g.name} {g.target}: {g.actual:.3g} -> {mark}")
    doc = {
        "benchmark": benchmark,
        "schema": SCHEMA,
        "quick": quick,
        "started_ns": time.time_ns(),
        "machine": machine_summary(),
        "metrics": metrics,
        "ratios": ratios,
        "goals": [g.__dict__ for g in goals],
    }
    if extra:
        doc["extra"] = extra
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    return doc


def run_session(benchmark: str, out: Path, seconds: float, seed: int, args: list[str], timeout_s: float) -> Path:
    """One whole-fleet ``caerus session`` (no capture, no report, no progress) into ``out``; returns the new
    session folder. A failed session ends the benchmark naming it, with the tail of its stderr."""
    cmd = [sys.executable, "-m", "caerus", "session", "--duration", f"{seconds:g}", "--seed", str(seed),
           "--out", str(out), "--no-capture", "--no-report", "--progress", "none", *args]
    before = set(out.glob("*")) if out.exists() else set()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{benchmark}: the session {' '.join(args)} failed ({proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    new = sorted(set(out.glob("*")) - before)
    if len(new) != 1:
        raise SystemExit(f"{benchmark}: expected one new session folder under {out}, found {len(new)}")
    return new[0]
