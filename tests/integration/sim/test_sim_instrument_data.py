"""Every emulated instrument has the market data BTC has (issue 33 item 4), over real TLS WebSockets and REST on the
emulator's ports: ETH's trades, klines, tickers, mark price (Binance) and trades, candles, l2Book, allMids and
activeAssetCtx (Hyperliquid) come from ETH's own market, on ETH's grid, moving apart from BTC's, and each family
agrees with itself (a kline / candle closes at the trade it follows; a REST bar at the last REST trade of its
minute)."""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from caerus.sim.core.market import MarketConfig
from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, open_ws, recv_json, run_with
from tests.integration.sim.test_sim_rest import get, http, post

pytestmark = pytest.mark.integration

WAIT_S = 20.0  # bound for the frames a test waits for; never reached when the emulator is healthy


def _cfg(tmp_path: Path) -> Any:
    return config(tmp_path, market=MarketConfig(symbols=("BTC", "ETH")))


async def _collect(ws: Any, done: Any) -> list[Any]:
    """Frames (parsed) until ``done(frames)`` holds, bounded by WAIT_S."""
    out: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while not done(out) and time.monotonic() < deadline:
        out.append(await recv_json(ws, max(0.1, deadline - time.monotonic())))
    return out


def _data(frames: list[Any], event: str, symbol: str) -> list[dict[str, Any]]:
    return [f for f in frames if isinstance(f, dict) and f.get("e") == event and f.get("s") == symbol]


def test_binance_eth_trades_klines_tickers_and_mark_price(tmp_path: Path) -> None:
    streams = ["ethusdt@aggTrade", "ethusdt@kline_1m", "ethusdt@markPrice@1s", "ethusdt@ticker",
               "ethusdt@miniTicker", "btcusdt@aggTrade"]

    def done(fs: list[Any]) -> bool:
        return (len(_data(fs, "aggTrade", "ETHUSDT")) >= 5 and len(_data(fs, "aggTrade", "BTCUSDT")) >= 5
                and len(_data(fs, "kline", "ETHUSDT")) >= 5
                and bool(_data(fs, "markPriceUpdate", "ETHUSDT")) and bool(_data(fs, "24hrTicker", "ETHUSDT"))
                and bool(_data(fs, "24hrMiniTicker", "ETHUSDT")))

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        async with open_ws(emu, "binance", "/market/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": streams, "id": 1}))
            fs = await _collect(ws, done)
            rest: dict[str, Any] = {}
            for name, path in (("premium", "/fapi/v1/premiumIndex?symbol=ETHUSDT"),
                               ("ticker", "/fapi/v1/ticker/24hr?symbol=ETHUSDT"),
                               ("doge", "/fapi/v1/klines?symbol=DOGEUSDT&interval=1m"),
                               ("klines", "/fapi/v1/klines?symbol=ETHUSDT&interval=1m&limit=2"),
                               ("trades", "/fapi/v1/trades?symbol=ETHUSDT&limit=1000"),
                               ("agg", "/fapi/v1/aggTrades?symbol=ETHUSDT&limit=1000")):
                rest[name] = json.loads((await http(emu, "binance", ctx, get(path)))[1])
            bar = rest["klines"][-1]
            # a streamed kline of the REST bar's minute holding at least its trades (klines go out every 250 ms)
            fs += await _collect(ws, lambda more: any(f.get("e") == "kline" and f["k"]["t"] == bar[0]
                                                     and f["k"]["n"] >= bar[8] for f in fs + more))
        return {"frames": fs, **rest}

    out = run_with(_cfg(tmp_path), body)
    fs = out["frames"]
    eth, btc = _data(fs, "aggTrade", "ETHUSDT"), _data(fs, "aggTrade", "BTCUSDT")
    assert len(eth) >= 5 and len(btc) >= 5
    assert all(1_000 < float(t["p"]) < 10_000 and len(t["p"].partition(".")[2]) == 2 for t in eth)  # ETH's grid
    assert all(float(t["p"]) > 50_000 for t in btc)
    assert [t["a"] for t in eth] == sorted({t["a"] for t in eth})  # ETH's own id sequence, in order
    assert {t["T"] for t in eth} != {t["T"] for t in btc}  # trades at ETH's own times
    last: dict[str, Any] | None = None
    bars = 0
    for f in fs:  # each kline event follows its trades and closes at the last one of its minute received
        if f.get("e") == "aggTrade" and f.get("s") == "ETHUSDT":
            last = f
        elif f.get("e") == "kline":
            k = f["k"]
            assert f["s"] == "ETHUSDT" and last is not None
            if k["t"] <= last["E"] <= k["T"]:
                assert k["c"] == last["p"] and k["L"] == last["a"]
            assert float(k["l"]) <= float(k["c"]) <= float(k["h"])
            bars += 1
    assert bars >= 5
    mark = _data(fs, "markPriceUpdate", "ETHUSDT")[-1]
    assert 1_000 < float(mark["p"]) < 10_000
    ticker = _data(fs, "24hrTicker", "ETHUSDT")[-1]
    assert ticker["n"] > 0 and float(ticker["l"]) <= float(ticker["c"]) <= float(ticker["h"]) < 10_000
    assert out["premium"]["symbol"] == "ETHUSDT" and 1_000 < float(out["premium"]["markPrice"]) < 10_000
    assert out["ticker"]["symbol"] == "ETHUSDT" and out["ticker"]["count"] > 0
    assert out["doge"]["code"] == -1121 and "DOGEUSDT is listed but not emulated" in out["doge"]["msg"]
    bar = out["klines"][-1]  # the REST bar is the streamed bar of its minute, pushed with at least its trades
    k = next(f["k"] for f in fs if f.get("e") == "kline" and f["k"]["t"] == bar[0] and f["k"]["n"] >= bar[8])
    assert [k["o"], k["T"]] == [bar[1], bar[6]] and float(k["v"]) >= float(bar[5])
    assert float(k["h"]) >= float(bar[2]) and float(k["l"]) <= float(bar[3])
    streamed = {t["a"]: t["p"] for t in eth}
    rest_trades = {t["id"]: t["price"] for t in out["trades"]}
    common = streamed.keys() & rest_trades.keys()
    assert common and all(streamed[i] == rest_trades[i] for i in common)  # the same tape on both
    rest_agg = {t["a"]: t["p"] for t in out["agg"]}
    both = streamed.keys() & rest_agg.keys()
    assert both and all(streamed[i] == rest_agg[i] for i in both)  # aggTrades REST: the stream's aggregates


