"""The emulator with several instruments, over real TLS WebSockets: one connection carries several symbols' tops,
the venues' subscription and connection limits are enforced, and an ETH order fills against ETH's book."""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from caerus.sim import orders
from caerus.sim.core.market import MarketConfig
from caerus.sim.emulator import VenueEmulator
from caerus.venues.binance.signing import BinanceHmacSigner, sign_params
from tests.integration.sim.simclient import config, open_ws, recv_json, run_with

pytestmark = pytest.mark.integration

SYMBOLS = ("BTC", "ETH", "SOL")


def _cfg(tmp_path: Path, **kw: Any) -> Any:
    return config(tmp_path, market=MarketConfig(symbols=SYMBOLS), **kw)


async def _until(ws: Any, done: Any, limit: int = 2000, timeout: float = 10.0) -> list[dict]:
    """Frames until ``done(frames)`` holds (at most ``limit`` frames, ``timeout`` seconds)."""
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    while not done(out) and len(out) < limit:
        out.append(await recv_json(ws, max(0.1, deadline - time.monotonic())))
    return out


def test_one_connection_per_venue_carries_three_instruments(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[dict], list[dict], Any]:
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "id": 1,
                                      "params": ["btcusdt@bookTicker", "ethusdt@bookTicker", "solusdt@bookTicker"]}))
            bn = await _until(ws, lambda fs: {f.get("s") for f in fs} >= {"BTCUSDT", "ETHUSDT", "SOLUSDT"}
                              and all(sum(f.get("s") == s for f in fs) >= 5 for s in ("BTCUSDT", "ETHUSDT",
                                                                                     "SOLUSDT")))
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            for coin in SYMBOLS:
                await ws.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": coin}}))
            hl = await _until(ws, lambda fs: all(sum(f.get("channel") == "bbo" and f["data"]["coin"] == c
                                                     for f in fs) >= 3 for c in SYMBOLS))
        return bn, hl, emu.info

    bn, hl, info = run_with(_cfg(tmp_path), body)
    assert info["symbols"] == list(SYMBOLS)
    assert bn[0] == {"result": None, "id": 1}
    ticks = {"BTCUSDT": 1, "ETHUSDT": 2, "SOLUSDT": 2}
    for sym, decimals in ticks.items():
        mine = [f for f in bn if f.get("s") == sym]
        assert all(f["e"] == "bookTicker" and len(f["b"].partition(".")[2]) == decimals for f in mine)
        assert all(b["u"] > a["u"] for a, b in itertools.pairwise(mine))
    prices = {sym: float(next(f for f in bn if f.get("s") == sym)["b"]) for sym in ticks}
    assert prices["BTCUSDT"] > 50_000 and 1_000 < prices["ETHUSDT"] < 10_000 and 50 < prices["SOLUSDT"] < 1_000
    acks = [f for f in hl if f.get("channel") == "subscriptionResponse"]
    assert [a["data"]["subscription"]["coin"] for a in acks] == list(SYMBOLS)
    bbo = [f["data"] for f in hl if f.get("channel") == "bbo"]
    # the current bbo right after each subscription: the frame after an ack is that coin's
    for i, f in enumerate(hl[:-1]):
        if f.get("channel") == "subscriptionResponse":
            assert hl[i + 1]["channel"] == "bbo" and hl[i + 1]["data"]["coin"] == f["data"]["subscription"]["coin"]
    times = {c: {d["time"] for d in bbo if d["coin"] == c} for c in SYMBOLS}
    assert times["BTC"] & times["ETH"]  # one block clock: coins changing in a block share its time


def test_listed_but_not_emulated_instruments_are_refused_by_name(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[dict, dict, dict]:
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["dogeusdt@bookTicker"], "id": 1}))
            bn = await recv_json(ws)
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["ethusdt@trade"], "id": 2}))
            got = await _until(ws, lambda fs: any(f.get("id") == 2 for f in fs))
            eth_trade = next(f for f in got if f.get("id") == 2)
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": "DOGE"}}))
            hl = await recv_json(ws)
        return bn, eth_trade, hl

    bn, eth_trade, hl = run_with(_cfg(tmp_path), body)
    assert bn["id"] == 1 and bn["error"]["code"] == 2 and "DOGEUSDT" in bn["error"]["msg"]
    assert "not emulated" in bn["error"]["msg"]
    assert eth_trade == {"result": None, "id": 2}  # every stream is served for an emulated symbol, not BTC's only
    assert hl["channel"] == "error" and "'DOGE'" in hl["data"] and "not emulated" in hl["data"]


