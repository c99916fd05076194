"""Helpers for the emulator's integration tests: start an in-process emulator, TLS clients that trust it."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from caerus.sim.core.config import EmulatorConfig
from caerus.sim.core.scenarios import get_scenario
from caerus.sim.emulator import VenueEmulator


def config(cert_dir: Path, scenario: str = "none", **kw: Any) -> EmulatorConfig:
    scenario_kw = {k[len("scenario_"):]: kw.pop(k) for k in list(kw) if k.startswith("scenario_")}
    return EmulatorConfig(cert_dir=cert_dir, scenario=get_scenario(scenario).with_overrides(**scenario_kw), **kw)


def run_with(cfg: EmulatorConfig, body: Callable[[VenueEmulator, ssl.SSLContext], Awaitable[Any]],
             timeout: float = 60.0) -> Any:
    """Start the emulator, run ``body(emu, client_ssl)``, stop it; the whole thing bounded by ``timeout``."""

    async def main() -> Any:
        async with VenueEmulator(cfg) as emu:
            ctx = ssl.create_default_context(cafile=emu.info["ca_file"])
            return await asyncio.wait_for(body(emu, ctx), timeout)

    return asyncio.run(main())


def open_ws(emu: VenueEmulator, venue: str, path: str, ctx: ssl.SSLContext, **kw: Any) -> Any:
    base = emu.info["binance_url" if venue == "binance" else "hyperliquid_url"]
    return connect(base + path, ssl=ctx, open_timeout=10, **kw)


async def recv_json(ws: ClientConnection, timeout: float = 5.0) -> Any:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def recv_for(ws: ClientConnection, seconds: float) -> list[tuple[int, str]]:
    """Every frame received within ``seconds`` as (receive time ns, text); stops early if the peer closes."""
    out: list[tuple[int, str]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await asyncio.wait_for(ws.recv(), left)
        except TimeoutError:
            break
        out.append((time.time_ns(), msg if isinstance(msg, str) else msg.decode()))
    return out


async def hl_subscribe(ws: ClientConnection, kind: str = "bbo", **extra: Any) -> Any:
    sub = {"type": kind, "coin": "BTC", **extra}
    await ws.send(json.dumps({"method": "subscribe", "subscription": sub}))
    return await recv_json(ws)
