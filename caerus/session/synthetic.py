"""Synthetic sessions: realistic session folders generated without running the fleet.

Used by the report tests and ``benchmarks/report_gen.py`` (and handy to preview report changes). A generated
folder has what a real session leaves (one ``.hlog`` + sidecar per recording process, ``config.toml``,
``env.json``, logs) and is then collected with the real ``caerus.session.collect``. To reach 10^7+ samples per
metric quickly, a handful of distinct interval histograms per tag are built with numpy and their encodings reused
across intervals (counts are real: every line decodes to its histogram).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from caerus.metrics import hdr
from caerus.metrics.env import collect_env
from caerus.metrics.rss import MB, SERIES_FILE, RssSampler, summarise
from caerus.plan import plan_fleet
from caerus.session.collect import collect

PROCESS_TAGS: dict[str, tuple[str, ...]] = {
    "feed-binance": ("feed_internal.binance", "info_age.binance"),
    "feed-hyperliquid": ("feed_internal.hyperliquid", "info_age.hyperliquid"),
    "strategy": ("book_hop", "tick_to_decision", "tick_to_eval"),
    "execution": ("queue_transit",),
    "venue-sim": ("emulator_lateness.binance", "emulator_lateness.hyperliquid"),
}
# (median ns, lognormal sigma): loosely the reference system's shape, slower where CPython is slower
SHAPES: dict[str, tuple[float, float]] = {
    "tick_to_decision": (12_000, 0.35),
    "tick_to_eval": (9_000, 0.35),
    "queue_transit": (1_500, 0.5),
    "book_hop": (2_000, 0.4),
    "feed_internal.binance": (25_000, 0.4),
    "feed_internal.hyperliquid": (30_000, 0.4),
    "info_age.binance": (3_100_000, 0.25),
    "info_age.hyperliquid": (285_000_000, 0.2),
    "emulator_lateness.binance": (450_000, 0.5),
    "emulator_lateness.hyperliquid": (450_000, 0.5),
}


def _variants(tag: str, per_interval: int, k: int, rng: np.random.Generator,
              artifacts: int) -> list[tuple[hdr.HdrHistogram, str]]:
    median, sigma = SHAPES.get(tag, (10_000, 0.5))
    out = []
    for i in range(k):
        vals = rng.lognormal(np.log(median), sigma, per_interval).astype(np.int64)
        if i == k - 1:  # one spiky interval shape: a tail the report must show over time
            vals[: max(1, per_interval // 200)] *= 40
        h = hdr.new_histogram()
        hdr.record_array(h, np.clip(vals, 1, hdr.HIGHEST_NS))
        out.append((h, h.encode().decode("ascii")))
    return out


def make_session(
    root: Path,
    *,
    name: str | None = None,
    intervals: int = 30,
    samples_per_interval: int = 1000,
    seed: int = 1,
    died: str | None = None,
    artifacts: dict[str, int] | None = None,
    variants: int = 8,
    start_s: float | None = None,
) -> Path:
    """Generate and collect one synthetic session folder; returns its path."""
    rng = np.random.default_rng(seed)
    start_s = float(int(start_s if start_s is not None else time.time() - intervals - 5))
    name = name or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start_s)) + f"-synthetic{seed:04d}"
    d = root / name
    (d / "logs").mkdir(parents=True, exist_ok=True)
    artifacts = artifacts or {}
    plan = plan_fleet(cpus=[0, 1], isolated=[])
    processes: dict[str, Any] = {}
    for process, tags in PROCESS_TAGS.items():
        stop_after = intervals // 2 if process == died else intervals
        shapes = {t: _variants(t, samples_per_interval, variants, rng, 0) for t in tags}
        lines = [hdr.hlog_header(start_s, f"synthetic {process}")]
        for i in range(stop_after):
            for t in tags:
                h, payload = shapes[t][(i * 7 + 3) % variants if i % 13 else variants - 1]
                lines.append(hdr.interval_line(t, float(i), 1.0, h, payload))
        (d / f"{process}.hlog").write_text("".join(lines))
        side_tags = {t: {"count": stop_after * samples_per_interval, "clock_artifacts": artifacts.get(t, 0),
                         "min_artifact_ns": -1500 if artifacts.get(t) else 0, "clamped": 0, "buffer_full": 0,
                         "max_ns": 0} for t in tags}
        if process != died:  # a killed process never wrote its final sidecar: leave it out entirely
            (d / f"{process}.hlog.json").write_text(json.dumps({"tags": side_tags, "closed": True}))
        (d / "logs" / f"{process}.log").write_text(f"{process}: synthetic log\n")
        p = plan.placement(process)
        processes[process] = {
            "pid": 10_000 + len(processes), "status": "died" if process == died else "ok",
            "exit_code": -9 if process == died else 0,
            "died_after_s": float(stop_after) if process == died else None,
            "log": f"logs/{process}.log", "wait_policy": p.wait_policy, "cpus": list(p.cpus),
        }
    for process in ("capture",):
        processes[process] = {"pid": 20_000 + len(processes), "status": "ok", "exit_code": 0,
                              "log": f"logs/{process}.log", "wait_policy": "sleep", "cpus": [0]}
    books = intervals * samples_per_interval
    counters = {
        "feed-binance": {"msgs": books + 10, "books": books, "rejects": 4, "reject.crossed": 3,
                         "reject.time_backwards": 1, "reconnects": 1, "fail.closed_by_peer": 1,
                         "untradeable_ns": 1_250_000_000},
        "feed-hyperliquid": {"msgs": books // 10, "books": books // 10, "rejects": 0, "reconnects": 0},
        "strategy": {"books.binance": books, "orders": intervals * 2, "orders.entry": intervals},
        "execution": {"orders": intervals * 2, "outcome.filled": intervals, "outcome.not_filled": intervals,
                      "risk.max_position": 0, "paper.pnl.total": 12.5},
        "capture": {"records.book.binance": books, "lost.book.binance": 0},
    }
    options = {"duration_s": float(intervals), "seed": seed, "scenario": None, "wait_policy": None,
               "capture": True, "transport": "paper"}
    (d / "config.toml").write_text(tomli_w.dumps({"session": {k: v for k, v in options.items() if v is not None},
                                                  "plan": {"notes": list(plan.notes)}}))
    env = collect_env(plan=plan.to_dict())
    env["chrony"]["end"] = env["chrony"]["start"]
    (d / "env.json").write_text(json.dumps(env, indent=1))
    rss = RssSampler()
    rss.samples = {p: [(float(t), (30 + i) * MB + (t % 2) * 4096) for t in range(0, max(intervals, 60), 5)]
                   for i, p in enumerate(processes)}
    run = {
        "session": name, "session_id": f"syn{seed}", "synthetic": True,
        "started_ns": int(start_s * 1e9), "ended_ns": int((start_s + intervals) * 1e9),
        "duration_s": float(intervals), "elapsed_s": float(intervals), "options": options,
        "plan": plan.to_dict(), "isolated": plan.isolated, "processes": processes, "counters": counters,
        "exec": {"orders": intervals * 2, "by_outcome": {"FILLED": intervals, "NOT_FILLED": intervals},
                 "by_risk": {"NONE": intervals * 2}, "ring_lost": 0,
                 "fires_per_s": [[float(i), 2] for i in range(intervals)]},
        # flat resident memory per process, sampled every 5 s (what a process whose loops keep nothing shows)
        "rss": {p: summarise(rss.samples[p], 30.0) for p in processes},
    }
    rss.write_series(d / SERIES_FILE)
    collect(d, run, env)
    return d
