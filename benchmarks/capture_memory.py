"""Capture's memory over many chDB inserts: does the embedded store's RSS level off, or grow for good?

A 30-minute local session showed the capture process growing (+0.89 MB/min early, +0.31 MB/min late) while every
hot process stayed flat. Capture inserts a batch per table every flush, so what matters is RSS against the number
of inserts, not time. This runs the real store (``ChdbStore``) and the real row conversion with book batches of a
session's size, samples RSS every ``--every`` inserts, and compares the growth per 1000 inserts over the first
third of the run with the last third (a same-run ratio: the absolute MB depend on the machine's allocator).

    python -m benchmarks.capture_memory [--quick] [--inserts N] [--rows R] [--json PATH]

Reading it: ``late/early growth`` well below 1 means the store levels off (allocator arenas and caches warming up);
near or above 1 means it keeps growing and a day-long session would need a bounded store (rotation, a server).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import add_common_args, at_most, emit
from caerus.capture import rows
from caerus.capture.store import ChdbStore
from caerus.wire import BOOK


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def run(inserts: int, rows_per_insert: int, every: int) -> list[tuple[int, float]]:
    """(inserts done, RSS MB) samples over ``inserts`` inserts of ``rows_per_insert`` book rows each."""
    samples = []
    with tempfile.TemporaryDirectory() as d:
        store = ChdbStore(Path(d))
        batch = np.zeros(rows_per_insert, dtype=BOOK.dtype)
        batch["venue"] = 1
        batch["flags"] = 1
        batch["bid_px"] = 100_000.0
        batch["ask_px"] = 100_000.1
        for i in range(inserts):
            batch["seq"] = np.arange(i * rows_per_insert, (i + 1) * rows_per_insert)
            batch["t_recv"] = batch["seq"] * 1_000
            store.insert("books", rows.tables_from("book", batch)["books"], "mem")
            if i % every == 0:
                samples.append((i, rss_mb()))
        samples.append((inserts, rss_mb()))
        store.close()
    return samples


def growth_per_1000(samples: list[tuple[int, float]]) -> float:
    """Least-squares slope of RSS against inserts, in MB per 1000 inserts (robust to the allocator's sawtooth)."""
    x = np.array([s[0] for s in samples], dtype=float)
    y = np.array([s[1] for s in samples], dtype=float)
    return float(np.polyfit(x, y, 1)[0] * 1000) if len(samples) >= 2 else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--inserts", type=int, help="inserts in all (default 12000, quick 3000)")
    p.add_argument("--rows", type=int, default=200, help="book rows per insert (a session flush is ~100-500)")
    p.add_argument("--every", type=int, default=250, help="sample RSS every N inserts")
    a = p.parse_args()
    inserts = a.inserts or (3000 if a.quick else 12_000)
    samples = run(inserts, a.rows, a.every)
    third = len(samples) // 3
    early, late = growth_per_1000(samples[:third]), growth_per_1000(samples[-third:])
    for n, mb in samples[:: max(1, len(samples) // 12)]:
        print(f"after {n:>6} inserts: RSS {mb:7.1f} MB")
    print(f"growth per 1000 inserts: first third {early:+.2f} MB, last third {late:+.2f} MB")
    ratio = late / early if early > 0 else float("nan")
    emit("capture_memory", {}, ratios={"late/early growth": ratio},
         goals=[at_most("capture store late/early RSS growth", ratio, 0.5, "x")], quick=a.quick, json_path=a.json,
         extra={"samples": samples, "growth_mb_per_1000": {"early": early, "late": late}, "rows": a.rows})


if __name__ == "__main__":
    main()
