"""caerus.research.calibrate.fit on small frames: which rows count and the one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from caerus.research.calibrate.fit import CalibrationError, FitSettings, calibrate, venue_series
from caerus.wire import BookFlags


def frame(flags: list[int]) -> pd.DataFrame:
    n = len(flags)
    return pd.DataFrame({
        "venue": pd.Categorical(["binance"] * n), "symbol": ["BTC"] * n, "flags": flags,
        "t_exchange": np.arange(n, dtype=np.int64) * 1_000_000, "t_recv": np.arange(n, dtype=np.int64) * 1_000_000,
        "bid_px": 100.0 + np.arange(n), "ask_px": 100.5 + np.arange(n),
    })


def test_venue_series_keeps_valid_books_only() -> None:
    v, r, s = int(BookFlags.VALID), int(BookFlags.REJECTED), int(BookFlags.STALE)
    series = venue_series(frame([v, v | r, 0, v | s, v]), "binance", "t_exchange")
    assert series.t.tolist() == [0, 4_000_000]
    assert np.exp(series.x).tolist() == pytest.approx([100.25, 104.25])


def test_venue_series_keeps_the_last_book_of_a_time_and_drops_crossed_ones() -> None:
    f = frame([1, 1, 1, 1])
    f.loc[1, "t_exchange"] = 0  # a second book in the same millisecond
    f.loc[2, "ask_px"] = 50.0  # crossed
    series = venue_series(f, "binance", "t_exchange")
    assert series.t.tolist() == [0, 3_000_000]
    assert np.exp(series.x[0]) == pytest.approx(101.25)


def test_errors_name_what_is_wrong() -> None:
    with pytest.raises(CalibrationError, match="lack column"):
        calibrate(frame([1]).drop(columns=["ask_px"]))
    two = pd.concat([frame([1] * 3), frame([1] * 3).assign(symbol="ETH")])
    with pytest.raises(CalibrationError, match="2 symbols"):
        calibrate(two)
    with pytest.raises(CalibrationError, match="no books for symbol 'SOL'"):
        calibrate(two, FitSettings(symbol="SOL"))
    with pytest.raises(CalibrationError, match="usable hyperliquid books"):
        calibrate(frame([1] * 100))
    with pytest.raises(CalibrationError, match="clock must be one of"):
        calibrate(frame([1] * 100), FitSettings(clock="t_publish"))
