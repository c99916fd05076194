"""REST on the venue ports (caerus.sim.core.http, binance_rest, hyperliquid_rest) and the stream additions of issue 13:
documented shapes and errors, a bounded HTTP boundary that answers any bytes and keeps serving, subscriptions that
are served or refused (never acknowledged and left silent), ``SET_PROPERTY combined`` and the private route."""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from caerus.sim import orders
from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, open_ws, recv_for, recv_json, run_with

pytestmark = pytest.mark.integration


async def http(emu: VenueEmulator, venue: str, ctx: ssl.SSLContext, raw: bytes) -> tuple[int, str]:
    """Send ``raw`` (a whole request, or any bytes) over TLS; (status, body) of the answer, read to EOF."""
    url = urlsplit(emu.info[f"{venue}_url"])
    reader, writer = await asyncio.wait_for(asyncio.open_connection(url.hostname, url.port, ssl=ctx), 10)
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 10)  # the server closes after one answer
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


def get(path: str, headers: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()


def post(path: str, body: bytes, headers: str = "") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body


def test_binance_rest_shapes_and_errors(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, tuple[int, Any]]:
        await asyncio.sleep(0.5)  # let the market produce a few quotes
        reqs = {
            "info": get("/fapi/v1/exchangeInfo"),
            "depth": get("/fapi/v1/depth?symbol=BTCUSDT&limit=10"),
            "depth_eth": get("/fapi/v1/depth?symbol=FOOUSDT"),  # not listed
            "depth_unemulated": get("/fapi/v1/depth?symbol=ETHUSDT"),  # listed, not emulated in this session
            "depth_nosym": get("/fapi/v1/depth"),
            "depth_limit": get("/fapi/v1/depth?symbol=BTCUSDT&limit=7"),
            "book": get("/fapi/v1/ticker/bookTicker?symbol=BTCUSDT"),
            "time": get("/fapi/v1/time"),
            "listen_nokey": post("/fapi/v1/listenKey", b""),
            "listen": post("/fapi/v1/listenKey", b"", "X-MBX-APIKEY: key\r\n"),
            "nope": get("/fapi/v1/nope"),
        }
        out = {}
        for name, raw in reqs.items():
            status, text = await http(emu, "binance", ctx, raw)
            out[name] = (status, json.loads(text) if text.startswith(("{", "[")) else text)
        return out

    orders.reset()
    orders.configure_test_credentials(binance_api_key="key", binance_hmac_secret="secret")
    try:
        out = run_with(config(tmp_path), body)
    finally:
        orders.reset()
    status, info = out["info"]
    sym = next(s for s in info["symbols"] if s["symbol"] == "BTCUSDT")
    filters = {f["filterType"]: f for f in sym["filters"]}
    assert status == 200 and filters["PRICE_FILTER"]["tickSize"] == str(orders.BINANCE_SYMBOLS["BTCUSDT"]["tick"])
    assert filters["LOT_SIZE"]["stepSize"] == str(orders.BINANCE_SYMBOLS["BTCUSDT"]["step"])
    status, depth = out["depth"]
    assert status == 200 and len(depth["bids"]) == len(depth["asks"]) == 10 and depth["lastUpdateId"] > 0
    assert float(depth["bids"][0][0]) < float(depth["asks"][0][0])
    assert out["depth_eth"] == (400, {"code": -1121, "msg": "Invalid symbol."})
    assert out["depth_unemulated"][0] == 400 and out["depth_unemulated"][1]["code"] == -1121
    assert "ETHUSDT is listed but not emulated" in out["depth_unemulated"][1]["msg"]
    assert out["depth_nosym"][0] == 400 and out["depth_nosym"][1]["code"] == -1102
    assert out["depth_limit"][0] == 400 and out["depth_limit"][1]["code"] == -1100
    assert out["book"][0] == 200 and out["book"][1]["symbol"] == "BTCUSDT"
    assert out["time"][0] == 200 and out["time"][1]["serverTime"] > 0
    assert out["listen_nokey"] == (401, {"code": -2015, "msg": "Invalid API-key, IP, or permissions for action."})
    assert out["listen"][0] == 200 and len(out["listen"][1]["listenKey"]) == 64
    assert out["nope"][0] == 404


def test_hyperliquid_info_and_exchange_errors(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, tuple[int, str]]:
        await asyncio.sleep(0.5)
        reqs = {
            "meta": post("/info", b'{"type":"meta"}'),
            "l2": post("/info", b'{"type":"l2Book","coin":"BTC"}'),
            "l2_eth": post("/info", b'{"type":"l2Book","coin":"ETH"}'),
            "l2_unlisted": post("/info", b'{"type":"l2Book","coin":"NOSUCHCOIN"}'),
            "unknown": post("/info", b'{"type":"frob"}'),
            "not_json": post("/info", b"{nope"),
            "exchange_garbage": post("/exchange", b'{"action":1}'),
            "get": get("/info"),
        }
        return {name: await http(emu, "hyperliquid", ctx, raw) for name, raw in reqs.items()}

    out = run_with(config(tmp_path), body)
    assert out["meta"][0] == 200 and json.loads(out["meta"][1])["universe"][0]["name"] == "BTC"
    l2 = json.loads(out["l2"][1])
    assert out["l2"][0] == 200 and l2["coin"] == "BTC" and len(l2["levels"][0]) == 20
    # ETH is listed but this session emulates BTC only: an empty book in the venue's shape; an unlisted coin: null
    assert out["l2_eth"][0] == 200 and json.loads(out["l2_eth"][1])["levels"] == [[], []]
    assert out["l2_unlisted"] == (200, "null")
    for name in ("unknown", "not_json", "exchange_garbage"):
        status, text = out[name]
        assert status == 422 and text.startswith("Failed to deserialize the JSON body"), (name, out[name])
    assert "frob" in out["unknown"][1]
    assert out["get"][0] == 404


def test_any_bytes_on_a_venue_port_get_a_bounded_answer_and_the_port_keeps_serving(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[int], dict]:
        codes = []
        for raw in (
            b"GET /fapi/v1/time HTTP/1.1\r\nX-Pad: " + b"a" * 20_000,  # a head that never ends: 431
            b"POST /info HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",  # 411
            b"POST /info HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",  # 413
            b"POST /info HTTP/1.1\r\nContent-Length: nine\r\n\r\n",  # 400
            b"\x00\xff garbage\r\n\r\n",  # 400
        ):
            codes.append((await http(emu, "hyperliquid", ctx, raw))[0])
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:  # the port still serves WebSocket
            await ws.send(json.dumps({"method": "ping"}))
            pong = await recv_json(ws)
        return codes, pong

    codes, pong = run_with(config(tmp_path), body)
    assert codes == [431, 411, 413, 400, 400]
    assert pong == {"channel": "pong"}


def test_binance_subscriptions_are_served_or_refused_never_silent(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@frobnicate"], "id": 1}))
            out["unknown"] = await recv_json(ws)
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@depth@100ms", "btcusdt@trade"],
                                      "id": 2}))
            frames = [json.loads(t) for _, t in await recv_for(ws, 1.5)]
            out["raw"] = frames
            await ws.send(json.dumps({"method": "SET_PROPERTY", "params": ["combined", True], "id": 3}))
            await ws.send(json.dumps({"method": "GET_PROPERTY", "params": ["combined"], "id": 4}))
            out["combined"] = [json.loads(t) for _, t in await recv_for(ws, 1.0)]
        async with open_ws(emu, "binance", "/market/ws/0", ctx) as ws:  # ccxt's connection number in the path
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@miniTicker"], "id": 5}))
            out["mini"] = [json.loads(t) for _, t in await recv_for(ws, 1.5)]
        return out

    out = run_with(config(tmp_path), body)
    assert out["unknown"]["id"] == 1 and out["unknown"]["error"]["code"] == 2
    assert "btcusdt@frobnicate" in out["unknown"]["error"]["msg"]
    raw = out["raw"]
    assert raw[0] == {"result": None, "id": 2}
    kinds = {f.get("e") for f in raw[1:]}
    assert kinds == {"depthUpdate", "trade"}, kinds
    diffs = [f for f in raw if f.get("e") == "depthUpdate"]
    assert all(b["pu"] == a["u"] and b["U"] == a["u"] + 1 for a, b in itertools.pairwise(diffs))
    combined = out["combined"]
    assert {"result": None, "id": 3} in combined and {"result": True, "id": 4} in combined
    after = [f for f in combined if "data" in f]
    assert after and all(f["stream"] in ("btcusdt@depth@100ms", "btcusdt@trade") for f in after)
    mini = out["mini"]
    assert mini[0] == {"result": None, "id": 5} and mini[1]["e"] == "24hrMiniTicker"


