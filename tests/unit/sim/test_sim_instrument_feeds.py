"""Every emulated instrument's trade tapes (caerus.sim.core.instrument_feeds) in the driver: BTC's always kept, another
instrument's only while read, each on its own grid; and the per-instrument frames they feed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from caerus.sim.core import catalogue, frames
from caerus.sim.core.driver import KLINE_PUSH_MS, MarketDriver
from caerus.sim.core.hub import Topics
from caerus.sim.core.instrument_feeds import IDLE_S, binance_tape_topics, hl_tape_topics
from caerus.sim.core.market import BinanceQuote, MarketConfig, MarketModel
from caerus.sim.core.tape import Bar, Trade


class _Sink:
    """A subscriber that drops what it is sent (only the subscription matters here)."""

    def send(self, text: str, control: bool = False) -> None:
        pass


def _play(drv: MarketDriver, events: Any, n: int) -> None:
    for _ in range(n):
        ev = next(events)
        if isinstance(ev, BinanceQuote):
            drv._binance(ev)
        else:
            drv._hyperliquid(ev)


def test_a_tape_other_than_btcs_is_kept_only_while_read(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("caerus.sim.core.driver.time.monotonic", lambda: clock[0])
    model = MarketModel(MarketConfig(seed=5, symbols=("BTC", "ETH")))
    topics = Topics()
    drv = MarketDriver(model, topics)
    events = model.events()
    _play(drv, events, 3000)
    eth_bn = drv.binance_tape_of("ETHUSDT", read=False)
    eth_hl = drv.hl_tape_of("ETH", read=False)
    assert eth_bn is not None and eth_hl is not None
    assert drv.binance_tape.stats.count > 0 and drv.hl_tape.stats.count > 0  # BTC's: kept from the start
    assert eth_bn.stats.count == 0 and eth_hl.stats.count == 0  # nobody read ETH's: nothing recorded
    assert drv.binance_tape_of("ETHUSDT") is eth_bn and drv.hl_tape_of("ETH") is eth_hl  # a REST read keeps them
    _play(drv, events, 3000)
    kept_bn, kept_hl = eth_bn.stats.count, eth_hl.stats.count
    assert kept_bn > 0 and kept_hl > 0
    assert 1_000 < eth_bn.stats.last < 10_000  # ETH's own trades, not BTC's
    clock[0] += IDLE_S + 1  # no read and no subscriber for longer than IDLE_S: dropped
    drv._keep_tapes()
    _play(drv, events, 3000)
    assert (eth_bn.stats.count, eth_hl.stats.count) == (kept_bn, kept_hl)
    topics.add("binance:ethusdt@kline_1m", _Sink())  # type: ignore[arg-type]  # a subscription keeps it
    clock[0] += 5 * IDLE_S
    drv._keep_tapes()
    _play(drv, events, 3000)
    assert eth_bn.stats.count > kept_bn and eth_hl.stats.count == kept_hl  # only the read venue's tape
    assert drv.binance_tape_of("XRPUSDT") is None and drv.hl_tape_of("XRP") is None  # not emulated


def test_klines_go_out_every_250ms_closing_at_the_last_trade_on_the_symbols_grid() -> None:
    """ETH's trade and kline streams: klines go out on the KLINE_PUSH_MS grid (not per trade), each closing at the
    last trade of its bar before it, printed on ETH's tick (2 decimals), with ETH's symbol."""
    model = MarketModel(MarketConfig(seed=7, symbols=("BTC", "ETH")))
    topics = Topics()
    sent: list[tuple[str, dict[str, Any]]] = []
    topics.has = lambda key: key.startswith("binance:ethusdt@")  # type: ignore[method-assign]
    topics.publish = lambda key, raw: sent.append((key, json.loads(raw)))  # type: ignore[method-assign]
    drv = MarketDriver(model, topics)
    drv.binance_tape_of("ETHUSDT")
    feed = drv._bn_feeds[drv._bn_index["ETHUSDT"]]
    events = model.events()
    tick_ns = KLINE_PUSH_MS * 1_000_000
    due = tick_ns
    for _ in range(4000):  # the run loop's order: an event at a tick's time goes out before the tick
        ev = next(events)
        while due < ev.t_ns:
            drv._push_klines(feed, due)
            due += tick_ns
        drv._binance(ev) if isinstance(ev, BinanceQuote) else drv._hyperliquid(ev)
    trades = [d for k, d in sent if k == "binance:ethusdt@trade"]
    assert len(trades) > 10 and {t["s"] for t in trades} == {"ETHUSDT"}
    assert all(len(t["p"].partition(".")[2]) == 2 and 1_000 < float(t["p"]) < 10_000 for t in trades)
    last_trade: dict[str, Any] | None = None
    klines = []
    for key, data in sent:
        if key == "binance:ethusdt@trade":
            last_trade = data
        elif key == "binance:ethusdt@kline_1m":
            assert last_trade is not None and data["s"] == "ETHUSDT" and data["E"] % KLINE_PUSH_MS == 0
            if data["k"]["t"] <= last_trade["E"] <= data["k"]["T"]:
                assert data["k"]["c"] == last_trade["p"] and data["k"]["L"] == last_trade["t"]
            klines.append(data)
    assert 0 < len(klines) < len(trades)  # coalesced
    assert len(klines) <= due // tick_ns + 1  # at most one a tick (plus a bar's final state at the minute)


def test_hl_frames_name_the_coin_and_print_on_its_grid() -> None:
    doge = frames.instrument_format(catalogue.BY_NAME["DOGE"])  # szDecimals 0: sizes are whole coins
    bar = Bar(60_000_000_000, 0.33012, 0.3305, 0.3299, 0.33021, volume=1234.0, count=3)
    candle = json.loads(frames.hl_candle(bar, "1m", 1, doge))
    assert candle == {"channel": "candle", "data": {"t": 60_000, "T": 119_999, "s": "DOGE", "i": "1m",
                                                    "o": "0.33012", "c": "0.33021", "h": "0.3305", "l": "0.3299",
                                                    "v": "1234", "n": 3}}
    trade = json.loads(frames.hl_trades([Trade(9, 0, 0.33012, 150.0, True)], 0, doge))["data"][0]
    assert (trade["coin"], trade["px"], trade["sz"], trade["side"]) == ("DOGE", "0.33012", "150", "A")
    assert json.loads(frames.hl_all_mids({"BTC": "95000.5", "ETH": "3300.25"}) or "") == {
        "channel": "allMids", "data": {"mids": {"BTC": "95000.5", "ETH": "3300.25"}}}
    assert frames.hl_all_mids({}) is None


def test_hl_l2_book_of_a_coin_is_on_its_grid_with_no_empty_level() -> None:
    model = MarketModel(MarketConfig(seed=3, symbols=("BTC", "DOGE")))
    drv = MarketDriver(model, Topics())
    _play(drv, model.events(), 500)
    k = drv.hl_index_of("DOGE")
    text = drv.current("hyperliquid:l2Book:DOGE") if k in drv.blocks else None
    assert text is not None
    book = json.loads(text)["data"]
    assert book["coin"] == "DOGE" and len(book["levels"][0]) == len(book["levels"][1]) == 20
    for side in book["levels"]:
        assert all(float(lvl["sz"]) >= 1 and "." not in lvl["sz"] for lvl in side)  # whole coins, never 0
        assert all(0.1 < float(lvl["px"]) < 1 for lvl in side)


def test_tape_topics_cover_every_interval() -> None:
    bn, hl = binance_tape_topics("ETHUSDT"), hl_tape_topics("ETH")
    assert bn["kline_1M"] == "binance:ethusdt@kline_1M" and bn["aggTrade"] == "binance:ethusdt@aggTrade"
    assert hl["candle_15m"] == "hyperliquid:candle:ETH:15m" and hl["trades"] == "hyperliquid:trades:ETH"
