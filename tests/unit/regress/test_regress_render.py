"""Report rendering: the markdown and JSON files hold the table the terminal shows."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from benchmarks.regress.render import fmt_change, fmt_value, print_report, render_markdown, write_outputs
from benchmarks.regress.stats import compare


def _report() -> dict:
    reg = compare("ipc_hop/swmr.p99", [1000.0 + i for i in range(9)], [1500.0 + i for i in range(9)]).to_dict()
    same = compare("ipc_hop/ratio.speedup", [40.0 + i for i in range(9)], [40.5 + i for i in range(9)],
                   direction="higher").to_dict()
    return {
        "verdict": "regression", "exit_code": 1,
        "options": {"repetitions": 9, "quick": True, "alpha": 0.01, "threshold": 0.1, "report_only": False},
        "machine": {"key": "amd-epyc-2c-6.18"}, "head": {"sha": "f" * 40, "dirty": True},
        "base": {"rev": "HEAD~1", "sha": "a" * 40},
        "comparisons": [reg, same],
        "baseline": {"key": "amd-epyc-2c-6.18", "mode": "quick", "comparisons": [],
                     "message": "no quick baseline", "updated": None},
        "members": {"ipc_hop": {"base": {"status": "ok", "runs_ok": 9, "failures": []},
                                "head": {"status": "partial", "runs_ok": 8, "failures": ["rep 3: exited 1 | x"]}}},
        "summary": {"regressions": ["ipc_hop/swmr.p99"], "improvements": [], "changed": []},
        "problems": ["head ipc_hop: partial"], "samples": {"base": {}, "head": {}},
        "nan": float("nan"),
    }


def test_markdown_has_the_table_rows() -> None:
    md = render_markdown(_report())
    assert "| metric | base | head | change | p-value | p (Holm) | MDE | verdict |" in md
    assert "| `ipc_hop/swmr.p99` | 1.00 us | 1.50 us | +49.8% | 4.1e-05 |" in md
    assert "**regression**" in md
    assert "| `ipc_hop/ratio.speedup` | 44x | 44.5x | +1.1% |" in md
    assert "| ipc_hop | head | partial | 8 | rep 3: exited 1 / x |" in md
    assert "no quick baseline" in md and "+ uncommitted changes" in md


def test_outputs_are_strict_json_and_markdown(tmp_path: Path) -> None:
    j, m = write_outputs(_report(), tmp_path / "o")
    doc = json.loads(j.read_text())
    assert doc["nan"] is None and doc["comparisons"][0]["verdict"] == "regression"
    assert m.read_text().startswith("# Regression check: regression")


def test_terminal_table() -> None:
    buf = io.StringIO()
    print_report(_report(), Console(file=buf, width=160))
    out = buf.getvalue()
    assert "ipc_hop/swmr.p99" in out and "regression" in out and "+49.8%" in out and "exit 1" in out


def test_formatting() -> None:
    assert fmt_value("a/b.p50", 950.0) == "950 ns"
    assert fmt_value("a/b.p50", None) == "-"
    assert fmt_value("a/b.p50", 0.0123, normalized=True) == "0.0123"
    assert fmt_change(float("inf")) == "-"
