"""The emulated venues' listings: the catalogue, exchangeInfo, meta and the order desk's tables agree."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from caerus.sim import orders
from caerus.sim.binance.rest import exchange_info
from caerus.sim.core import catalogue
from caerus.sim.core.catalogue import LISTED, ListedInstrument, by_name
from caerus.sim.hyperliquid.rest import meta


def test_btc_is_first_with_the_values_the_btc_only_emulator_used() -> None:
    btc = LISTED[0]
    assert btc == ListedInstrument("BTC", "BTCUSDT", 95_000.0, Decimal("0.1"), Decimal("0.001"), Decimal("100"),
                                   Decimal("1000"), 5, 0)


def test_at_least_64_perpetuals_listed_on_both_venues_with_sane_rules() -> None:
    both = [i for i in LISTED if i.binance_symbol is not None and i.hl_asset is not None]
    assert len(both) >= 64
    for name in ("BTC", "ETH", "SOL", "XRP", "DOGE", "BNB", "ADA", "AVAX", "LINK", "DOT", "LTC", "BCH"):
        assert name in {i.name for i in both}
    assert len({i.name for i in LISTED}) == len(LISTED)
    assert len({i.binance_symbol for i in LISTED if i.binance_symbol}) == len(catalogue.BINANCE)
    for i in LISTED:
        assert i.start_price > 0 and i.tick > 0 and i.step > 0 and i.min_notional > 0 and i.max_qty > i.step
        assert 0 <= i.sz_decimals <= 6
        # a tick of the right magnitude: between 1e-6 and 1e-3 of the price
        assert 1e-6 <= float(i.tick) / i.start_price <= 1e-3, i.name
        # one Hyperliquid size unit is worth less than a few dollars at the start price
        assert 10.0**-i.sz_decimals * i.start_price < 5.0, i.name


def test_hyperliquid_assets_are_the_meta_positions() -> None:
    assets = [i.hl_asset for i in catalogue.HYPERLIQUID]
    assert assets == list(range(len(assets)))
    assert catalogue.HYPERLIQUID[0].name == "BTC"


def test_one_instrument_listed_on_each_venue_only() -> None:
    binance_only = [i for i in LISTED if i.hl_asset is None]
    hl_only = [i for i in LISTED if i.binance_symbol is None]
    assert [i.binance_symbol for i in binance_only] == ["BTCDOMUSDT"]
    assert [i.name for i in hl_only] == ["PURR"]
    assert "BTCDOM" not in {u["name"] for u in meta()["universe"]}
    assert not any(s["baseAsset"] == "PURR" for s in exchange_info()["symbols"])


def test_by_name_keeps_order_and_names_every_unknown() -> None:
    assert [i.name for i in by_name(["ETH", "BTC"])] == ["ETH", "BTC"]
    with pytest.raises(ValueError, match=r"'FOO'.*'BAR'"):
        by_name(["BTC", "FOO", "BAR"])


def test_exchange_info_lists_every_binance_symbol_with_its_filters() -> None:
    symbols = {s["symbol"]: s for s in exchange_info()["symbols"]}
    assert list(symbols) == list(catalogue.BINANCE)
    for sym, inst in catalogue.BINANCE.items():
        s = symbols[sym]
        assert s["contractType"] == "PERPETUAL" and s["status"] == "TRADING"
        f = {x["filterType"]: x for x in s["filters"]}
        assert Decimal(f["PRICE_FILTER"]["tickSize"]) == inst.tick
        assert Decimal(f["LOT_SIZE"]["stepSize"]) == inst.step == Decimal(f["LOT_SIZE"]["minQty"])
        assert Decimal(f["LOT_SIZE"]["maxQty"]) == inst.max_qty
        assert Decimal(f["MIN_NOTIONAL"]["notional"]) == inst.min_notional
        assert s["pricePrecision"] == max(0, -int(inst.tick.normalize().as_tuple().exponent))
        assert s["quantityPrecision"] == max(0, -int(inst.step.normalize().as_tuple().exponent))
    btc = {x["filterType"]: x for x in symbols["BTCUSDT"]["filters"]}
    assert (btc["PRICE_FILTER"]["tickSize"], btc["LOT_SIZE"]["stepSize"], btc["LOT_SIZE"]["maxQty"],
            btc["MIN_NOTIONAL"]["notional"]) == ("0.1", "0.001", "1000", "100")


def test_meta_lists_every_coin_in_asset_order() -> None:
    universe = meta()["universe"]
    assert [u["name"] for u in universe] == [i.name for i in catalogue.HYPERLIQUID]
    assert [u["szDecimals"] for u in universe] == [i.sz_decimals for i in catalogue.HYPERLIQUID]
    assert universe[0] == {"name": "BTC", "szDecimals": 5, "maxLeverage": 40, "marginTableId": 40}


def test_order_desk_tables_come_from_the_catalogue() -> None:
    assert set(orders.BINANCE_SYMBOLS) == set(catalogue.BINANCE)
    assert orders.BINANCE_SYMBOLS["BTCUSDT"]["tick"] == Decimal("0.1")
    assert orders.BINANCE_SYMBOLS["ETHUSDT"]["name"] == "ETH"
    assert {a: v["coin"] for a, v in orders.HL_ASSETS.items()} == {i.hl_asset: i.name for i in catalogue.HYPERLIQUID}
    assert orders.HL_ASSETS[0] == {"coin": "BTC", "sz_decimals": 5}


def test_start_prices_are_valid_on_both_grids() -> None:
    for i in LISTED:
        assert math.isfinite(i.start_price)
        assert i.price_decimals == max(0, -int(i.tick.normalize().as_tuple().exponent))
        assert i.hl_max_decimals == max(0, 6 - i.sz_decimals)