def test_binance_refuses_a_subscribe_past_1024_streams(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[dict, dict, dict]:
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "id": 1,
                                      "params": ["btcusdt@bookTicker", "ethusdt@bookTicker"]}))
            ok = await _until(ws, lambda fs: any(f.get("id") == 1 for f in fs))
            many = [f"x{i}usdt@bookTicker" for i in range(1023)]  # 2 held + 1023 new = 1025
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": many, "id": 2}))
            refused = (await _until(ws, lambda fs: any(f.get("id") == 2 for f in fs)))[-1]
            await ws.send(json.dumps({"method": "LIST_SUBSCRIPTIONS", "id": 3}))
            listed = (await _until(ws, lambda fs: any(f.get("id") == 3 for f in fs)))[-1]
        return ok[-1], refused, listed

    ok, refused, listed = run_with(_cfg(tmp_path), body)
    assert ok == {"result": None, "id": 1}
    assert refused["id"] == 2 and refused["error"]["code"] == 2 and "1024" in refused["error"]["msg"]
    assert sorted(listed["result"]) == ["btcusdt@bookTicker", "ethusdt@bookTicker"]  # nothing of the refused one


def test_hyperliquid_refuses_the_1001st_subscription_of_an_ip(tmp_path: Path) -> None:
    def sub(i: int) -> str:
        return json.dumps({"method": "subscribe", "subscription": {"type": "userEvents", "user": f"0x{i:040x}"}})

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[dict], dict, dict]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as a, open_ws(emu, "hyperliquid", "/ws", ctx) as b:
            acks = []
            for ws, ids in ((a, range(600)), (b, range(600, 1000))):  # 1000 across the IP's two connections
                for i in ids:
                    await ws.send(sub(i))
                for _ in ids:
                    acks.append(await recv_json(ws))
            await b.send(sub(1000))
            refused = await recv_json(b)
            await a.send(json.dumps({"method": "unsubscribe",
                                     "subscription": {"type": "userEvents", "user": f"0x{0:040x}"}}))
            await recv_json(a)
            await b.send(sub(1000))  # room again after an unsubscribe
            again = await recv_json(b)
        return acks, refused, again

    acks, refused, again = run_with(_cfg(tmp_path), body)
    assert len(acks) == 1000 and all(f["channel"] == "subscriptionResponse" for f in acks)
    assert refused["channel"] == "error" and "1000" in refused["data"]
    assert again["channel"] == "subscriptionResponse"


def test_hyperliquid_refuses_the_11th_connection_of_an_ip(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[int, bool]:
        conns = [await open_ws(emu, "hyperliquid", "/ws", ctx) for _ in range(10)]
        try:
            try:
                extra = await open_ws(emu, "hyperliquid", "/ws", ctx)
                await extra.close()
                status = 101
            except InvalidStatus as exc:
                status = exc.response.status_code
            await conns.pop().close()
            reopened = False
            deadline = time.monotonic() + 5.0
            while not reopened and time.monotonic() < deadline:  # the server sees the close shortly after
                try:
                    conns.append(await open_ws(emu, "hyperliquid", "/ws", ctx))
                    reopened = True
                except InvalidStatus:
                    await asyncio.sleep(0.05)
            return status, reopened
        finally:
            for c in conns:
                await c.close()

    status, reopened = run_with(_cfg(tmp_path), body)
    assert status == 429 and reopened


def test_an_eth_order_fills_against_eths_book(tmp_path: Path) -> None:
    orders.reset()
    orders.configure_test_credentials(binance_api_key="key", binance_hmac_secret="secret")

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[dict, float, float]:
        async with open_ws(emu, "binance", "/public/ws/ethusdt@bookTicker", ctx) as md:
            top = await recv_json(md)
        ask = float(top["a"])
        now = time.time_ns() // 1_000_000
        params = {"apiKey": "key", "symbol": "ETHUSDT", "side": "BUY", "type": "LIMIT", "timeInForce": "IOC",
                  "price": f"{ask * 1.01:.2f}", "quantity": "0.010", "timestamp": now, "recvWindow": 5000}
        async with open_ws(emu, "binance", "/ws-fapi/v1", ctx) as ws:
            await ws.send(json.dumps({"id": "o1", "method": "order.place",
                                      "params": sign_params(params, BinanceHmacSigner("secret"))}))
            reply = await recv_json(ws)
        return reply, ask, orders.position("binance", "ETH")[0]

    try:
        reply, ask, position = run_with(_cfg(tmp_path), body)
    finally:
        orders.reset()
    result = reply["result"]
    assert result["symbol"] == "ETHUSDT" and float(result["executedQty"]) > 0, reply
    assert abs(float(result["avgPrice"]) / ask - 1) < 0.01  # ETH's book (~3300), not BTC's (~95000)
    assert position == float(result["executedQty"])
