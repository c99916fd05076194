"""After a session: turn what the processes left in the session folder into ``summary.json`` and ``.hgrm`` files.

Inputs are the run record the runner kept (processes and how they ended, the last counter snapshots, what it saw
on the exec ring) plus every ``.hlog`` in the folder. Whatever is missing (a process that died, a metric nobody
wrote) is stated in the summary, never papered over.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from caerus.metrics.caveats import caveats
from caerus.metrics.summary import SessionMetrics, load_metrics, write_hgrms
from caerus.plan import feed_venue

SUMMARY_SCHEMA = 1

# Headline counters are found by name across processes' counter blocks (names documented by each process: feeds
# docs/feeds.md, capture docs/capture.md, strategy/execution app modules). A family has total names (a plain counter,
# "rejects") and breakdown prefixes ("reject.crossed" -> "crossed"); a total wins over summing its breakdown, so
# nothing is counted twice. Each family is read only from processes whose name starts with one of its prefixes
# ("" = every process), so e.g. the strategy's and execution's own book counts are not added to the feeds'.
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "books": (("books", "books_published"), (), ("feed",)),
    "rejects": (("rejects",), ("reject", "rejects"), ("feed",)),
    "reconnects": (("reconnects",), ("fail", "reconnects"), ("feed",)),
    "fires": (("fires", "orders"), ("orders",), ("strategy",)),
    "ring_losses": (("ring_lost",), ("lost",), ("",)),
    "ring_full": (("ring_full",), (), ("",)),
}


# Connection ends that are planned, not faults: never shown as reconnect causes (feeds count them under fail.*).
PLANNED_ENDS = frozenset({"rotation", "shutdown"})


def family_total(counters: dict[str, Any], totals: Iterable[str],
                 prefixes: Iterable[str] = ()) -> tuple[int, dict[str, int]]:
    """(total, breakdown) of one counter family in one block."""
    totals = tuple(totals)
    prefixes = tuple(prefixes) or totals
    total: int | None = None
    breakdown: dict[str, int] = {}
    for key, value in counters.items():
        if not isinstance(value, int):
            continue
        if key in totals:
            total = (total or 0) + value
            continue
        for fam in prefixes:
            m = re.fullmatch(rf"{re.escape(fam)}\.(.+)", key)
            if m:
                breakdown[m.group(1)] = breakdown.get(m.group(1), 0) + value
                break
    if total is None:
        total = sum(breakdown.values())
    return total, breakdown


def paper_pnl(counters: dict[str, dict[str, Any]]) -> float | None:
    """Execution's paper PnL: ``paper.pnl.total`` when published, else any single ``*pnl`` gauge."""
    for block in counters.values():
        if isinstance(block.get("paper.pnl.total"), int | float):
            return float(block["paper.pnl.total"])
    for block in counters.values():
        for k, v in block.items():
            if k.lower().endswith("pnl") and isinstance(v, int | float):
                return float(v)
    return None


def headline_counts(counters: dict[str, dict[str, Any]], exec_summary: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for family, (totals, prefixes, processes) in FAMILIES.items():
        total = 0
        by: dict[str, int] = {}
        for process, block in counters.items():
            if not process.startswith(processes):
                continue
            t, b = family_total(block, totals, prefixes)
            total += t
            for k, v in b.items():
                if v and not (family == "reconnects" and k in PLANNED_ENDS):
                    by[f"{process}:{k}"] = v
        out[family] = total
        if by:
            out[f"{family}_by"] = by
    if exec_summary and exec_summary.get("attached", True):
        out["orders"] = exec_summary.get("orders", 0)
        if not out["fires"]:
            out["fires"] = exec_summary.get("orders", 0)
        out["ring_losses"] += int(exec_summary.get("ring_lost", 0))
        out["orders_by_outcome"] = exec_summary.get("by_outcome", {})
        out["orders_by_risk"] = exec_summary.get("by_risk", {})
        confirmed = exec_summary.get("confirmed")
        if confirmed:
            out["orders_by_final_state"] = confirmed.get("orders_by_final_state", {})
    else:
        ex = counters.get("execution") or {}
        if ex:
            out["orders"] = int(ex.get("orders", 0))
            out["orders_by_outcome"] = {k[8:]: v for k, v in ex.items() if k.startswith("outcome.") and v}
            out["orders_by_risk"] = {k[5:]: v for k, v in ex.items() if k.startswith("risk.") and v}
    # Time each venue's newest book record was not tradeable (before the first VALID record, after a STALE or a
    # REJECTED one): the feed's untradeable_ns gauge, per venue ("feed-binance" -> "binance"); a venue split across
    # feed processes shows its worst share.
    untradeable: dict[str, float] = {}
    for process, block in counters.items():
        venue = feed_venue(process)
        if venue is not None and isinstance(block.get("untradeable_ns"), int):
            untradeable[venue] = max(untradeable.get(venue, 0.0), round(block["untradeable_ns"] / 1e9, 3))
    if untradeable:
        out["untradeable_s_by"] = untradeable
    pnl = paper_pnl(counters)
    confirmed = (exec_summary or {}).get("confirmed") if (exec_summary or {}).get("attached", True) else None
    if confirmed and confirmed.get("venues"):
        # The headline PnL comes from the fills the EXEC records confirmed (realized - fees; caerus.session.orders);
        # the engine's own paper account is shown next to it as a cross-check.
        out["paper_pnl"] = float(confirmed["pnl"])
        if pnl is not None:
            out["paper_pnl_engine"] = pnl
    elif pnl is not None:
        out["paper_pnl"] = pnl
    return out


def _finite(x: Any) -> Any:
    """JSON has no NaN/Infinity: a gauge that is NaN (e.g. a markout not computed yet) becomes null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def collect(session_dir: Path, run: dict[str, Any], env: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``<tag>.hgrm`` per metric and ``summary.json``; return the summary."""
    sm: SessionMetrics = load_metrics(session_dir)
    write_hgrms(sm, session_dir)
    counters = _finite(run.get("counters") or {})
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA,
        **{k: v for k, v in run.items() if k not in ("counters",)},
        "metrics": {md.tag: md.stats() for md in sm.ordered()},
        "hlog_files": sm.files,
        "hlog_bad_lines": {k: [list(x) for x in v] for k, v in sm.bad_lines.items()},
        "counters": counters,
        "headline_counts": headline_counts(counters, run.get("exec")),
    }
    summary["caveats"] = caveats(summary, env)
    (session_dir / "summary.json").write_text(json.dumps(_finite(summary), indent=1, default=str, allow_nan=False))
    return summary
