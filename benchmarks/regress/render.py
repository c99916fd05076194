"""Presenting a regression report: the terminal table (rich), regress.json and regress.md.

The report is the plain dict runner.py builds; nothing here decides anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.regress.stats import CHANGED, IMPROVEMENT, REGRESSION

_STYLE = {REGRESSION: "bold red", IMPROVEMENT: "green", CHANGED: "yellow"}


def fmt_value(metric: str, v: float | None, *, normalized: bool = False) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if normalized or "/ratio." in metric:
        return f"{v:.4g}" if normalized else f"{v:.3g}x"
    return f"{v / 1000:.2f} us" if abs(v) >= 1000 else f"{v:.0f} ns"


def fmt_change(effect: float | None) -> str:
    if effect is None or not math.isfinite(effect):
        return "-"
    return f"{effect * 100:+.1f}%"


def fmt_p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "-"
    return f"{p:.2g}"


def fmt_mde(c: dict) -> str:
    """Minimum detectable effect of a gating row, flagged when the metric is too noisy to gate at its threshold."""
    mde = c.get("mde")
    if not c.get("gating") or mde is None:
        return "-"
    text = "cannot reach alpha" if mde == "inf" else f"{mde * 100:.1f}%"
    return text if c.get("gateable") else f"{text} (too noisy for {c['threshold'] * 100:.0f}%)"


def _verdict_text(c: dict) -> str:
    """Gating rows show their family decision; information rows say they cannot fail the run."""
    if c.get("gating", True):
        return c["verdict"]
    return f"{c.get('raw_verdict', c['verdict'])} (info)"


def _rows(comparisons: list[dict], normalized: bool) -> list[tuple[str, ...]]:
    return [(c["metric"], fmt_value(c["metric"], c["base_median"], normalized=normalized),
             fmt_value(c["metric"], c["head_median"], normalized=normalized), fmt_change(c["effect"]),
             fmt_p(c["p_value"]), fmt_p(c.get("p_adjusted")), fmt_mde(c), _verdict_text(c)) for c in comparisons]


def _ordered(comparisons: list[dict]) -> list[dict]:
    """Gating metrics first (they decide), then information."""
    return sorted(comparisons, key=lambda c: not c.get("gating", True))


def _table(title: str, base_label: str, comparisons: list[dict], normalized: bool) -> Table:
    table = Table(title=title)
    comparisons = _ordered(comparisons)
    for col in ("metric", base_label, "head", "change", "p-value", "p (Holm)", "MDE", "verdict"):
        table.add_column(col, justify="left" if col in ("metric", "verdict") else "right")
    for row, c in zip(_rows(comparisons, normalized), comparisons, strict=True):
        style = _STYLE.get(c["verdict"], "")
        if not c.get("gating", True):
            style = "dim"
        table.add_row(*row[:-1], f"[{style}]{row[-1]}[/{style}]" if style else row[-1])
    return table


def print_report(report: dict, console: Console | None = None) -> None:
    console = console or Console()
    if report.get("comparisons"):
        base = report["base"]
        console.print(_table(f"base {base['rev']} ({base['sha'][:12]}) vs head, median of "
                             f"{report['options']['repetitions']} interleaved repetitions", "base",
                             report["comparisons"], False))
    bl = report.get("baseline") or {}
    if bl.get("comparisons"):
        console.print(_table(f"head vs stored baseline {bl['key']} ({bl['mode']}; ratios to in-run references)",
                             "baseline", bl["comparisons"], True))
    if bl.get("message"):
        console.print(f"baseline: {bl['message']}")
    confirm = report.get("confirm")
    if confirm:
        for label, rows in _confirm_groups(confirm):
            console.print(_table(f"confirm pass vs {label}: {', '.join(confirm['members'])} re-measured, "
                                 f"{confirm['repetitions']} interleaved repetitions per side (fresh samples only)",
                                 label, rows, label == "baseline"))
    for p in report.get("problems", []):
        console.print(f"[yellow]problem:[/yellow] {p}")
    s = report["summary"]
    colour = {"regression": "bold red", "ok": "green"}.get(report["verdict"], "yellow")
    first = s.get("first_pass_regressions") or []
    confirmed = "" if s.get("confirmed") is None else f", confirmed {len(s['confirmed'])} of {len(first)} flagged"
    console.print(f"[{colour}]verdict: {report['verdict']}[/{colour}] (exit {report['exit_code']}); "
                  f"gating regressions {len(s['regressions'])}{confirmed}; information-only regressions "
                  f"{len(s.get('information_regressions') or [])}, improvements {len(s['improvements'])}, "
                  f"changed {len(s['changed'])}" + (" [report-only]" if report["options"]["report_only"] else ""))


def _confirm_groups(confirm: dict) -> list[tuple[str, list[dict]]]:
    """The confirm pass's rows by signal: ("base", rows against fresh base samples), ("baseline", ...)."""
    groups = [(label, [c for c in confirm["comparisons"] if c.get("signal", "base") == label])
              for label in ("base", "baseline")]
    return [(label, rows) for label, rows in groups if rows]


