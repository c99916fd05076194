"""Sweeps: the parameter grid and the ranges (running a sweep takes worker processes: tests/integration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from caerus.research.backtest import sweep
from tests.fixtures.html_check import HOSTILE_NAME, live_markup


def test_the_grid_is_every_combination_and_bad_names_are_refused() -> None:
    grid = sweep.parse_grid(["entry_bps=3,5,8", "ewma_half_life_s=1,3"])
    assert len(grid) == 6 and {"entry_bps": 8, "ewma_half_life_s": 1} in grid
    with pytest.raises(ValueError, match="strategy setting"):
        sweep.parse_grid(["entry_bpz=3"])
    with pytest.raises(ValueError):
        sweep.parse_grid(["exit_bps=9"])  # exit above the default entry: the config's own check
    with pytest.raises(ValueError, match=r"A\.\.B"):
        sweep.parse_range("10")


def test_the_sweep_report_escapes_the_source_parameters_and_choice(tmp_path: Path) -> None:
    """Issue 44: render wrote the source, parameter names and values and the choice's `by` as they were, so a
    host-listed session folder named like HOSTILE_NAME became live markup in sweep.html."""
    source = f"/sessions/{HOSTILE_NAME}"
    result = {"pnl_marked": 1.5, "fills": 2}
    rows = [{"params": {"mode": f"{HOSTILE_NAME}{k}", "entry_bps": k}, "train": result, "test": result}
            for k in (3, 5)]
    doc = {"source": {"kind": "session", "path": source}, "train": ["0", HOSTILE_NAME], "test": ["30", "60"],
           "latency": f"session:{source}", "fills": {"note": HOSTILE_NAME}, "seed": 1, "grid": rows,
           "chosen": {"params": rows[0]["params"], "by": HOSTILE_NAME, "train": result, "test": result}}
    page = sweep.render(doc, tmp_path / "sweep.html").read_text()
    assert live_markup(page, SWEEP_TAGS) == []
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # shown, as text


SWEEP_TAGS = frozenset({"html", "head", "meta", "title", "body", "h1", "p", "b", "img", "table", "tr", "th", "td"})


def test_a_sweeps_latency_spec_names_its_model_and_the_default_is_the_fleets() -> None:
    default = sweep.latency_model("profile:default")
    assert default.source.startswith("profile fleet-2vcpu") and not default.is_zero
    assert sweep.latency_model("profile:default;wire=0").segments["wire"].p99 == 0  # --paper: no wire
    assert sweep.latency_model("zero").is_zero and sweep.latency_model("const:0").is_zero
    assert sweep.latency_model("const:1000").segments["wire"].p50 == 1000
    with pytest.raises(ValueError, match="latency spec"):
        sweep.latency_model("fast")