def test_hyperliquid_subscriptions_are_served_or_refused_never_silent(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            for sub in ({"type": "activeAssetData", "coin": "BTC", "user": "0x" + "00" * 20}, {"type": "allMids"},
                        {"type": "orderUpdates", "user": "0x" + "00" * 20}):
                await ws.send(json.dumps({"method": "subscribe", "subscription": sub}))
            out["frames"] = [json.loads(t) for _, t in await recv_for(ws, 1.0)]
        return out

    frames = run_with(config(tmp_path), body)["frames"]
    errors = [f for f in frames if f["channel"] == "error"]
    assert len(errors) == 1 and "activeAssetData" in errors[0]["data"]
    acks = [f["data"]["subscription"]["type"] for f in frames if f["channel"] == "subscriptionResponse"]
    assert sorted(acks) == ["allMids", "orderUpdates"]
    mids = [f for f in frames if f["channel"] == "allMids"]
    assert mids and float(mids[-1]["data"]["mids"]["BTC"]) > 0


def test_klines_recent_trades_and_candles_come_from_the_trade_tape(venue_sim_factory: Any) -> None:
    """Binance ``klines`` / ``trades`` and Hyperliquid ``candleSnapshot``: rows in the venues' shapes, built from
    the trades the streams publish (so a bar's count equals the trades in its minute)."""
    import urllib.request

    sim = venue_sim_factory(shared=True)  # reads the healthy market's tape only
    ctx = ssl.create_default_context(cafile=sim["ca_file"])

    def get(url: str, body: bytes | None = None) -> Any:
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return json.loads(resp.read())

    bn = "https" + sim["binance_url"].removeprefix("wss")
    hl = "https" + sim["hyperliquid_url"].removeprefix("wss")
    deadline = time.monotonic() + 20
    while not (trades := get(f"{bn}/fapi/v1/trades?symbol=BTCUSDT&limit=1000")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert trades and all(float(t["price"]) > 0 and isinstance(t["isBuyerMaker"], bool) for t in trades)
    assert [t["id"] for t in trades] == sorted(t["id"] for t in trades)
    klines = get(f"{bn}/fapi/v1/klines?symbol=BTCUSDT&interval=1m&limit=5")
    newest = trades[-1]["time"]
    (bar,) = [k for k in klines if k[0] <= newest <= k[6]]  # the newest trade's minute (queried after it)
    assert len(bar) == 12 and bar[6] == bar[0] + 59_999 and bar[0] % 60_000 == 0
    assert float(bar[3]) <= float(bar[1]) <= float(bar[2]) and float(bar[3]) <= float(bar[4]) <= float(bar[2])
    in_bar = [t for t in trades if bar[0] <= t["time"] <= bar[6]]
    assert bar[8] >= len(in_bar) > 0  # the bar counts every trade of its minute
    body = json.dumps({"type": "candleSnapshot", "req": {"coin": "BTC", "interval": "1m", "startTime": 0}}).encode()
    while not (candles := get(f"{hl}/info", body)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert candles and candles[-1]["s"] == "BTC" and candles[-1]["i"] == "1m" and candles[-1]["n"] > 0
    assert candles[-1]["T"] == candles[-1]["t"] + 59_999