def _md_table(base_label: str, comparisons: list[dict], normalized: bool) -> list[str]:
    lines = [f"| metric | {base_label} | head | change | p-value | p (Holm) | MDE | verdict |",
             "|---|--:|--:|--:|--:|--:|--:|---|"]
    for row in _rows(_ordered(comparisons), normalized):
        verdict = f"**{row[-1]}**" if row[-1] == REGRESSION else row[-1]
        lines.append("| " + " | ".join((f"`{row[0]}`", *row[1:-1], verdict)) + " |")
    return lines


def render_markdown(report: dict) -> str:
    o = report["options"]
    lines = [f"# Regression check: {report['verdict']}", ""]
    lines.append(f"- machine: `{report['machine']['key']}`; repetitions per side: {o['repetitions']} "
                 f"({'quick' if o['quick'] else 'full'}); alpha {o['alpha']}, default threshold "
                 f"{o['threshold'] * 100:.0f}%{'; report-only' if o['report_only'] else ''}")
    head = report["head"]
    lines.append(f"- head: `{(head.get('sha') or '?')[:12]}`{' + uncommitted changes' if head.get('dirty') else ''}")
    if report.get("base"):
        lines.append(f"- base: `{report['base']['rev']}` (`{report['base']['sha'][:12]}`)")
    s = report["summary"]
    for key in ("regressions", "improvements", "changed"):
        if s[key]:
            lines.append(f"- {key}: " + ", ".join(f"`{m}`" for m in s[key]))
    lines.append("")
    if report.get("comparisons"):
        lines += ["## Base vs head (same machine, interleaved)", ""]
        lines += _md_table("base", report["comparisons"], False)
        lines.append("")
    confirm = report.get("confirm")
    if confirm:
        lines += [f"## Confirm pass ({confirm['repetitions']} more interleaved repetitions of "
                  f"{', '.join(confirm['members'])})", ""]
        for label, rows in _confirm_groups(confirm):
            lines += _md_table(label, rows, label == "baseline") + [""]
        confirmed = [*confirm["confirmed"], *confirm.get("confirmed_baseline", [])]
        lines += ["Confirmed: " + (", ".join(f"`{m}`" for m in confirmed) or "none"), ""]
    bl = report.get("baseline") or {}
    lines += ["## Stored baseline", ""]
    if bl.get("message"):
        lines += [bl["message"], ""]
    if bl.get("comparisons"):
        lines += _md_table("baseline", bl["comparisons"], True)
        lines.append("")
    lines += ["## Suite members", "", "| member | side | status | runs ok | first problem |", "|---|---|---|--:|---|"]
    for name, sides in report["members"].items():
        for side, st in sides.items():
            first = (st["failures"][0] if st["failures"] else "").replace("|", "/")
            lines.append(f"| {name} | {side} | {st['status']} | {st['runs_ok']} | {first} |")
    if report.get("problems"):
        lines += ["", "## Problems", ""] + [f"- {p}" for p in report["problems"]]
    lines += ["", "Regression = Mann-Whitney U p < alpha and |change| > threshold in the worse direction; only "
              "gating metrics can fail a run, decided on Holm-adjusted p-values over the gating family and "
              "confirmed by a second pass; MDE = smallest shift the run could detect with 80% power "
              "(docs/regress.md).", ""]
    return "\n".join(lines)


def _jsonable(v: object) -> object:
    """NaN/inf become null: regress.json stays strict JSON for every reader."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def write_outputs(report: dict, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out / "regress.json", out / "regress.md"
    jpath.write_text(json.dumps(_jsonable(report), indent=2, allow_nan=False) + "\n")
    mpath.write_text(render_markdown(report))
    return jpath, mpath
