"""The emulator's own limits against a local client (issue 44), over real TLS WebSockets: Hyperliquid connections
and subscriptions are counted in total as well as per source address (every 127/8 address reaches a loopback
listener), an oversized subscription message is refused by name, a subscription keeps only its channel's keys, a
``user`` must be an address, and every refusal is counted; Binance's ``/ws-fapi/v1`` log of requests keeps one
rate-limit window whatever the request's flags."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from caerus.sim import orders
from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, open_ws, recv_json, run_with

pytestmark = pytest.mark.integration

USER = "0x" + "ab" * 20


def _sub(subscription: dict[str, Any], method: str = "subscribe") -> str:
    return json.dumps({"method": method, "subscription": subscription})


def _from(address: str) -> dict[str, Any]:
    """Connect from this loopback source address (Linux routes all of 127/8 to lo)."""
    return {"local_addr": (address, 0)}


def _refused(emu: VenueEmulator) -> dict[str, int]:
    return emu.stats()["connections"]["hyperliquid"]["refused"]


def test_connections_from_other_loopback_addresses_count_against_the_total(tmp_path: Path) -> None:
    cfg = config(tmp_path, hl_max_connections_per_ip=2, hl_max_connections_total=4)

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[int, str, dict[str, int], bool]:
        conns = []
        try:
            for address in ("127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"):  # each within its own limit
                conns.append(await open_ws(emu, "hyperliquid", "/ws", ctx, **_from(address)))
            try:  # a fresh address, the whole emulator full
                conns.append(await open_ws(emu, "hyperliquid", "/ws", ctx, **_from("127.0.0.3")))
                status, text = 101, ""
            except InvalidStatus as exc:
                status, text = exc.response.status_code, exc.response.body.decode()
            refused = _refused(emu)
            await conns.pop(0).close()
            conns.append(await open_ws(emu, "hyperliquid", "/ws", ctx, **_from("127.0.0.3")))  # room again
            return status, text, refused, True
        finally:
            for c in conns:
                await c.close()

    status, text, refused, reopened = run_with(cfg, body)
    assert status == 429 and "hl_max_connections_total" in text and "at most 4" in text
    assert refused == {"hl_max_connections_total": 1}
    assert reopened


def test_subscriptions_from_other_loopback_addresses_count_against_the_total(tmp_path: Path) -> None:
    cfg = config(tmp_path, hl_max_subscriptions_per_ip=3, hl_max_subscriptions_total=5)

    def user(i: int) -> dict[str, Any]:
        return {"type": "userEvents", "user": f"0x{i:040x}"}

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[dict], dict, dict[str, int]]:
        acks = []
        async with open_ws(emu, "hyperliquid", "/ws", ctx, **_from("127.0.0.1")) as a, \
                open_ws(emu, "hyperliquid", "/ws", ctx, **_from("127.0.0.2")) as b, \
                open_ws(emu, "hyperliquid", "/ws", ctx, **_from("127.0.0.3")) as c:
            for ws, ids in ((a, range(3)), (b, range(3, 5))):  # 3 + 2: each address within its 3
                for i in ids:
                    await ws.send(_sub(user(i)))
                    acks.append(await recv_json(ws))
            await c.send(_sub(user(5)))
            refused = await recv_json(c)
            return acks, refused, _refused(emu)

    acks, refused, counted = run_with(cfg, body)
    assert [f["channel"] for f in acks] == ["subscriptionResponse"] * 5
    assert refused["channel"] == "error" and "hl_max_subscriptions_total" in refused["data"]
    assert "at most 5 subscriptions in all" in refused["data"]
    assert counted == {"hl_max_subscriptions_total": 1}


def test_an_oversized_subscription_is_refused_by_name_and_counted(tmp_path: Path) -> None:
    big = {"type": "bbo", "coin": "BTC", "pad": "x" * 4096}

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[dict, dict, dict[str, int]]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            await ws.send(_sub(big))
            refused = await recv_json(ws)
            await ws.send(_sub({"type": "bbo", "coin": "BTC"}))  # not held: the same subscription is new
            ack = await recv_json(ws)
            return refused, ack, _refused(emu)

    refused, ack, counted = run_with(config(tmp_path), body)
    assert refused["channel"] == "error" and "hl_max_subscription_bytes" in refused["data"]
    assert "over the limit of 1024" in refused["data"] and "xxxx" not in refused["data"]
    assert ack["channel"] == "subscriptionResponse"
    assert counted == {"hl_max_subscription_bytes": 1}


def test_a_subscription_keeps_only_the_keys_its_channel_defines(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[dict, dict, dict]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            await ws.send(_sub({"type": "userFills", "user": USER, "aggregateByTime": False, "junk": "j" * 500}))
            ack = await recv_json(ws)
            await recv_json(ws)  # the fills snapshot
            # the same channel and user with other unknown keys is the same subscription, not a new one
            await ws.send(_sub({"type": "userFills", "user": USER, "aggregateByTime": False, "other": 1}))
            again = await recv_json(ws)
            await ws.send(_sub({"type": "userFills", "user": USER, "aggregateByTime": False}, "unsubscribe"))
            gone = await recv_json(ws)
            return ack, again, gone

    ack, again, gone = run_with(config(tmp_path), body)
    kept = {"type": "userFills", "user": USER, "aggregateByTime": False}
    assert ack == {"channel": "subscriptionResponse", "data": {"method": "subscribe", "subscription": kept}}
    assert again["channel"] == "error" and again["data"].startswith("Already subscribed")
    assert gone == {"channel": "subscriptionResponse", "data": {"method": "unsubscribe", "subscription": kept}}


@pytest.mark.parametrize("user", ["bob", "0x" + "ab" * 19, "0x" + "ab" * 20 + "\n", "0x" + "zz" * 20, 7, None])
def test_user_channels_refuse_a_user_that_is_not_an_address(tmp_path: Path, user: object) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[dict], dict, dict[str, int]]:
        refusals = []
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            for kind in ("userFills", "orderUpdates", "userEvents", "webData2"):
                await ws.send(_sub({"type": kind, "user": user}))
                refusals.append(await recv_json(ws))
            await ws.send(_sub({"type": "userFills", "user": USER.upper().replace("0X", "0x")}))
            ok = await recv_json(ws)
            return refusals, ok, _refused(emu)

    refusals, ok, counted = run_with(config(tmp_path), body)
    for f in refusals:
        assert f["channel"] == "error" and "user must be an address (0x and 40 hex digits)" in f["data"], f
    assert ok["channel"] == "subscriptionResponse"
    assert counted == {"invalid_subscription": 4}


@pytest.fixture
def desk() -> Iterator[None]:
    orders.reset()
    yield
    orders.reset()


@pytest.mark.usefixtures("desk")
def test_ws_fapi_time_requests_without_rate_limits_leave_one_window_in_the_log(tmp_path: Path) -> None:
    n = 500

    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple[list[dict], int, int]:
        async with open_ws(emu, "binance", "/ws-fapi/v1", ctx) as ws:
            replies = []
            for i in range(n):
                await ws.send(json.dumps({"id": i, "method": "time", "params": {"returnRateLimits": False}}))
                replies.append(await recv_json(ws))
            held = len(orders.DESK.requests_ms)
            orders.DESK.binance_clock_offset_ms = 61_000  # the venue's clock a minute on: every request has aged
            await ws.send(json.dumps({"id": n, "method": "time", "params": {"returnRateLimits": False}}))
            replies.append(await recv_json(ws))
            return replies, held, len(orders.DESK.requests_ms)

    replies, held, after = run_with(config(tmp_path), body)
    assert all(r["status"] == 200 and "rateLimits" not in r for r in replies)
    assert held == n  # all within the minute: each one counted
    assert after == 1  # the minute gone by: only the last request is left
