"""Backtest throughput against hftbacktest: the rows come from benchmarks/backtest_speed.py's JSON (it owns that
comparison: both of hftbacktest's backtesters and caerus on the same books and rule, warmed, the same interleaved
repetitions, medians; hftbacktest in the same venv); this module only lists them in the table, with the timing
protocol that run recorded."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.peers.table import BACKTEST, Row

PEER = "hftbacktest 2.4.4"


def rows(path: Path | None, protocol: dict[str, object] | None = None) -> list[Row]:
    """The backtest rows (the ratio column: Caerus' books/s over the contender's, > 1: Caerus faster); ``protocol``
    gets that run's recorded protocol under the comparison's name."""
    if path is None or not path.exists():
        return [Row(BACKTEST, PEER, unavailable="not run here: python -m benchmarks.backtest_speed --json F, then "
                                                "--backtest-json F")]
    doc = json.loads(path.read_text())
    extra = doc.get("extra", {})
    ours = extra.get("total_books_per_s")
    hft = extra.get("hftbacktest") if isinstance(extra.get("hftbacktest"), dict) else {}
    if not ours or not hft:
        return [Row(BACKTEST, PEER, unavailable=f"{path} has no books/s for caerus and hftbacktest's backtesters "
                                                "(an older backtest_speed JSON, or run with --no-peer)")]
    reps = extra.get("repetitions", "?")
    load = extra.get("load_average", {}).get("start", [None])[0]
    how = f"median of {reps} interleaved repetitions" + (f", load {load:.1f}" if load is not None else "")
    out = [Row(BACKTEST, "caerus backtest", ratio_p50=1.0, note=f"{ours:,.0f} books/s end to end ({how})")]
    loop = extra.get("loop_books_per_s")
    if loop:
        out.append(Row(BACKTEST, "caerus replay loop alone", ratio_p50=ours / loop,
                       note=f"{loop:,.0f} books/s: records built before it, not timed (the decision code's floor)"))
    for kind in ("hashmap", "roivec"):
        h = hft.get(kind)
        if not h:
            continue
        ag = h["agreement"]
        same = (f"orders identical {ag['orders_identical_prefix']}/{ag['orders_caerus']}" if ag.get("identical")
                else f"ORDERS DIFFER: first {ag['orders_identical_prefix']} of {ag['orders_caerus']} identical")
        out.append(Row(BACKTEST, f"{PEER} {h['name'].removeprefix('hftbacktest ')}", ratio_p50=ours / h["books_per_s"],
                       note=f"{h['books_per_s']:,.0f} books/s ({how}; warmed: numba compiled before timing, "
                            f"{h['compiled_in_timed_regions']} compilations in its timed regions); {same}"))
    if protocol is not None and "protocol" in extra:
        protocol[BACKTEST] = extra["protocol"]
    return out
