"""Backtest throughput against hftbacktest: the row comes from benchmarks/backtest_speed.py's JSON (it owns that
comparison and runs hftbacktest in the same venv); this module only lists it in the table."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.peers.table import Row


def rows(path: Path | None) -> list[Row]:
    name = "backtest throughput (book events/s)"
    if path is None or not path.exists():
        return [Row(name, "hftbacktest 2.4.4", unavailable="not run here: python -m benchmarks.backtest_speed --json "
                                                        "F, then --backtest-json F")]
    doc = json.loads(path.read_text())
    extra = doc.get("extra", {})
    ours = extra.get("total_books_per_s")
    peer = extra.get("peer", {}).get("books_per_s") if isinstance(extra.get("peer"), dict) else None
    if not ours or not peer:
        return [Row(name, "hftbacktest 2.4.4", unavailable=f"{path} has no books/s for both")]
    # throughput: the ratio is Caerus's rate over the peer's (> 1: Caerus faster), in the same column
    return [Row(name, "caerus backtest", ratio_p50=1.0, note=f"{ours:,.0f} books/s"),
            Row(name, "hftbacktest 2.4.4", ratio_p50=ours / peer, note=f"{peer:,.0f} books/s (ratio: Caerus/peer)")]
