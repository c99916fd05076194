"""Per-instrument frames, driver topics and order fills (no sockets): each instrument is named, printed on its own
grid, published on its own topic, and orders fill against that instrument's book."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account

from caerus.sim import orders
from caerus.sim.core import catalogue, frames
from caerus.sim.core.driver import MarketDriver, bbo_topic, book_ticker_topic
from caerus.sim.core.hub import Topics
from caerus.sim.core.market import BinanceQuote, HlBlock, HlLevel, MarketConfig, MarketModel
from caerus.venues.binance.signing import BinanceHmacSigner, sign_params
from caerus.venues.hyperliquid.signing import order_action, order_wire, sign_l1_action_reference
from tests.kit.sim_desk import API_KEY, SECRET, binance_order

HL_KEY = "0x" + "22" * 32


def test_frames_name_the_instrument_and_print_its_grid() -> None:
    eth = frames.instrument_format(catalogue.BY_NAME["ETH"])
    q = BinanceQuote(t_ns=5_000_000, update_id=7, bid=3300.1, bid_qty=1.5, ask=3300.12, ask_qty=0.25, symbol=1)
    m = json.loads(frames.binance_book_ticker(q, 0, eth))
    assert (m["s"], m["b"], m["B"], m["a"], m["A"]) == ("ETHUSDT", "3300.10", "1.500", "3300.12", "0.250")
    pepe = frames.instrument_format(catalogue.BY_NAME["kPEPE"])
    q = BinanceQuote(t_ns=5_000_000, update_id=7, bid=0.018, bid_qty=12345.0, ask=0.0180001, ask_qty=2.0)
    m = json.loads(frames.binance_book_ticker(q, 0, pepe))
    assert (m["s"], m["b"], m["B"], m["a"]) == ("1000PEPEUSDT", "0.0180000", "12345", "0.0180001")
    doge = frames.instrument_format(catalogue.BY_NAME["DOGE"])  # szDecimals 0: up to 6 price decimals
    block = HlBlock(t_ns=70_000_000, index=1, bid=HlLevel(0.33012, 30.0, 2), ask=HlLevel(0.33013, 1200.0, 1),
                    changed=True, symbol=2)
    d = json.loads(frames.hl_bbo(block, 0, doge))["data"]
    assert d["coin"] == "DOGE"
    assert d["bbo"] == [{"px": "0.33012", "sz": "30", "n": 2}, {"px": "0.33013", "sz": "1200", "n": 1}]
    assert frames.hl_num(30.0, 0) == "30" and frames.hl_num(95000.0, 1) == "95000.0"
    btc = HlBlock(t_ns=70_000_000, index=1, bid=HlLevel(95000.0, 0.5, 3), ask=None, changed=True)
    assert frames.hl_bbo(btc, 0) == frames.hl_bbo(btc, 0, frames.instrument_format(catalogue.BTC))


class _Sink:
    """A subscriber stand-in: collects what the topics send it."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    def send(self, text: str, control: bool = False) -> None:
        self.frames.append(text)


def test_driver_publishes_each_instrument_on_its_topic_and_feeds_its_book() -> None:
    symbols = ("BTC", "ETH", "DOGE")
    model = MarketModel(MarketConfig(seed=3, symbols=symbols))
    topics = Topics()
    sinks = {}
    for name in symbols:
        inst = catalogue.BY_NAME[name]
        assert inst.binance_symbol is not None
        for key in (book_ticker_topic(inst.binance_symbol), bbo_topic(name)):
            sinks[key] = _Sink()
            topics.add(key, sinks[key])  # type: ignore[arg-type]
    books: list[tuple[str, str]] = []

    def sink(venue: str, bid_px: float, bid_qty: float, ask_px: float, ask_qty: float, *, symbol: str = "BTC",
             mark: float | None = None) -> None:
        # the instrument's mark (caerus.sim.core.marks) comes along
        assert mark is not None and bid_px <= mark <= ask_px
        books.append((venue, symbol))

    drv = MarketDriver(model, topics, sink)
    assert drv.current(bbo_topic("ETH")) is None  # no block yet
    for ev in itertools.islice(model.events(), 3000):
        assert not drv.primed.is_set() or drv.quotes
        if isinstance(ev, BinanceQuote):
            drv._binance(ev)
        else:
            drv._hyperliquid(ev)
    assert drv.primed.is_set()
    assert set(books) == {(v, n) for v in ("binance", "hyperliquid") for n in symbols}
    for name in symbols:
        inst = catalogue.BY_NAME[name]
        assert inst.binance_symbol is not None
        bn = [json.loads(f) for f in sinks[book_ticker_topic(inst.binance_symbol)].frames]
        hl = [json.loads(f) for f in sinks[bbo_topic(name)].frames]
        assert len(bn) > 100 and len(hl) > 10
        assert {m["s"] for m in bn} == {inst.binance_symbol}
        assert all(len(m["b"].partition(".")[2]) == inst.price_decimals for m in bn)
        assert all(b["u"] > a["u"] for a, b in itertools.pairwise(bn))
        assert {m["data"]["coin"] for m in hl} == {name}
        current = drv.current(bbo_topic(name))
        assert current is not None and json.loads(current)["data"]["coin"] == name
    assert drv.last_quote is not None and drv.last_quote.symbol == 0  # the BTC-only streams read BTC's
    assert drv.current(bbo_topic("SOL")) is None  # listed, not emulated


