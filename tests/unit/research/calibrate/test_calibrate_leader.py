"""Binance's settings alone (fit.calibrate_leader, `caerus calibrate --binance-only`): from the default market's
Binance books with their send times, the price's settings and the quote arrivals come back, every Hyperliquid
setting is the preset's, and the TOML says which is which."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from caerus.research.calibrate.fit import BINANCE_ONLY_NOTE, CalibrationError, FitSettings, calibrate_leader
from caerus.research.calibrate.market_toml import render
from caerus.sim.core import offline
from caerus.sim.core.market_config import FIELDS, load_market
from caerus.wire import Venue

TRUE = load_market("default", seed=7)


def binance_books(minutes: float) -> pd.DataFrame:
    """The default market's Binance books as caerus.data.books returns them, received when sent (t_recv = the
    schedule), so the arrivals are the model's own."""
    cols = offline.columns(TRUE, minutes * 60.0)
    keep = np.asarray(cols["venue"]) == int(Venue.BINANCE)
    t_ns = np.asarray(cols["t_ns"], dtype=np.int64)[keep]
    return pd.DataFrame({
        "venue": "binance", "symbol": "BTC", "t_exchange": np.asarray(cols["t_exchange"])[keep],
        "t_recv": offline.OFFLINE_EPOCH_NS + t_ns, "bid_px": np.asarray(cols["bid_px"])[keep],
        "ask_px": np.asarray(cols["ask_px"])[keep]})


def test_binance_settings_come_back_and_hyperliquid_is_carried(tmp_path: Path) -> None:
    cal = calibrate_leader(binance_books(8.0))
    assert set(cal.rows) == {"binance"}
    assert BINANCE_ONLY_NOTE in cal.notes
    est = cal.estimates
    assert "block_ms" not in est and "lag_median_ms" not in est and "catch_up" not in est  # no follower read
    assert est["annual_vol"].value == pytest.approx(TRUE.annual_vol, rel=0.25)
    assert est["binance_batch_alpha"].value == pytest.approx(TRUE.binance_batch_alpha, abs=0.1)
    assert est["binance_rate_hz"].value == pytest.approx(TRUE.binance_rate_hz, rel=0.15)
    assert est["binance_batch_gap_us"].value == pytest.approx(TRUE.binance_batch_gap_us, rel=0.1)
    path = tmp_path / "binance.toml"
    path.write_text(render(cal, "test", known={k: f.default for k, f in FIELDS.items()}))
    cfg = load_market(path)
    preset = load_market("default")
    for key in FIELDS:
        if key.startswith("hl_") or key.startswith("catch_up"):
            assert getattr(cfg, key) == getattr(preset, key), key
    assert cfg.binance_batch_alpha == round(est["binance_batch_alpha"].value, 3)


def test_too_short_or_without_binance_books_is_refused() -> None:
    books = binance_books(0.5)
    with pytest.raises(CalibrationError, match=r"span 30\.0 s, need at least 60 s"):
        calibrate_leader(books)
    with pytest.raises(CalibrationError, match="0 usable binance books"):
        calibrate_leader(books.assign(venue="hyperliquid"))
    with pytest.raises(CalibrationError, match="arrival clock"):
        calibrate_leader(books, FitSettings(), arrival_clock="t_wire")
