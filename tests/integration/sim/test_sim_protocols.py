"""Real TLS WebSocket clients against the emulator's Binance and Hyperliquid protocols (healthy scenario)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, hl_subscribe, open_ws, recv_for, recv_json, run_with

pytestmark = pytest.mark.integration


def test_binance_raw_stream_book_ticker(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[dict]:
        async with open_ws(emu, "binance", "/public/ws/btcusdt@bookTicker", ctx) as ws:
            return [await recv_json(ws) for _ in range(30)]

    msgs = run_with(config(tmp_path), body)
    assert all(m["e"] == "bookTicker" and m["s"] == "BTCUSDT" for m in msgs)
    assert all(isinstance(m[k], str) for m in msgs for k in ("b", "B", "a", "A"))
    assert all(float(m["a"]) > float(m["b"]) for m in msgs)
    assert all(m["T"] < m["E"] for m in msgs)
    ids = [m["u"] for m in msgs]
    assert all(b > a for a, b in itertools.pairwise(ids))
    now_ms = time.time_ns() // 1_000_000
    assert all(now_ms - 60_000 < m["E"] <= now_ms for m in msgs)  # exchange time is the (recent) schedule


def test_binance_combined_stream_wraps_each_stream(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[dict]:
        path = "/public/stream?streams=btcusdt@bookTicker/btcusdt@depth5@100ms"
        async with open_ws(emu, "binance", path, ctx) as ws:
            return [await recv_json(ws) for _ in range(80)]

    msgs = run_with(config(tmp_path), body)
    streams = {m["stream"] for m in msgs}
    assert streams == {"btcusdt@bookTicker", "btcusdt@depth5@100ms"}
    depth = [m["data"] for m in msgs if m["stream"] == "btcusdt@depth5@100ms"]
    assert all(d["e"] == "depthUpdate" and len(d["b"]) == 5 and len(d["a"]) == 5 for d in depth)
    for prev, cur in itertools.pairwise(depth):
        assert cur["pu"] == prev["u"]  # partial depth updates chain like the venue's
    assert all(d["pu"] < d["U"] <= d["u"] for d in depth)  # the first one too (issue 13: it had U == u == pu)


def test_binance_subscribe_ack_list_and_errors(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict:
        out: dict = {}
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@bookTicker"], "id": 1}))
            out["ack"] = await recv_json(ws)
            out["data"] = await recv_json(ws)
            await ws.send(json.dumps({"method": "UNSUBSCRIBE", "params": ["btcusdt@bookTicker"], "id": 2}))
            frames = [json.loads(t) for _, t in await recv_for(ws, 0.5)]
            out["unsub_ack"] = [f for f in frames if "result" in f or "error" in f]
            out["after_unsub"] = await recv_for(ws, 0.5)
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@aggTrade"], "id": 3}))
            out["wrong_ack"] = await recv_json(ws)
            await ws.send(json.dumps({"method": "LIST_SUBSCRIPTIONS", "id": 4}))
            out["list"] = await recv_json(ws)
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": "btcusdt@bookTicker", "id": 5}))
            out["bad_params"] = await recv_json(ws)
            await ws.send(json.dumps({"method": "FROB", "params": [], "id": 6}))
            out["bad_method"] = await recv_json(ws)
            await ws.send("{not json")
            out["bad_json"] = await recv_json(ws)
        return out

    out = run_with(config(tmp_path), body)
    assert out["ack"] == {"result": None, "id": 1}
    assert out["data"]["e"] == "bookTicker"
    assert out["unsub_ack"] == [{"result": None, "id": 2}]
    assert out["after_unsub"] == []
    assert out["wrong_ack"] == {"result": None, "id": 3}
    assert out["list"] == {"result": ["btcusdt@aggTrade"], "id": 4}
    assert out["bad_params"]["id"] == 5 and out["bad_params"]["error"]["code"] == 2
    assert out["bad_params"]["error"]["msg"].startswith("Invalid request: ")
    assert out["bad_method"]["id"] == 6 and out["bad_method"]["error"]["code"] == 2
    assert "FROB" in out["bad_method"]["error"]["msg"]
    assert out["bad_json"]["id"] is None and out["bad_json"]["error"]["code"] == 3


@contextlib.asynccontextmanager
async def _subscribed_on_market_and_public(emu: VenueEmulator, ctx: ssl.SSLContext, stream: str,
                                           req_id: int) -> AsyncIterator[tuple[Any, Any]]:
    """Binance connections on /market and /public, each having sent SUBSCRIBE ``stream`` (id ``req_id``)."""
    async with open_ws(emu, "binance", "/market/ws", ctx) as market, \
            open_ws(emu, "binance", "/public/ws", ctx) as public:
        for ws in (market, public):
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": [stream], "id": req_id}))
        yield market, public


def test_binance_wrong_route_acks_then_stays_silent(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with _subscribed_on_market_and_public(emu, ctx, "btcusdt@bookTicker", 7) as (wrong, right):
            wrong_frames = await recv_for(wrong, 1.5)
            right_frames = await recv_for(right, 0.3)
        async with open_ws(emu, "binance", "/market/ws/btcusdt@markPrice@1s", ctx) as market:
            mark = await recv_json(market, 3.0)
        return wrong_frames, right_frames, mark

    wrong_frames, right_frames, mark = run_with(config(tmp_path), body)
    assert [json.loads(t) for _, t in wrong_frames] == [{"result": None, "id": 7}]
    assert len(right_frames) > 2  # the same subscription on /public flows
    assert mark["e"] == "markPriceUpdate" and mark["s"] == "BTCUSDT"


def test_binance_trade_stream_is_served_on_public_and_silent_on_market_and_counted(tmp_path: Path) -> None:
    """Issue 51 item 4: ``<symbol>@trade`` is a /public stream (where the venue serves it, and where ccxt 4.5.90
    subscribes it); on /market it is acknowledged and stays silent, as the venue does, and the emulator counts and
    logs it (``silent``), so the silence is explained."""
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with _subscribed_on_market_and_public(emu, ctx, "btcusdt@trade", 9) as (wrong, right):
            right_frames = await recv_for(right, 3.0)
            wrong_frames = await recv_for(wrong, 0.2)  # by now /public has carried trades; /market has not
        return wrong_frames, right_frames, emu.connection_counts()["binance"]["silent"]

    wrong_frames, right_frames, silent = run_with(config(tmp_path), body)
    trades = [json.loads(t) for _, t in right_frames][1:]
    assert trades and all(t["e"] == "trade" and t["s"] == "BTCUSDT" for t in trades)
    assert [json.loads(t) for _, t in wrong_frames] == [{"result": None, "id": 9}]
    assert silent == {"trade on /market": 1}


def test_unknown_paths_are_refused_at_handshake(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[int]:
        codes = []
        for venue, path in (("binance", "/ws/btcusdt@bookTicker"), ("binance", "/public/nope"),
                            ("hyperliquid", "/info")):
            try:
                async with open_ws(emu, venue, path, ctx):
                    codes.append(101)
            except InvalidStatus as exc:
                codes.append(exc.response.status_code)
        return codes

    assert run_with(config(tmp_path), body) == [404, 404, 404]


def test_hyperliquid_subscribe_bbo_ping_and_errors(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict:
        out: dict = {}
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            out["ack"] = await hl_subscribe(ws)
            out["bbo"] = [await recv_json(ws) for _ in range(10)]
            await ws.send(json.dumps({"method": "ping"}))
            frames = [json.loads(t) for _, t in await recv_for(ws, 0.5)]
            out["pong"] = [f for f in frames if f["channel"] == "pong"]
            out["again"] = await hl_subscribe(ws)
            await ws.send("garbage")
            out["garbage"] = [json.loads(t) for _, t in await recv_for(ws, 0.3)]
            await ws.send(json.dumps({"method": "subscribe", "subscription": {"type": "nope"}}))
            out["bad_type"] = [json.loads(t) for _, t in await recv_for(ws, 0.3)]
            await ws.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": "ETH"}}))
            out["eth"] = [json.loads(t) for _, t in await recv_for(ws, 0.3)]
        return out

    out = run_with(config(tmp_path), body)
    assert out["ack"] == {"channel": "subscriptionResponse",
                          "data": {"method": "subscribe", "subscription": {"type": "bbo", "coin": "BTC"}}}
    bbo = out["bbo"]
    assert all(m["channel"] == "bbo" and m["data"]["coin"] == "BTC" for m in bbo)
    times = [m["data"]["time"] for m in bbo]
    assert times == sorted(times)
    tops = [tuple(json.dumps(x, sort_keys=True) for x in m["data"]["bbo"]) for m in bbo]
    assert all(a != b for a, b in itertools.pairwise(tops))  # a bbo frame only when the top changed
    assert out["pong"] == [{"channel": "pong"}]
    assert out["again"]["channel"] == "error" and "Already subscribed" in out["again"]["data"]

    def errors(frames: list[dict]) -> list[dict]:
        return [f for f in frames if f["channel"] == "error"]

    assert len(errors(out["garbage"])) == 1
    assert len(errors(out["bad_type"])) == 1
    # A coin the emulator does not list is refused by name, never acknowledged and left silent (issue 13).
    assert not [f for f in out["eth"] if f["channel"] == "subscriptionResponse"]
    assert len(errors(out["eth"])) == 1 and "'ETH'" in errors(out["eth"])[0]["data"]


def test_hyperliquid_l2book_fast(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[dict]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            ack = await hl_subscribe(ws, "l2Book", fast=True)
            assert ack["channel"] == "subscriptionResponse"
            return [await recv_json(ws, 3.0) for _ in range(2)]

    books = run_with(config(tmp_path), body)
    for b in books:
        assert b["channel"] == "l2Book"
        bids, asks = b["data"]["levels"]
        assert len(bids) == len(asks) == 5
        assert float(bids[0]["px"]) < float(asks[0]["px"])


def test_hyperliquid_idle_close_and_greeting(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            greeting = await asyncio.wait_for(ws.recv(), 5)
            await ws.send(json.dumps({"method": "ping"}))
            pong = await recv_json(ws)
            try:
                await asyncio.wait_for(ws.recv(), 10)
                closed = None
            except ConnectionClosed as exc:
                closed = exc.rcvd.code if exc.rcvd else None
        return greeting, pong, closed

    greeting, pong, closed = run_with(config(tmp_path, hl_idle_timeout_s=1.0, hl_greeting=True), body)
    assert greeting == "Websocket connection established."
    assert pong == {"channel": "pong"}
    assert closed == 1000


def test_binance_connection_lifetime_closes_with_1001(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> int | None:
        async with open_ws(emu, "binance", "/public/ws/btcusdt@bookTicker", ctx) as ws:
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            except ConnectionClosed as exc:
                return exc.rcvd.code if exc.rcvd else None

    assert run_with(config(tmp_path, binance_max_lifetime_s=1.0), body) == 1001


def test_binance_sends_protocol_pings(tmp_path: Path) -> None:
    """With a compressed ping interval the server's pings are answered by the client and measured."""

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> float:
        async with open_ws(emu, "binance", "/public/ws/btcusdt@bookTicker", ctx, ping_interval=None) as ws:
            await recv_for(ws, 1.0)  # keep reading: an unread client stops reading its socket, pings included
            conns = [c for srv in emu._servers for c in srv.connections]
            return max(c.latency for c in conns)

    # websockets sets a connection's latency when a ping it sent is answered: > 0 proves a ping round trip.
    assert run_with(config(tmp_path, binance_ping_interval_s=0.2), body) > 0


