"""The backtest's offline source is the emulator's market as venue-sim plays it: the stochastic ``default`` preset
unless told, any preset or market TOML by ``market``, the books caerus.sim.core.offline yields (one definition)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from caerus.research.backtest import sources
from caerus.sim.core import offline
from caerus.sim.core.market_config import load_market


def test_the_default_is_the_emulators_default_market_and_the_books_are_offline_books() -> None:
    loaded = sources.offline_market(60, seed=4)
    cols = offline.columns(load_market("default", seed=4), 60)
    ev = loaded.events
    assert len(ev) == len(cols["t_ns"])
    # the same books, reordered only by the engine later (sort=False keeps the model's order here)
    assert np.array_equal(np.sort(ev.t_exchange), np.sort(np.asarray(cols["t_exchange"])))
    assert np.array_equal(np.sort(ev.bid_px), np.sort(np.asarray(cols["bid_px"])))
    assert "offline market model default" in loaded.description


def test_a_preset_or_a_file_selects_another_market(tmp_path: Path) -> None:
    stochastic = sources.offline_market(60, seed=4)
    fixed = sources.offline_market(60, seed=4, market="fixed-lag")
    assert len(fixed.events) != len(stochastic.events) or not np.array_equal(fixed.events.bid_px,
                                                                              stochastic.events.bid_px)
    path = tmp_path / "m.toml"
    path.write_text('hl_lag_ms = 250.0\n')
    from_file = sources.offline_market(60, seed=4, market=path)
    assert "m.toml" in from_file.description or str(path) in from_file.description


def test_a_bad_market_is_a_source_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("no_such_setting = 1\n")
    with pytest.raises(sources.SourceError, match="no_such_setting"):
        sources.offline_market(10, seed=1, market=bad)
    with pytest.raises(sources.SourceError, match="> 0 s"):
        sources.offline_market(0, seed=1)
