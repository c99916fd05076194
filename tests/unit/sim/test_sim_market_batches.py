"""Binance's quotes in batches (issue 46): the batch law the settings say, binance_rate_hz still updates per second."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from caerus.sim.market import BinanceQuote, MarketModel, batch_mean
from caerus.sim.market_config import MarketConfig, MarketFileError, load_market


def quote_times(cfg: MarketConfig, seconds: float) -> np.ndarray:
    end = seconds * 1e9
    return np.array([e.t_ns for e in itertools.takewhile(lambda e: e.t_ns < end, MarketModel(cfg).events())
                     if isinstance(e, BinanceQuote)], dtype=np.int64)


def test_batch_sizes_follow_the_power_law_the_settings_give() -> None:
    # few batches a second and 1 us inside one: every measured run of updates < 1 ms apart is one batch
    cfg = dataclasses.replace(MarketConfig(seed=4), binance_rate_hz=20.0, burst_prob_per_s=0.0,
                              binance_batch_alpha=1.5, binance_batch_gap_us=1.0)
    t = quote_times(cfg, 600.0)
    starts = np.flatnonzero(np.r_[True, np.diff(t) >= 1_000_000])
    sizes = np.diff(np.r_[starts, t.size])
    for k in (2, 3, 5, 10):
        assert np.mean(sizes >= k) == pytest.approx(k ** -1.5, abs=0.02), k
    assert sizes.max() <= cfg.binance_batch_max
    gaps = np.diff(t)
    assert gaps[gaps < 20_000].mean() == pytest.approx(1000.0, rel=0.1)  # 1 us inside a batch, in ns


def test_binance_rate_hz_stays_updates_per_second_with_batches() -> None:
    base = dataclasses.replace(MarketConfig(seed=6), binance_rate_hz=150.0, burst_prob_per_s=0.0)
    for alpha in (0.0, 1.3, 2.0):
        t = quote_times(dataclasses.replace(base, binance_batch_alpha=alpha), 200.0)
        assert t.size / 200.0 == pytest.approx(150.0, rel=0.06), alpha
    assert batch_mean(1.5, 100) == pytest.approx(sum(k ** -1.5 for k in range(1, 101)))


def test_batch_settings_are_checked_naming_the_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for text, key in (("binance_batch_alpha = -1.0", "binance_batch_alpha"),
                      ("binance_batch_max = 0", "binance_batch_max"),
                      ("binance_batch_max = 1.5", "binance_batch_max"),
                      ("binance_batch_gap_us = 0.0", "binance_batch_gap_us")):
        path = tmp_path / "m.toml"
        path.write_text(text + "\n")
        with pytest.raises(MarketFileError, match=key):
            load_market(path)
