"""Sweeps: the parameter grid and the ranges (running a sweep takes worker processes: tests/integration)."""

from __future__ import annotations

import pytest

from caerus.research.backtest import sweep


def test_the_grid_is_every_combination_and_bad_names_are_refused() -> None:
    grid = sweep.parse_grid(["entry_bps=3,5,8", "ewma_half_life_s=1,3"])
    assert len(grid) == 6 and {"entry_bps": 8, "ewma_half_life_s": 1} in grid
    with pytest.raises(ValueError, match="strategy setting"):
        sweep.parse_grid(["entry_bpz=3"])
    with pytest.raises(ValueError):
        sweep.parse_grid(["exit_bps=9"])  # exit above the default entry: the config's own check
    with pytest.raises(ValueError, match=r"A\.\.B"):
        sweep.parse_range("10")
