"""Each fault scenario's observable behaviour from a real TLS client, and recovery on the next connection."""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus

from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, hl_subscribe, open_ws, recv_for, recv_json, run_with

pytestmark = pytest.mark.integration

BOOK = "/public/ws/btcusdt@bookTicker"
FAST = {"scenario_after_s": 0.3, "scenario_duration_s": 1.5}


async def healthy(emu: VenueEmulator, ctx: ssl.SSLContext, venue: str, seconds: float = 1.0) -> int:
    """Frames a fresh connection gets in ``seconds`` (it must not be closed meanwhile)."""
    if venue == "binance":
        async with open_ws(emu, venue, BOOK, ctx) as ws:
            return len(await recv_for(ws, seconds))
    async with open_ws(emu, venue, "/ws", ctx) as ws:
        await hl_subscribe(ws)
        return len(await recv_for(ws, seconds))


def info_age_ms(frames: list[tuple[int, str]]) -> list[int]:
    ages = []
    for t_recv, text in frames:
        try:
            d = json.loads(text)
        except ValueError:
            continue
        exch = d.get("E") if "E" in d else (d.get("data") or {}).get("time")
        if isinstance(exch, int):
            ages.append(t_recv // 1_000_000 - exch)
    return ages


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_drop_aborts_without_close_frame_then_recovers(tmp_path: Path, venue: str) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        got = 0
        async with open_ws(emu, venue, BOOK if venue == "binance" else "/ws", ctx) as ws:
            if venue == "hyperliquid":
                await hl_subscribe(ws)
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
                    got += 1
            except ConnectionClosedError as exc:
                err = exc
        return got, err.rcvd, await healthy(emu, ctx, venue)

    got, rcvd, after = run_with(config(tmp_path, "drop", **FAST), body)
    assert got > 0  # data flowed before the drop
    assert rcvd is None  # no close frame: the TCP connection was aborted
    assert after > 0


def test_stall_holds_frames_then_flushes_old_ones(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "binance", BOOK, ctx) as ws:
            frames = await recv_for(ws, 3.0)
            return frames, ws.state.name

    frames, state = run_with(config(tmp_path, "stall", **FAST), body)
    gaps_ms = [(b[0] - a[0]) / 1e6 for a, b in itertools.pairwise(frames)]
    assert max(gaps_ms) > 1000  # nothing arrived for most of the 1.5 s stall
    assert max(info_age_ms(frames)) > 1000  # the flushed backlog carries its scheduled exchange times
    assert state == "OPEN"  # a stall does not close the connection
    ids = [json.loads(t)["u"] for _, t in frames]
    assert ids == sorted(ids)  # nothing lost, nothing reordered


def test_slow_drip_builds_a_backlog_of_intact_frames(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[tuple[int, str]]:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            await hl_subscribe(ws)
            return await recv_for(ws, 3.0)

    frames = run_with(config(tmp_path, "slow-drip", **FAST), body)
    parsed = [json.loads(t) for _, t in frames]  # fragmented frames reassemble into valid JSON
    assert all(p["channel"] == "bbo" for p in parsed)
    assert max(info_age_ms(frames)) > 500


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_malformed_json_is_injected_then_stream_continues(tmp_path: Path, venue: str) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[tuple[int, str]]:
        async with open_ws(emu, venue, BOOK if venue == "binance" else "/ws", ctx) as ws:
            if venue == "hyperliquid":
                await hl_subscribe(ws)
            return await recv_for(ws, 1.5)

    frames = run_with(config(tmp_path, "malformed-json", **FAST), body)
    bad = []
    for i, (_, text) in enumerate(frames):
        try:
            json.loads(text)
        except ValueError:
            bad.append(i)
    assert len(bad) == 3
    assert bad[-1] < len(frames) - 1  # valid frames follow the broken ones


def test_oversized_frame_exceeds_the_client_limit(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "binance", BOOK, ctx, max_size=1 << 20) as ws:
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            except ConnectionClosedError as exc:
                code = exc.sent.code if exc.sent else None
        return code, await healthy(emu, ctx, "binance")

    code, after = run_with(config(tmp_path, "oversized-frame", **FAST), body)
    assert code == 1009  # the client closed: message too big
    assert after > 0


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_error_frames_have_the_venue_shape(tmp_path: Path, venue: str) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[dict]:
        async with open_ws(emu, venue, BOOK if venue == "binance" else "/ws", ctx) as ws:
            if venue == "hyperliquid":
                await hl_subscribe(ws)
            return [json.loads(t) for _, t in await recv_for(ws, 1.5)]

    msgs = run_with(config(tmp_path, "error-frames", **FAST), body)
    if venue == "binance":
        errors = [m for m in msgs if "error" in m]
        assert all(m["error"]["code"] == 2 and m["error"]["msg"].startswith("Invalid request") for m in errors)
        assert msgs[-1]["e"] == "bookTicker"
    else:
        errors = [m for m in msgs if m["channel"] == "error"]
        assert all(isinstance(m["data"], str) for m in errors)
        assert msgs[-1]["channel"] == "bbo"
    assert len(errors) == 3


def test_wrong_route_scenario_is_silent_then_recovers(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "binance", "/public/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["btcusdt@bookTicker"], "id": 1}))
            silent = [json.loads(t) for _, t in await recv_for(ws, 1.5)]
        return silent, await healthy(emu, ctx, "binance")

    silent, after = run_with(config(tmp_path, "wrong-route"), body)
    assert silent == [{"result": None, "id": 1}]
    assert after > 0


@pytest.mark.parametrize(("scenario", "status"), [("http-429", 429), ("http-503", 503)])
def test_handshake_rejections_then_success(tmp_path: Path, scenario: str, status: int) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        codes = []
        for _ in range(2):
            try:
                async with open_ws(emu, "hyperliquid", "/ws", ctx):
                    codes.append(101)
            except InvalidStatus as exc:
                codes.append(exc.response.status_code)
                assert exc.response.headers["Retry-After"] == "1"
        return codes, await healthy(emu, ctx, "hyperliquid"), await healthy(emu, ctx, "binance", 0.3)

    codes, hl_after, bn_after = run_with(config(tmp_path, scenario, scenario_times=2,
                                                scenario_venues="hyperliquid"), body)
    assert codes == [status, status]
    assert hl_after > 0 and bn_after > 0


def test_tls_failure_then_success(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        try:
            async with open_ws(emu, "binance", BOOK, ctx):
                first = "connected"
        except ssl.SSLCertVerificationError as exc:
            first = exc.verify_message
        return first, await healthy(emu, ctx, "binance")

    first, after = run_with(config(tmp_path, "tls-failure"), body)
    assert first == "unable to get local issuer certificate"
    assert after > 0


def test_refused_then_listening(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        try:
            async with open_ws(emu, "binance", BOOK, ctx):
                first = "connected"
        except ConnectionRefusedError:
            first = "refused"
        attempts = 0
        while True:  # what a supervised feed does: retry until the venue listens again
            attempts += 1
            try:
                return first, attempts, await healthy(emu, ctx, "binance", 0.5)
            except ConnectionRefusedError:
                await asyncio.sleep(0.2)

    first, attempts, after = run_with(config(tmp_path, "refused", scenario_duration_s=1.0), body)
    assert first == "refused"
    assert attempts > 1
    assert after > 0


def test_early_close_closes_every_connection_like_the_24h_limit(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> list[tuple[int | None, float]]:
        out = []
        for _ in range(2):
            t0 = time.monotonic()
            async with open_ws(emu, "binance", BOOK, ctx) as ws:
                try:
                    while True:
                        await asyncio.wait_for(ws.recv(), 10)
                except ConnectionClosed as exc:
                    out.append((exc.rcvd.code if exc.rcvd else None, time.monotonic() - t0))
        return out

    closes = run_with(config(tmp_path, "early-close", scenario_after_s=0.5), body)
    assert [c for c, _ in closes] == [1001, 1001]
    assert all(lived >= 0.5 for _, lived in closes)


def test_greeting_scenario_sends_non_json_text_first(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> tuple:
        async with open_ws(emu, "hyperliquid", "/ws", ctx) as ws:
            first = await asyncio.wait_for(ws.recv(), 5)
            ack = await hl_subscribe(ws)
            data = await recv_json(ws)
        return first, ack, data

    first, ack, data = run_with(config(tmp_path, "greeting"), body)
    assert first == "Websocket connection established."
    assert ack["channel"] == "subscriptionResponse" and data["channel"] == "bbo"