def test_hyperliquid_eth_trades_candles_l2book_all_mids_and_asset_ctx(tmp_path: Path) -> None:
    subs = [{"type": "trades", "coin": "ETH"}, {"type": "candle", "coin": "ETH", "interval": "1m"},
            {"type": "l2Book", "coin": "ETH"}, {"type": "activeAssetCtx", "coin": "ETH"}, {"type": "allMids"}]

    def done(fs: list[Any]) -> bool:
        trades = sum(len(f["data"]) for f in fs if f.get("channel") == "trades")
        return trades >= 5 and {f.get("channel") for f in fs} >= {"candle", "l2Book", "activeAssetCtx", "allMids"}

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            for sub in subs:
                await ws.send(json.dumps({"method": "subscribe", "subscription": sub}))
            fs = await _collect(ws, done)
        req = {"type": "candleSnapshot", "req": {"coin": "ETH", "interval": "1m", "startTime": 0}}
        candles = json.loads((await http(emu, "hyperliquid", ctx, post("/info", json.dumps(req).encode())))[1])
        return {"frames": fs, "candles": candles}

    out = run_with(_cfg(tmp_path), body)
    fs = out["frames"]
    acks = [f["data"]["subscription"]["type"] for f in fs if f.get("channel") == "subscriptionResponse"]
    assert sorted(acks) == sorted(s["type"] for s in subs)
    trades = [t for f in fs if f.get("channel") == "trades" for t in f["data"]]
    assert len(trades) >= 5 and {t["coin"] for t in trades} == {"ETH"}
    assert all(1_000 < float(t["px"]) < 10_000 for t in trades)
    last: dict[str, Any] | None = None
    candles = 0
    for f in fs:
        if f.get("channel") == "trades":
            last = f["data"][-1]
        elif f.get("channel") == "candle" and last is not None:  # sent after each trade: closes at its price
            c = f["data"]
            assert (c["s"], c["i"]) == ("ETH", "1m") and c["c"] == last["px"] and c["T"] == c["t"] + 59_999
            candles += 1
    assert candles >= 4
    book = next(f["data"] for f in fs if f.get("channel") == "l2Book")
    assert book["coin"] == "ETH" and len(book["levels"][0]) == 20
    assert all(1_000 < float(lvl["px"]) < 10_000 for side in book["levels"] for lvl in side)
    mids = [f["data"]["mids"] for f in fs if f.get("channel") == "allMids"]
    assert set(mids[-1]) == {"BTC", "ETH"} and float(mids[-1]["ETH"]) < 10_000 < float(mids[-1]["BTC"])
    ctx = next(f["data"] for f in fs if f.get("channel") == "activeAssetCtx")
    assert ctx["coin"] == "ETH" and 1_000 < float(ctx["ctx"]["markPx"]) < 10_000
    snap = out["candles"]
    assert snap and snap[-1]["s"] == "ETH" and snap[-1]["n"] > 0 and 1_000 < float(snap[-1]["c"]) < 10_000
