"""The round trip on the stochastic default market (caerus/sim/markets/default.toml): emulate it offline for 20
minutes per seed, calibrate, and recover each setting the books identify within the tolerance stated here.
docs/research.md ("Calibration", round trip) quotes these tolerances and why each is as wide as it is."""

from __future__ import annotations

import pytest

from caerus.research.calibrate import market_toml
from caerus.research.calibrate.fit import FADE_HY_MAX, Calibration, calibrate
from caerus.sim.core.market_config import load_market
from tests.fixtures.research_books import offline_books

# long computations (training, calibration round trips, whole pipelines) over module fixtures: the fast tier
# leaves the whole module out
pytestmark = pytest.mark.slow

MINUTES = 20.0
TRUE = load_market("default")
#: setting -> (low, high) the estimate must fall in; the reason for each width in the comment
BOUNDS: dict[str, tuple[float, float]] = {
    "hl_block_ms": (TRUE.hl_block_ms - 2, TRUE.hl_block_ms + 2),
    "hl_block_jitter_ms": (TRUE.hl_block_jitter_ms - 2, TRUE.hl_block_jitter_ms + 2),
    # replaced flickers whose middle move is under the threshold are lost: biased low by ~0.03
    "flicker_share": (TRUE.flicker_share - 0.1, TRUE.flicker_share + 0.1),
    # direct pairs with the false pairs (near-miss placebo) and replacement taken out: 474/691/383 ms for 400 over
    # seeds 1-3 (false pairs the placebo leaves, ~10 % on the pairs' mean, and a replacement hazard ~0.09/s high).
    # Seed 2 since the quote-arrival refit (issue 46) is a path with long volatile spells (141 s), where the
    # replacement correction, a difference of two rates, is largest: 691, SE 60 (seeds 4-6: 512/434/403)
    "flicker_ms": (TRUE.flicker_ms * 0.9, TRUE.flicker_ms * 1.8),
    "regime_vol_mult": (TRUE.regime_vol_mult - 0.3, TRUE.regime_vol_mult + 0.3),
    # windows straddling a switch mix the two rates: biased towards 1
    "regime_jump_mult": (1.8, TRUE.regime_jump_mult + 0.5),
    # 20 minutes hold about 4 calm/volatile cycles: a factor 3 (SE ~50 %)
    "regime_calm_s": (TRUE.regime_calm_s / 3, TRUE.regime_calm_s * 3),
    "regime_volatile_s": (TRUE.regime_volatile_s / 3, TRUE.regime_volatile_s * 3),
    "jumps_per_min": (TRUE.jumps_per_min * 0.7, TRUE.jumps_per_min * 1.3),
    "jump_bps_min": (TRUE.jump_bps_min - 2, TRUE.jump_bps_min + 2),
    "jump_bps_max": (TRUE.jump_bps_max - 3, TRUE.jump_bps_max + 3),
    "annual_vol": (TRUE.annual_vol * 0.8, TRUE.annual_vol * 1.2),
    # 50-100 answered moves (lag_law): SE 38-48 ms, 653/676/605 over seeds 1-3 (test_roundtrip_lag.py checks the
    # intervals themselves)
    "hl_lag_ms": (TRUE.hl_lag_ms - 100, TRUE.hl_lag_ms + 100),
    "hl_lag_sd_ms": (TRUE.hl_lag_sd_ms - 100, TRUE.hl_lag_sd_ms + 100),
    "catch_up": (TRUE.catch_up - 0.15, TRUE.catch_up + 0.15),
    # autocovariance at 10-180 s of one 20-minute path with a 60 s half-life: 75/139/30 s over seeds 1-3 (the fit's
    # own SE, 1-2 s, ignores that the path is one draw): a factor 2.5
    "hl_basis_half_life_s": (TRUE.hl_basis_half_life_s / 2.5, TRUE.hl_basis_half_life_s * 2.5),
    # the spread at the last update before each move's response, one 20-minute path: 0.91/0.83/0.46 over seeds
    # 1-3 (seeds 4-6: 0.81/0.69/0.86). The fit's SE (0.02-0.03) understates the spread across paths: before the
    # quote-arrival refit (issue 46) seeds 4 and 8 read 0.44 and 0.45 too, seeds 1-3 happened to sit above 0.6
    "hl_fade": (TRUE.hl_fade - 0.4, min(1.0, TRUE.hl_fade + 0.2)),
}


@pytest.fixture(scope="module", params=[1, 2, 3])
def calibrated(request: pytest.FixtureRequest) -> Calibration:
    return calibrate(offline_books(load_market("default", seed=request.param), MINUTES))


def settings_of(cal: Calibration) -> dict[str, float]:
    return {market_toml.PARAMETERS[k][0]: e.value for k, e in cal.estimates.items()}


@pytest.mark.parametrize("setting", sorted(BOUNDS))
def test_each_identified_setting_is_recovered(calibrated: Calibration, setting: str) -> None:
    low, high = BOUNDS[setting]
    found = settings_of(calibrated).get(setting)
    assert found is not None, f"{setting} not estimated: {calibrated.notes}"
    assert low <= found <= high, f"{setting}: found {found:.4g}, true {getattr(TRUE, setting)}, bounds {low}..{high}"


def test_the_toml_loads_as_a_stochastic_market_with_every_setting(calibrated: Calibration) -> None:
    from caerus.sim.core.market_config import parse_market

    text = market_toml.render(calibrated, "offline", known=TRUE.__dict__)
    settings = parse_market(text)
    assert set(BOUNDS) <= set(settings)
    # the settings the round trip does not recover are carried over from the preset, each saying so and why
    for setting in market_toml.CARRIED:
        assert settings[setting] == getattr(TRUE, setting)
        assert f"  {setting} = {getattr(TRUE, setting)}   not estimated: from preset; " in text
    fitted = next(line for line in text.splitlines() if line.startswith("# fitted from these books: "))
    assert "flicker_ms" in fitted and "catch_up_late" not in fitted
    cfg = load_market("default", **settings)
    assert not cfg.fixed_follower and cfg.flicker_share > 0 and cfg.regimes_on


def test_the_lead_lag_peaks_are_not_reported_on_a_fading_market(calibrated: Calibration) -> None:
    fade = calibrated.estimates["fade"]
    assert fade.value > 0.4 and fade.value - 2.0 * fade.se > FADE_HY_MAX  # fit.calibrate's rule for a fading market
    assert "hy_peak_ms" not in calibrated.cross_checks and "cc_peak_ms" not in calibrated.cross_checks
    assert any("not a lag" in note for note in calibrated.notes)
