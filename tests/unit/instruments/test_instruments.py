"""The instrument list: --symbols parsing, joining the venues' listings, the session file, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from caerus import instruments
from caerus.instruments import DEFAULT, InstrumentError, InstrumentSet, parse_symbols
from caerus.session.instruments import join


def exchange_info(*symbols: str, status: str = "TRADING") -> dict:
    return {"symbols": [
        {"symbol": s, "contractType": "PERPETUAL", "status": status, "filters": [
            {"filterType": "PRICE_FILTER", "tickSize": "0.10"}, {"filterType": "LOT_SIZE", "stepSize": "0.001",
                                                                 "minQty": "0.001"},
            {"filterType": "MIN_NOTIONAL", "notional": "100"}]} for s in symbols]}


def meta(*coins: str, delisted: tuple[str, ...] = ()) -> dict:
    return {"universe": [{"name": c, "szDecimals": 4, **({"isDelisted": True} if c in delisted else {})}
                         for c in coins]}


def test_symbols_map_to_both_venues_names() -> None:
    reqs = parse_symbols("btc, ETH,PEPE=1000pepeusdt/kPEPE")
    assert [(r.name, r.binance_symbol, r.hl_coin) for r in reqs] == [
        ("BTC", "BTCUSDT", "BTC"), ("ETH", "ETHUSDT", "ETH"), ("PEPE", "1000PEPEUSDT", "kPEPE")]


@pytest.mark.parametrize(("text", "why"), [("BTC,,ETH", "empty"), ("BTC,btc", "twice"), ("X=Y", "BINANCESYMBOL"),
                                           ("B-T", "letters")])
def test_bad_symbol_lists_are_refused_naming_the_entry(text: str, why: str) -> None:
    with pytest.raises(InstrumentError, match=why):
        parse_symbols(text)


def test_join_gives_ids_in_list_order_with_each_venues_rules() -> None:
    insts = join(parse_symbols("ETH,BTC"), exchange_info("BTCUSDT", "ETHUSDT"), meta("BTC", "SOL", "ETH"))
    assert [(i.id, i.name, i.hl_asset, i.sz_decimals) for i in insts] == [(0, "ETH", 2, 4), (1, "BTC", 0, 4)]
    assert insts[0].tick_size == 0.1 and insts[0].price_decimals == 1 and insts[0].qty_decimals == 3
    assert insts[0].min_notional == 100.0 and insts[0].hl_max_decimals == 2


def test_unlisted_symbols_are_all_named_with_the_venue_that_lacks_them() -> None:
    with pytest.raises(InstrumentError) as err:
        join(parse_symbols("BTC,FOO,PURR,OLD"), exchange_info("BTCUSDT", "OLDUSDT", "PURRUSDT"),
             meta("BTC", "PURR", "OLD", delisted=("OLD",)))
    text = str(err.value)
    assert "FOO: Binance lists no trading perpetual FOOUSDT" in text and "FOO: Hyperliquid" in text
    assert "OLD: Hyperliquid lists no perpetual OLD" in text and "PURR" not in text.replace("PURR:", "")
    with pytest.raises(InstrumentError, match="BTC: Binance"):
        join(parse_symbols("BTC"), exchange_info("BTCUSDT", status="SETTLING"), meta("BTC"))


def test_a_listing_with_a_broken_filter_is_refused_not_guessed() -> None:
    info = exchange_info("BTCUSDT")
    info["symbols"][0]["filters"][0]["tickSize"] = "0"
    with pytest.raises(InstrumentError, match="BTCUSDT: tickSize"):
        join(parse_symbols("BTC"), info, meta("BTC"))


def test_the_session_file_round_trips_and_a_bad_one_names_itself(tmp_path: Path) -> None:
    insts = join(parse_symbols("BTC,ETH"), exchange_info("BTCUSDT", "ETHUSDT"), meta("BTC", "ETH"))
    path = instruments.save(insts, tmp_path / instruments.FILE_NAME)
    assert instruments.load(path) == insts
    assert instruments.load(None) == DEFAULT and DEFAULT[0].name == "BTC"
    path.write_text('{"format": 1, "instruments": [{"id": 0}]}')
    with pytest.raises(InstrumentError, match=str(path)):
        instruments.load(path)
    with pytest.raises(InstrumentError, match="no instruments"):
        InstrumentSet([])
