"""Rows of the side-by-side table, their ratio to Caerus, and the Markdown/JSON they are printed as.

A row is one contender in one comparison: p50/p99 of its samples (ns) and the ratio contender / Caerus at p50 and
p99, both from the same run (> 1: Caerus is faster; < 1: the peer wins, and the table says so). A contender that
could not run has its reason instead of numbers.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class Row:
    comparison: str  # e.g. "feed decode: Binance bookTicker"
    contender: str  # e.g. "cryptofeed 3.0.1"
    n: int = 0
    p50_ns: float = math.nan
    p99_ns: float = math.nan
    ratio_p50: float = math.nan  # contender / caerus
    ratio_p99: float = math.nan
    note: str = ""
    unavailable: str = ""


def rows_for(comparison: str, samples: dict[str, np.ndarray], reference: str, notes: dict[str, str] | None = None,
             unavailable: dict[str, str] | None = None) -> list[Row]:
    """One row per contender (``reference`` = the Caerus entry first), ratios against the reference's samples."""
    notes = notes or {}
    ref = samples[reference]
    r50, r99 = float(np.percentile(ref, 50)), float(np.percentile(ref, 99))
    out = []
    for name, s in samples.items():
        p50, p99 = float(np.percentile(s, 50)), float(np.percentile(s, 99))
        out.append(Row(comparison, name, int(s.size), p50, p99, p50 / r50, p99 / r99, notes.get(name, "")))
    out += [Row(comparison, name, unavailable=why) for name, why in (unavailable or {}).items()]
    return out


def _us(ns: float) -> str:
    return "-" if math.isnan(ns) else f"{ns / 1000:.2f}"


def _x(r: float) -> str:
    return "-" if math.isnan(r) else f"{r:.2f}x"


def verdict(row: Row) -> str:
    if row.unavailable:
        return f"not available: {row.unavailable}"
    if row.contender.startswith("caerus"):
        reference = row.ratio_p50 == 1.0 and (row.ratio_p99 == 1.0 or math.isnan(row.ratio_p99))
        return "reference" if reference else "a Caerus variant"
    return "Caerus faster" if row.ratio_p50 > 1 else "**peer faster at p50**"


def markdown(rows: list[Row]) -> str:
    lines = ["| comparison | contender | n | p50 us | p99 us | vs Caerus p50 | vs Caerus p99 | verdict / note |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        note = "; ".join(x for x in (verdict(r), r.note) if x)
        lines.append(f"| {r.comparison} | {r.contender} | {r.n or '-'} | {_us(r.p50_ns)} | {_us(r.p99_ns)} | "
                     f"{_x(r.ratio_p50)} | {_x(r.ratio_p99)} | {note} |")
    return "\n".join(lines)


def as_json(rows: list[Row]) -> list[dict[str, object]]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(r).items()} for r in rows]


def machine() -> dict[str, object]:
    import os
    from pathlib import Path

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "kernel": platform.release(), "cpu": cpu, "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],  # other work on this shared machine
            "affinity": sorted(os.sched_getaffinity(0))}


def _ratio(rows: list[Row], comparison: str, match: Callable[[str], bool]) -> float:
    return next((r.ratio_p50 for r in rows if r.comparison == comparison and match(r.contender) and not r.unavailable),
                math.nan)


