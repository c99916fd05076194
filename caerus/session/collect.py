"""After a session: turn what the processes left in the session folder into ``summary.json`` and ``.hgrm`` files.

Inputs are the run record the runner kept (processes and how they ended, the last counter snapshots, what it saw
on the exec ring) plus every ``.hlog`` in the folder. Whatever is missing (a process that died, a metric nobody
wrote) is stated in the summary, never papered over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from caerus.metrics.summary import SessionMetrics, load_metrics, write_hgrms
from caerus.report.caveats import caveats

SUMMARY_SCHEMA = 1

# Headline counters are found by name across processes' counter blocks. Convention (docs/sessions.md): a total
# has the plain family name ("rejects"), a breakdown uses "<family>.<key>" ("rejects.crossed"). A total wins over
# summing its breakdown, so nothing is counted twice. Each family is read from the processes whose name starts
# with one of its prefixes ("" = every process), so e.g. the strategy's own book count is not added to the feeds'.
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "books": (("books", "books_published"), ("feed",)),
    "rejects": (("rejects", "rejected", "book_rejects"), ("feed",)),
    "reconnects": (("reconnects", "reconnect"), ("",)),
    "fires": (("fires", "orders_fired", "fired"), ("strategy",)),
    "ring_losses": (("lost", "ring_lost", "losses", "ring_losses"), ("",)),
}


def family_total(counters: dict[str, Any], names: Iterable[str]) -> tuple[int, dict[str, int]]:
    """(total, breakdown) of one counter family in one block."""
    names = tuple(names)
    total: int | None = None
    breakdown: dict[str, int] = {}
    for key, value in counters.items():
        if not isinstance(value, int):
            continue
        for fam in names:
            if key == fam:
                total = (total or 0) + value
            else:
                m = re.fullmatch(rf"{re.escape(fam)}\.(.+)", key)
                if m and not m.group(1).startswith(("rate", "per_s")):
                    breakdown[m.group(1)] = breakdown.get(m.group(1), 0) + value
    if total is None:
        total = sum(breakdown.values())
    return total, breakdown


def headline_counts(counters: dict[str, dict[str, Any]], exec_summary: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for family, (names, prefixes) in FAMILIES.items():
        total = 0
        by: dict[str, int] = {}
        for process, block in counters.items():
            if not process.startswith(prefixes):
                continue
            t, b = family_total(block, names)
            total += t
            for k, v in b.items():
                by[f"{process}:{k}"] = v
        out[family] = total
        if by:
            out[f"{family}_by"] = by
    if exec_summary:
        out["orders"] = exec_summary.get("orders", 0)
        if not out["fires"]:
            out["fires"] = exec_summary.get("orders", 0)
        out["ring_losses"] += int(exec_summary.get("ring_lost", 0))
        out["orders_by_outcome"] = exec_summary.get("by_outcome", {})
        out["orders_by_risk"] = exec_summary.get("by_risk", {})
    pnl = [v for block in counters.values() for k, v in block.items() if "pnl" in k.lower()]
    if pnl:
        out["paper_pnl"] = float(sum(pnl))
    return out


def collect(session_dir: Path, run: dict[str, Any], env: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``<tag>.hgrm`` per metric and ``summary.json``; return the summary."""
    sm: SessionMetrics = load_metrics(session_dir)
    write_hgrms(sm, session_dir)
    counters = run.get("counters") or {}
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
    (session_dir / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=False, default=str))
    return summary
