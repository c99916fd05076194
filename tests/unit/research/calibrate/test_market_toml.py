"""A calibration's market TOML is always one the emulator loads, also when the books show no lag."""

from __future__ import annotations

import tomllib
from pathlib import Path

from caerus.research.calibrate.estimators import Estimate
from caerus.research.calibrate.fit import Calibration
from caerus.research.calibrate.market_toml import CARRIED, market_settings, render
from caerus.sim.market_config import load_market


def _cal(lag_ms: float) -> Calibration:
    return Calibration(symbol="BTC", clock="t_exchange", start_ns=0, end_ns=120 * 10**9, rows={"binance": 1},
                       estimates={"lag_median_ms": Estimate(lag_ms, float("nan"), 14)}, cross_checks={}, notes=[])


def test_a_zero_lag_is_written_as_a_fixed_lag_the_emulator_loads(tmp_path: Path) -> None:
    assert market_settings(_cal(0.0)) == {"hl_lag_ms": 0.0, "hl_lag_sd_ms": 0.0}
    path = tmp_path / "market.toml"
    path.write_text(render(_cal(0.0), "test"))
    market = load_market(path)  # before the fix: "hl_lag_ms must be > 0 when hl_lag_sd_ms > 0"
    assert market.hl_lag_ms == 0.0 and market.hl_lag_sd_ms == 0.0
    assert "hl_lag_sd_ms" not in market_settings(_cal(120.0))  # a measured lag keeps the preset's dispersion


def test_the_header_says_what_was_fitted_what_was_carried_over_and_why() -> None:
    cal = Calibration(symbol="BTC", clock="t_exchange", start_ns=0, end_ns=120 * 10**9, rows={"binance": 1},
                      estimates={"lag_median_ms": Estimate(600.0, 30.0, 120),
                                 "catch_up_late": Estimate(0.06, 0.42, 10),
                                 "own_per_min": Estimate(11.0, 0.9, 160)}, cross_checks={}, notes=[])
    text = render(cal, "test")
    settings = market_settings(cal)
    assert settings == {"hl_lag_ms": 600.0}  # the carried ones are estimated but not written from the books
    assert "# fitted from these books: hl_lag_ms\n" in text
    assert "hl_lag_ms = 600 (SE 30, 95 % CI [541.2, 658.8], n = 120) ms" in text
    assert "catch_up_late = 0.06 (SE 0.42, 95 % CI [-0.7632, 0.8832], n = 10) of the rest   [not recovered" in text
    for setting in CARRIED:
        assert f"#   {setting} = " in text and "not estimated: from preset; " in text
    market = load_market("default", **{k: v for k, v in tomllib.loads(text).items()})
    assert market.catch_up_late == load_market("default").catch_up_late  # the preset's value, as the header says