def test_order_entry_routes_to_caerus_sim_orders(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "binance", "/ws-fapi/v1", ctx) as ws:
            await ws.send(json.dumps({"id": "a1", "method": "order.test", "params": {}}))
            unknown = await recv_json(ws)
            await ws.send("{broken")
            broken = await recv_json(ws)
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "post", "id": 9, "request": {"type": "info", "payload": {}}}))
            post = await recv_json(ws)
        return unknown, broken, post

    unknown, broken, post = run_with(config(tmp_path), body)
    assert unknown["id"] == "a1" and unknown["status"] == 400 and unknown["error"]["code"] == -1000
    assert broken["status"] == 400 and broken["id"] is None
    assert post["channel"] == "post" and post["data"]["id"] == 9
    assert post["data"]["response"]["type"] == "error"


def test_binance_disconnects_a_client_over_10_messages_per_second(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            for i in range(11):  # sent back to back: well within one second
                await ws.send(json.dumps({"method": "LIST_SUBSCRIPTIONS", "id": i}))
            acks = []
            try:
                while True:
                    acks.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            except ConnectionClosed as exc:
                return acks, exc.rcvd.code if exc.rcvd else None

    acks, code = run_with(config(tmp_path), body)
    assert [a["id"] for a in acks] == list(range(10))
    assert code == 1008


def test_emulator_thread_serves_synchronous_clients(tmp_path: Path) -> None:
    from websockets.sync.client import connect as sync_connect

    from caerus.sim.emulator import EmulatorThread

    with EmulatorThread(config(tmp_path)) as t:
        ctx = ssl.create_default_context(cafile=t.info["ca_file"])
        # bounds for a loaded machine (a CPU hog beside four test workers outlasted websockets' 10 s default)
        with sync_connect(t.info["hyperliquid_url"] + "/ws", ssl=ctx, open_timeout=60) as ws:
            ws.send(json.dumps({"method": "ping"}))
            assert json.loads(ws.recv(timeout=60)) == {"channel": "pong"}
        counts = t.emulator.connection_counts()  # type: ignore[union-attr]
    assert counts["hyperliquid"]["opened"] == 1
    assert not t._thread.is_alive()