@pytest.fixture
def desk() -> Iterator[None]:
    orders.reset()
    orders.configure_test_credentials(binance_api_key=API_KEY, binance_hmac_secret=SECRET,
                                      hyperliquid_address=Account.from_key(HL_KEY).address)
    orders.update_book("binance", 99_990.0, 5.0, 100_000.0, 5.0)  # BTC, as callers always passed it
    orders.update_book("binance", 3_300.00, 2.0, 3_300.05, 0.5, symbol="ETH")
    orders.update_book("hyperliquid", 99_990.0, 5.0, 100_000.0, 5.0)
    orders.update_book("hyperliquid", 3_299.9, 2.0, 3_300.1, 0.4, symbol="ETH")
    yield
    orders.reset()


def _binance(now: int, **overrides: Any) -> dict[str, Any]:
    return binance_order(now, "ETHUSDT", "3400.00", "1.000", overrides)


@pytest.mark.usefixtures("desk")
def test_a_binance_order_fills_against_its_own_instruments_book() -> None:
    now = time.time_ns() // 1_000_000
    r = orders.binance_ws_api_response(_binance(now), now_ms=now)["result"]
    assert (r["symbol"], r["status"], r["executedQty"], r["avgPrice"]) == ("ETHUSDT", "EXPIRED", "0.500", "3300.05")
    assert orders.position("binance", "ETH") == (0.5, 3300.05)
    assert orders.position("binance") == (0.0, 0.0)  # BTC untouched
    r = orders.binance_ws_api_response(_binance(now, price="3300.04"), now_ms=now)["result"]
    assert r["status"] == "EXPIRED" and r["executedQty"] == "0.000"  # below ETH's ask (BTC's is far above)
    # listed but not emulated in this session: no book, nothing fills (as before the first book)
    sol = orders.binance_ws_api_response(_binance(now, symbol="SOLUSDT", price="200.00", quantity="1"), now_ms=now)
    assert sol["status"] == 200 and sol["result"]["status"] == "EXPIRED" and sol["result"]["executedQty"] == "0"
    tick = orders.binance_ws_api_response(_binance(now, price="3400.001"), now_ms=now)
    assert tick["error"]["code"] == -4014  # ETH's tick (0.01), not BTC's
    events = orders.drain_events("binance")
    account = [e["a"]["P"][0] for e in events if e["e"] == "ACCOUNT_UPDATE"]
    assert account[0]["s"] == "ETHUSDT" and account[0]["pa"] == "0.500"
    positions = orders.binance_ws_api_response(
        {"id": 2, "method": "v2/account.position",
         "params": sign_params({"apiKey": API_KEY, "symbol": "ETHUSDT", "timestamp": now}, BinanceHmacSigner(SECRET))},
        now_ms=now)["result"]
    assert positions[0]["symbol"] == "ETHUSDT" and positions[0]["positionAmt"] == "0.500"


@pytest.mark.usefixtures("desk")
def test_a_hyperliquid_order_fills_against_its_own_coins_book() -> None:
    now = time.time_ns() // 1_000_000
    eth = catalogue.BY_NAME["ETH"].hl_asset
    assert eth == 1
    action = order_action([order_wire(eth, True, 3_400.0, 1.0, tif="Ioc")])
    sig = sign_l1_action_reference(HL_KEY, action, None, now, is_mainnet=False)
    answer = orders.hyperliquid_action({"action": action, "nonce": now, "signature": sig}, now_ms=now)
    assert isinstance(answer, dict)
    status = answer["response"]["data"]["statuses"][0]
    assert status["filled"]["totalSz"] == "0.4" and status["filled"]["avgPx"] == "3300.1", answer
    assert orders.position("hyperliquid", "ETH") == (0.4, 3300.1)
    state = orders.hyperliquid_clearinghouse_state(now)
    assert [p["position"]["coin"] for p in state["assetPositions"]] == ["ETH"]
    fills = [e for e in orders.drain_events("hyperliquid") if e["channel"] == "userFills"]
    assert fills[0]["data"]["fills"][0]["coin"] == "ETH" and fills[0]["data"]["fills"][0]["px"] == "3300.1"
