"""A calibration's market TOML is always one the emulator loads, and its header says what its body writes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from caerus.research.calibrate.estimators import Estimate
from caerus.research.calibrate.fit import Calibration
from caerus.research.calibrate.market_toml import CARRIED, market_settings, render
from caerus.sim.core.market_config import load_market


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
    assert "hl_lag_ms = 600.0   (SE 30, 95 % CI [541.2, 658.8], n = 120) ms" in text
    assert ("catch_up_late: estimate 0.06 (SE 0.42, 95 % CI [-0.7632, 0.8832], n = 10) of the rest   [not recovered"
            in text)
    for setting in CARRIED:
        assert f"#   {setting} = " in text and "not estimated: from preset; " in text
    market = load_market("default", **{k: v for k, v in tomllib.loads(text).items()})
    assert market.catch_up_late == load_market("default").catch_up_late  # the preset's value, as the header says


def header_and_body(text: str) -> tuple[dict[str, object], dict[str, list[object]], list[str]]:
    """(the TOML body, the header's ``setting = value`` lines as setting -> values, the header's lines)."""
    lines = [line for line in text.splitlines() if line.startswith("#")]
    said: dict[str, list[object]] = {}
    for line in lines:
        m = re.match(r"^#   (\w+) = (\S+)", line)
        if m:
            said.setdefault(m[1], []).append(tomllib.loads(f"v = {m[2]}")["v"])
    return tomllib.loads(text), said, lines


def assert_header_says_what_the_body_writes(text: str) -> None:
    body, said, lines = header_and_body(text)
    assert set(said) == set(body)
    for setting, value in body.items():
        assert said[setting] == [value], f"{setting}: the body writes {value!r}, the header says {said[setting]}"
        for line in lines:  # notes and cross-checks naming a written setting with a number say the same number
            for number in re.findall(rf"\b{setting} (-?\d[\d.e+-]*)", line):
                assert float(number) == value, f"{setting}: the body writes {value!r}, the header: {line!r}"


def test_header_and_body_agree_on_every_written_setting_when_values_are_rounded_or_clipped() -> None:
    estimates = {"fade": Estimate(1.0213, 0.1, 27), "catch_up": Estimate(-0.0213, 0.05, 14),
                 "block_ms": Estimate(70.004, 0.3, 1594), "block_jitter_ms": Estimate(75.2, float("nan"), 1594),
                 "jump_bps_min": Estimate(-1.234, 1.4, 34), "jump_bps_max": Estimate(29.6504, 1.4, 34),
                 "flicker_share": Estimate(0.9712, 0.05, 70), "regime_calm_s": Estimate(82.2722, 82.3, 1),
                 "annual_vol": Estimate(0.463775, 0.019, 299),
                 "lag_median_ms": Estimate(653.24, 37.7, 78, 580.7, 720.1),
                 "lag_sd_ms": Estimate(306.94, 40.0, 78)}
    cal = Calibration(symbol="BTC", clock="t_exchange", start_ns=0, end_ns=1200 * 10**9, rows={"binance": 1},
                      estimates=estimates, cross_checks={}, notes=[])
    text = render(cal, "test")
    assert_header_says_what_the_body_writes(text)
    body = tomllib.loads(text)
    assert (body["hl_fade"], body["catch_up"], body["jump_bps_min"], body["flicker_share"]) == (1.0, 0.0, 0.0, 0.95)
    assert body["hl_block_jitter_ms"] == 63.0 and body["hl_block_ms"] == 70.0  # jitter kept below the block
    # a clipped value says so beside it, with the estimate it came from; the lag its bootstrap interval
    assert "#   hl_fade = 1.0   (clipped to the model's range [0, 1]: estimate 1.0213, SE 0.1, " in text
    assert "#   hl_lag_ms = 653.2   (SE 37.7, 95 % CI [580.7, 720.1], n = 78) ms" in text


def test_header_and_body_agree_on_a_calibration_of_the_default_market() -> None:
    from caerus.research.calibrate.fit import calibrate
    from tests.fixtures.research_books import offline_books

    cal = calibrate(offline_books(load_market("default", seed=5), 6.0))
    assert "lag_median_ms" in cal.estimates and "fade" in cal.estimates
    assert_header_says_what_the_body_writes(render(cal, "offline"))
    # before: the header said hl_block_jitter_ms = 14.8458 over a body of 14.85, and a note "hl_fade 0.37" over a
    # body of 0.373
