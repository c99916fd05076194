"""The venues' price bands as pure rules (caerus.sim.core.price_band): where each bound falls and what it says."""

from __future__ import annotations

from decimal import Decimal

from caerus.sim.binance.rest import exchange_info
from caerus.sim.core import price_band


def test_binance_bounds_are_the_multipliers_of_the_mark_on_the_tick() -> None:
    tick = Decimal("0.01")
    assert price_band.binance_refusal(Decimal("3465.01"), 3300.0, tick) == (
        -4016, "Limit price can't be higher than 3465.00.")
    assert price_band.binance_refusal(Decimal("3465.00"), 3300.0, tick) is None
    assert price_band.binance_refusal(Decimal("3134.99"), 3300.0, tick) == (
        -4024, "Limit price can't be lower than 3135.00.")
    assert price_band.binance_refusal(Decimal("3135.00"), 3300.0, tick) is None
    assert price_band.binance_refusal(Decimal("1"), None, tick) is None  # no market yet: nothing to measure


def test_exchange_info_lists_the_band_the_desk_applies() -> None:
    filters = {f["filterType"]: f for f in exchange_info()["symbols"][0]["filters"]}
    assert Decimal(filters["PERCENT_PRICE"]["multiplierUp"]) == price_band.BINANCE_MULTIPLIER_UP
    assert Decimal(filters["PERCENT_PRICE"]["multiplierDown"]) == price_band.BINANCE_MULTIPLIER_DOWN


def test_hyperliquid_band_is_80_percent_either_way() -> None:
    assert price_band.hyperliquid_refusal(Decimal("180.01"), 100.0) == price_band.HL_BAND_ERROR
    assert price_band.hyperliquid_refusal(Decimal("180"), 100.0) is None
    assert price_band.hyperliquid_refusal(Decimal("19.99"), 100.0) == price_band.HL_BAND_ERROR
    assert price_band.hyperliquid_refusal(Decimal("20"), 100.0) is None
    assert price_band.hyperliquid_refusal(Decimal("1"), None) is None
