"""Marks and funding over the emulator's own ports (issue 33): the desk's bands and positions, the Binance
``markPrice`` stream and ``premiumIndex`` / ``fundingRate`` and Hyperliquid's ``metaAndAssetCtxs`` /
``fundingHistory`` all show one mark, premium and funding rate per instrument (caerus.sim.core.marks). Bounded waits, no
timed assertion."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from caerus.sim import orders
from caerus.sim.core import frames
from caerus.sim.core.market import MarketConfig
from caerus.sim.core.marks import Marks
from caerus.sim.emulator import VenueEmulator
from tests.integration.sim.simclient import config, open_ws, recv_json, run_with
from tests.integration.sim.test_sim_rest import get, http, post

pytestmark = pytest.mark.integration

WAIT_S = 20.0  # bound for the first premium sample (5 s of model time) and frames; never reached when healthy


async def _steady(marks: Marks, read: Any) -> Any:
    """``read()`` (a REST call) answered between two premium samples, so its rate is the marks' (bounded tries)."""
    for _ in range(10):
        n = marks._n, marks.interval
        got = await read()
        if (marks._n, marks.interval) == n:
            return got
    raise AssertionError("a premium sample landed during every one of 10 reads")


def test_one_mark_and_funding_across_streams_rest_and_desk(tmp_path: Path) -> None:
    async def body(emu: VenueEmulator, ctx: ssl.SSLContext) -> dict[str, Any]:
        drv: Any = emu.driver
        bm, hm = drv.binance_marks_of("ETHUSDT"), drv.hl_marks_of("ETH")
        deadline = time.monotonic() + WAIT_S
        while (bm.interval is None or hm.interval is None) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        out: dict[str, Any] = {"sampled": bm.interval is not None and hm.interval is not None}
        # the desk reads the driver's marks (bands, positions): checked with no await in between
        out["desk"] = [(orders.mark("binance", "ETH"), bm.mark), (orders.mark("hyperliquid", "ETH"), hm.mark)]
        async with open_ws(emu, "binance", "/market/ws/ethusdt@markPrice@1s", ctx) as ws:
            for _ in range(10):  # a frame sent after the last premium sample carries the current rate
                frame = await recv_json(ws, WAIT_S)
                if frame["E"] > bm.sampled_ms:
                    break
            out["stream"] = (frame, bm.sampled_ms, f"{bm.rate:.8f}")

        async def premium() -> Any:
            return json.loads((await http(emu, "binance", ctx, get("/fapi/v1/premiumIndex?symbol=ETHUSDT")))[1])

        async def ctxs() -> Any:
            raw = post("/info", json.dumps({"type": "metaAndAssetCtxs"}).encode(),
                       "Content-Type: application/json\r\n")
            meta, assets = json.loads((await http(emu, "hyperliquid", ctx, raw))[1])
            return assets[[a["name"] for a in meta["universe"]].index("ETH")]

        out["premium"] = (await _steady(bm, premium), f"{bm.rate:.8f}")
        out["ctx"] = (await _steady(hm, ctxs), frames.hl_rate(hm.rate), frames.hl_rate(hm.premium))
        # an interval ends: its predicted rate settles into both venues' histories
        predicted = (bm.rate, hm.rate)
        bm.sample((bm.interval + 1) * bm.rules.interval_ms)
        hm.sample((hm.interval + 1) * hm.rules.interval_ms)
        settled = (bm.history[0], hm.history[0])
        rates = json.loads((await http(emu, "binance", ctx, get("/fapi/v1/fundingRate?symbol=ETHUSDT")))[1])
        raw = post("/info", json.dumps({"type": "fundingHistory", "coin": "ETH", "startTime": 0,
                                        "endTime": settled[1].time_ms}).encode(),
                   "Content-Type: application/json\r\n")
        history = json.loads((await http(emu, "hyperliquid", ctx, raw))[1])
        out["settled"] = (predicted, settled, rates, history)
        return out

    out = run_with(config(tmp_path, market=MarketConfig(symbols=("BTC", "ETH"))), body)
    assert out["sampled"]
    assert all(desk == model and model is not None for desk, model in out["desk"])
    frame, sampled_ms, rate = out["stream"]
    assert frame["E"] > sampled_ms  # sent after the last sample (and before the next: none since)
    assert frame["e"] == "markPriceUpdate" and frame["s"] == "ETHUSDT" and frame["r"] == rate
    assert 1_000 < float(frame["p"]) < 10_000 and float(frame["i"]) > 0
    premium, rate = out["premium"]
    assert premium["lastFundingRate"] == rate and premium["nextFundingTime"] % 28_800_000 == 0
    ctx, hl_rate, hl_premium = out["ctx"]
    assert ctx["funding"] == hl_rate and ctx["premium"] == hl_premium
    assert float(ctx["oraclePx"]) > 0 and float(ctx["markPx"]) > 0
    (bn_pred, hl_pred), (bn_settled, hl_settled), rates, history = out["settled"]
    assert bn_settled.rate == bn_pred and hl_settled.rate == hl_pred
    assert {"symbol": "ETHUSDT", "fundingTime": bn_settled.time_ms, "fundingRate": f"{bn_pred:.8f}",
            "markPrice": f"{bn_settled.mark:.2f}"} in rates
    assert {"coin": "ETH", "fundingRate": frames.hl_rate(hl_pred), "premium": frames.hl_rate(hl_settled.premium),
            "time": hl_settled.time_ms} in history
