"""Binance klines follow the venue's cadence (issue 33): ``<symbol>@kline_<interval>`` is pushed on a 250 ms grid
("Update Speed: 250ms"), coalescing the trades in between, and every pushed kline reflects every trade of its
period up to the push (checked against the aggTrade stream on the same connection over real TLS). No timed assertion:
the grid is checked on the pushes' own stamps, and the waits are bounded."""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from caerus.sim.core.driver import KLINE_PUSH_MS
from caerus.sim.core.market import MarketConfig
from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, open_ws, recv_json, run_with

pytestmark = pytest.mark.integration

WAIT_S = 30.0  # bound for the frames the test waits for; never reached when the emulator is healthy
KLINES = 12  # kline pushes to collect (3 s of pushes at the venue's cadence)


def test_klines_are_pushed_every_250ms_and_carry_every_trade(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        frames: list[dict[str, Any]] = []
        async with open_ws(emu, "binance", "/market/ws", ctx) as ws:
            await ws.send(json.dumps({"method": "SUBSCRIBE", "params": ["ethusdt@aggTrade", "ethusdt@kline_1m"],
                                      "id": 1}))
            deadline = time.monotonic() + WAIT_S
            while sum(f.get("e") == "kline" for f in frames) < KLINES and time.monotonic() < deadline:
                f = await recv_json(ws, max(0.1, deadline - time.monotonic()))
                if isinstance(f, dict) and "e" in f:
                    frames.append(f)
        assert emu.driver is not None
        return {"frames": frames, "epoch_ms": emu.driver.epoch_ns // 1_000_000}  # type: ignore[union-attr]

    out = run_with(config(tmp_path, market=MarketConfig(symbols=("BTC", "ETH"))), body)
    frames, epoch_ms = out["frames"], out["epoch_ms"]
    klines = [f for f in frames if f["e"] == "kline"]
    trades = [f for f in frames if f["e"] == "aggTrade"]  # each trade its own aggregate (id "a")
    assert len(klines) >= KLINES
    # every push is stamped on the venue's 250 ms grid (the session's model time), at most two per tick (a bar that
    # ended since the last push gets its final state, closed, before the new bar)
    assert all((k["E"] - epoch_ms) % KLINE_PUSH_MS == 0 for k in klines)
    per_tick: dict[int, int] = {}
    for k in klines:
        per_tick[k["E"]] = per_tick.get(k["E"], 0) + 1
    assert max(per_tick.values()) <= 2 and len(per_tick) >= len(klines) // 2
    assert len(klines) < len(trades)  # the trades between two ticks are coalesced into one push
    # each kline holds every trade of its period received before it: its last trade is the last one received (in
    # its bar), its count spans its trade ids, and its close / high / low / volume are those trades'
    seen: dict[int, dict[str, Any]] = {}
    checked = 0
    for f in frames:
        if f["e"] == "aggTrade":
            seen[f["a"]] = f
            continue
        k = f["k"]
        assert k["n"] == k["L"] - k["f"] + 1
        in_bar = [t for i, t in sorted(seen.items()) if k["t"] <= t["E"] <= k["T"]]
        if in_bar:
            assert k["L"] == in_bar[-1]["a"] and k["c"] == in_bar[-1]["p"]
        if k["f"] in seen:  # every trade of the bar was received: the kline is exactly them
            mine = [seen[i] for i in range(k["f"], k["L"] + 1)]
            assert float(k["h"]) == max(float(t["p"]) for t in mine)
            assert float(k["l"]) == min(float(t["p"]) for t in mine)
            assert float(k["v"]) == pytest.approx(sum(float(t["q"]) for t in mine))
            checked += 1
    assert checked >= KLINES // 2
