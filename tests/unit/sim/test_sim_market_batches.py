"""Binance's quotes in batches (issue 46): the batch law the settings say, binance_rate_hz still updates per second,
and the default market, refit on real USD-M BTCUSDT, arriving as the real stream does (offline, seeded)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from caerus.sim.core.market import BinanceQuote, MarketModel, batch_mean
from caerus.sim.core.market_config import MarketConfig, MarketFileError, load_market

#: real USD-M BTCUSDT bookTicker, 2024-08-08 23:54-00:00 (66,089 frames over 344 s, receive stamps;
#: ../shared/data/real/README.md, python -m benchmarks.market_fit): updates per second and the share of updates
#: within 1 ms of the previous one
REAL_RATE_HZ = 191.9
REAL_WITHIN_1MS = 0.584


def quote_times(cfg: MarketConfig, seconds: float) -> np.ndarray:
    end = seconds * 1e9
    return np.array([e.t_ns for e in itertools.takewhile(lambda e: e.t_ns < end, MarketModel(cfg).events())
                     if isinstance(e, BinanceQuote)], dtype=np.int64)


def test_the_refit_default_market_arrives_as_real_usdm_btcusdt_does() -> None:
    # three seeds x 400 s (the real capture is 344 s): the rate within 10 % and the within-1 ms share within 0.03
    # of the real ones. Before the refit the default served ~106 updates/s, 15 % of them within 1 ms.
    rates, within = [], []
    for seed in (1, 2, 3):
        t = quote_times(load_market("default", seed=seed), 400.0)
        rates.append(t.size / 400.0)
        within.append(float(np.mean(np.diff(t) < 1_000_000)))
    assert np.mean(rates) == pytest.approx(REAL_RATE_HZ, rel=0.10), rates
    assert np.mean(within) == pytest.approx(REAL_WITHIN_1MS, abs=0.03), within


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
