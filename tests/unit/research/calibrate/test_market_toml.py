"""A calibration's market TOML is always one the emulator loads, also when the books show no lag."""

from __future__ import annotations

from pathlib import Path

from caerus.research.calibrate.estimators import Estimate
from caerus.research.calibrate.fit import Calibration
from caerus.research.calibrate.market_toml import market_settings, render
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