def goals(rows: list[Row]) -> list[dict[str, object]]:
    """Issue 30's goals against the peers, from this run's ratios (Caerus / peer at p50 unless said otherwise), each on
    the like-for-like row (issue 49): depth5 against nautilus_trader's decode + top of book, the ring against pyzmq
    spinning as the ring spins (the blocking pyzmq goal kept beside it, labelled), the backtest against hftbacktest's
    faster backtester."""
    out: list[dict[str, object]] = []

    def goal(name: str, target: str, actual: float, met: bool) -> None:
        out.append({"name": name, "target": target, "actual": None if math.isnan(actual) else round(actual, 3),
                    "met": None if math.isnan(actual) else met})

    for venue in ("Binance USD-M bookTicker", "Hyperliquid bbo"):
        cf = 1 / _ratio(rows, f"feed decode: {venue}", lambda c: c.startswith("cryptofeed"))
        goal(f"feed per-message cost, {venue}: Caerus / cryptofeed p50", "<= 0.5x", cf, cf <= 0.5)
        nt = 1 / _ratio(rows, f"feed decode: {venue}", lambda c: c.startswith("nautilus_trader"))
        goal(f"feed per-message cost, {venue}: Caerus / nautilus_trader p50", "<= 1.0x", nt, nt <= 1.0)
    nt = 1 / _ratio(rows, "feed decode: Binance USD-M depth5@100ms",
                    lambda c: c.startswith("nautilus_trader") and c.endswith("decode + top of book"))
    goal("feed per-message cost, Binance USD-M depth5: Caerus / nautilus_trader (decode + top of book) p50", "<= 1.0x",
         nt, nt <= 1.0)
    hop = "process hop (one-way, 300 us pacing)"
    spin = _ratio(rows, hop, lambda c: c.startswith("pyzmq") and " ipc " in c and c.endswith("spinning"))
    goal("ring hop, spin against spin: pyzmq ipc (spinning) p50 / SWMR ring (spinning) p50", ">= 10x", spin,
         spin >= 10)
    zmq = _ratio(rows, hop, lambda c: c.startswith("pyzmq") and c.endswith("ipc (PUSH/PULL)"))
    goal("ring hop: pyzmq ipc (blocking: pays a kernel wake-up, not like for like) p50 / SWMR ring (spinning) p50",
         ">= 10x", zmq, zmq >= 10)
    hybrid = zmq / _ratio(rows, hop, lambda c: c.startswith("caerus SWMR ring, hybrid"))
    goal("ring hop: pyzmq ipc (blocking) p50 / SWMR ring (hybrid reader) p50", ">= 10x", hybrid, hybrid >= 10)
    bt = [r.ratio_p50 for r in rows if r.comparison == BACKTEST and r.contender.startswith("hftbacktest")
          and not r.unavailable]
    faster = min(bt) if bt else math.nan
    goal("backtest books/s: Caerus / hftbacktest's faster backtester (same books, rule and run)", ">= 1.0x", faster,
         faster >= 1.0)
    return out


#: the backtest throughput comparison's label (benchmarks/peers/backtest)
BACKTEST = "backtest throughput (book events/s)"


def goals_text(gs: list[dict[str, object]]) -> str:
    lines = []
    for g in gs:
        state = "not measured" if g["met"] is None else ("met" if g["met"] else "MISSED")
        lines.append(f"- goal {g['name']} {g['target']}: {g['actual'] if g['actual'] is not None else '-'}"
                     f"{'x' if g['actual'] is not None else ''} -> {state}")
    return "\n".join(lines)


def protocol_text(recorded: dict[str, list[dict[str, object]]]) -> str:
    """The timing protocol as each section recorded it (benchmarks/protocol): per comparison, the repetitions every
    contender ran (the same for all) and each contender's warm-up, its time on a line of its own."""
    lines = []
    for comparison, entries in recorded.items():
        reps = sorted({int(e["repetitions"]) for e in entries})  # type: ignore[call-overload]
        lines.append(f"- {comparison}: {'/'.join(map(str, reps))} interleaved repetitions for every contender, "
                     f"{entries[0]['statistic'] if entries else ''}" if comparison.startswith("backtest")
                     else f"- {comparison}: {'/'.join(map(str, reps))} interleaved rounds for every contender, "
                          "p50/p99 over all their samples")
        for e in entries:
            took = f"{e['warm_up_s']:.2f} s, " if e["warm_up_s"] is not None else ""
            lines.append(f"  - warm-up {e['contender']}: {took}{e['warm_up']}")
    return "\n".join(lines)
