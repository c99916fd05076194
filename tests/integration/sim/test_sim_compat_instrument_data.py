"""Compatibility suite, every instrument's market data (issue 33 item 4): the pinned clients, unmodified except base
URL, CA and keys, read ETH's candles, trades, tickers, mark price and books from an emulator emulating BTC and ETH
(``--symbols BTC,ETH``), and get ETH's own data (ETH's range and grid), apart from BTC's. Every wait is bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.venue_sim import VenueSim
from tests.integration.sim.test_sim_compat_clients import (
    WAIT_S,
    Inbox,
    _binance_client,
    _ccxt_binance,
    _ccxt_hyperliquid,
    _run,
    https,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def two(venue_sim_factory: Callable[..., VenueSim], monkeypatch: pytest.MonkeyPatch) -> VenueSim:
    """An emulator with BTC and ETH, trusted the way the clients' docs say (env bundles)."""
    started = venue_sim_factory(args=("--symbols", "BTC,ETH"))
    for var in ("REQUESTS_CA_BUNDLE", "WEBSOCKET_CLIENT_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.setenv(var, started["ca_file"])
    return started


def _is_eth_bar(row: list[Any]) -> bool:
    t, o, h, low, c, v = row[:6]
    return t % 60_000 == 0 and low <= min(o, c) <= max(o, c) <= h and low > 1_000 and h < 10_000 and v > 0


def test_ccxt_binanceusdm_eth_ohlcv_trades_ticker_and_funding(two: VenueSim) -> None:
    async def body() -> dict[str, Any]:
        ex = _ccxt_binance(two, keys=False)
        try:
            await ex.load_markets()
            out: dict[str, Any] = {}
            # streamed (the /market kline stream): copied, since ccxt keeps updating its cache in the background
            out["streamed"] = [list(r) for r in await ex.watch_ohlcv("ETH/USDT:USDT", "1m")]
            out["fetched"] = await ex.fetch_ohlcv("ETH/USDT:USDT", "1m", limit=5)  # GET /fapi/v1/klines
            out["btc"] = [list(r) for r in await ex.watch_ohlcv("BTC/USDT:USDT", "1m")]
            out["trades"] = list(await ex.watch_trades("ETH/USDT:USDT"))
            out["recent"] = await ex.fetch_trades("ETH/USDT:USDT", limit=50)  # GET /fapi/v1/trades
            out["ticker"] = await ex.fetch_ticker("ETH/USDT:USDT")  # GET /fapi/v1/ticker/24hr
            out["funding"] = await ex.fetch_funding_rate("ETH/USDT:USDT")  # GET /fapi/v1/premiumIndex
            return out
        finally:
            await ex.close()

    out = _run(body)
    assert out["streamed"] and all(_is_eth_bar(r) for r in out["streamed"])
    assert out["fetched"] and all(_is_eth_bar(r) for r in out["fetched"])
    t, o = out["streamed"][-1][:2]
    same = [r for r in out["fetched"] if r[0] == t]
    assert not same or same[0][1] == o  # the REST bar of that minute opened where the streamed one did
    assert all(r[4] > 50_000 for r in out["btc"])  # BTC's candles are BTC's
    assert out["trades"] and all(t["symbol"] == "ETH/USDT:USDT" and 1_000 < t["price"] < 10_000
                                 for t in out["trades"] + out["recent"])
    assert out["ticker"]["symbol"] == "ETH/USDT:USDT" and 1_000 < out["ticker"]["last"] < 10_000
    assert 1_000 < out["funding"]["markPrice"] < 10_000 and out["funding"]["fundingRate"] is not None


def test_ccxt_hyperliquid_eth_ohlcv_and_trades(two: VenueSim) -> None:
    async def body() -> dict[str, Any]:
        ex = _ccxt_hyperliquid(two, None)
        try:
            await ex.load_markets()
            out: dict[str, Any] = {"trades": list(await ex.watch_trades("ETH/USDC:USDC"))}
            out["streamed"] = [list(r) for r in await ex.watch_ohlcv("ETH/USDC:USDC", "1m")]  # WS candle
            out["fetched"] = await ex.fetch_ohlcv("ETH/USDC:USDC", "1m", limit=5)  # POST /info candleSnapshot
            out["book"] = await ex.fetch_order_book("ETH/USDC:USDC")  # POST /info l2Book
            return out
        finally:
            await ex.close()

    out = _run(body)
    assert out["trades"] and all(1_000 < t["price"] < 10_000 for t in out["trades"])
    assert out["streamed"] and all(_is_eth_bar(r) for r in out["streamed"])
    assert out["fetched"] and all(_is_eth_bar(r) for r in out["fetched"])
    assert 1_000 < out["book"]["bids"][0][0] < out["book"]["asks"][0][0] < 10_000


def test_hyperliquid_sdk_eth_candles_l2book_trades_and_mids(two: VenueSim) -> None:
    from hyperliquid.info import Info

    info = Info(https(two["hyperliquid_url"]), skip_ws=False)
    try:
        inbox = Inbox()
        for sub in ({"type": "candle", "coin": "ETH", "interval": "1m"}, {"type": "l2Book", "coin": "ETH"},
                    {"type": "trades", "coin": "ETH"}, {"type": "activeAssetCtx", "coin": "ETH"}):
            info.subscribe(sub, inbox.put)  # type: ignore[arg-type]
        got = inbox.wait_for(lambda xs: {m["channel"] for m in xs} >= {"candle", "l2Book", "trades",
                                                                        "activeAssetCtx"},
                             "ETH's candle, l2Book, trades and activeAssetCtx")
        candle = next(m["data"] for m in got if m["channel"] == "candle")
        assert (candle["s"], candle["i"]) == ("ETH", "1m") and 1_000 < float(candle["c"]) < 10_000
        book = next(m["data"] for m in got if m["channel"] == "l2Book")
        assert book["coin"] == "ETH" and float(book["levels"][0][0]["px"]) < float(book["levels"][1][0]["px"])
        assert all(t["coin"] == "ETH" for m in got if m["channel"] == "trades" for t in m["data"])
        now = int(time.time() * 1000)
        deadline = time.monotonic() + WAIT_S
        while not (snap := info.candles_snapshot("ETH", "1m", now - 3_600_000, now + 60_000)) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert snap and snap[-1]["s"] == "ETH" and snap[-1]["n"] > 0
        mids = info.all_mids()
        assert float(mids["ETH"]) < 10_000 < float(mids["BTC"])
        assert 1_000 < float(info.l2_snapshot("ETH")["levels"][0][0]["px"]) < 10_000
    finally:
        info.disconnect_websocket()


def test_binance_sdk_eth_klines_stream_and_rest(two: VenueSim) -> None:
    client = _binance_client(two)

    async def body() -> tuple[list[Any], list[Any]]:
        klines: list[Any] = []
        marks: list[Any] = []
        conn = await asyncio.wait_for(client.websocket_streams.create_connection(), WAIT_S)
        try:
            (await conn.kline_candlestick_streams(symbol="ethusdt", interval="1m")).on("message", klines.append)
            (await conn.mark_price_stream(symbol="ethusdt")).on("message", marks.append)
            deadline = asyncio.get_running_loop().time() + WAIT_S
            while not (klines and marks):
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError(f"within {WAIT_S} s: {len(klines)} klines, {len(marks)} mark prices")
                await asyncio.sleep(0.1)
        finally:
            await asyncio.wait_for(conn.close_connection(close_session=True), WAIT_S)
        return klines, marks

    klines, marks = asyncio.run(body())
    assert klines[-1].s == "ETHUSDT" and 1_000 < float(klines[-1].k.c) < 10_000
    assert marks[-1].s == "ETHUSDT" and 1_000 < float(marks[-1].p) < 10_000
    rows = client.rest_api.kline_candlestick_data(symbol="ETHUSDT", interval="1m", limit=5).data()
    assert rows and all(1_000 < float(r[4]) < 10_000 for r in rows)
