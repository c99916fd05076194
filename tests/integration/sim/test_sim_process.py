"""`caerus venue-sim` as a real process (through the venue_sim fixtures): ready file, TLS files, scenarios,
replay pacing, SIGTERM and bad-config exits."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from caerus.recording import write_frames
from tests.fixtures.venue_sim import ROOT, VenueSim

pytestmark = pytest.mark.integration


def test_ready_file_tls_files_and_clean_sigterm(venue_sim: VenueSim) -> None:
    assert set(venue_sim) >= {"binance_url", "hyperliquid_url", "binance_order_url", "ca_file", "pid"}
    assert venue_sim["pid"] == venue_sim.proc.pid
    port = int(venue_sim["binance_url"].rsplit(":", 1)[1])
    assert venue_sim["binance_url"] == f"wss://127.0.0.1:{port}"
    assert venue_sim["binance_order_url"] == f"wss://127.0.0.1:{port}/ws-fapi/v1"
    cert_dir = Path(venue_sim["ca_file"]).parent
    assert stat.S_IMODE(os.stat(cert_dir / "server.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cert_dir / "ca.key").st_mode) == 0o600

    async def one_frame() -> dict:
        url = venue_sim["binance_url"] + "/public/ws/btcusdt@bookTicker"
        async with connect(url, ssl=venue_sim.ssl_context()) as ws:
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    assert asyncio.run(one_frame())["e"] == "bookTicker"
    ready_file = venue_sim.log.parent / "ready.json"
    assert ready_file.exists()
    assert venue_sim.stop() == 0
    assert not ready_file.exists()
    assert '"opened": 1' in venue_sim.output()  # connection counts logged at exit


def test_scenario_reaches_the_process(venue_sim_factory: Any) -> None:
    sim = venue_sim_factory(scenario="http-429", args=["--scenario-times", "1"])

    async def attempts() -> list[int]:
        codes = []
        for _ in range(2):
            try:
                async with connect(sim["hyperliquid_url"] + "/ws", ssl=sim.ssl_context()):
                    codes.append(101)
            except InvalidStatus as exc:
                codes.append(exc.response.status_code)
        return codes

    assert asyncio.run(attempts()) == [429, 101]


def test_replay_plays_frames_in_order_to_matching_subscribers(tmp_path: Path, venue_sim_factory: Any) -> None:
    step = 150_000_000  # 150 ms between recorded frames
    recorded = [
        ("binance", 0, '{"e":"bookTicker","u":1,"E":1000,"T":999,"s":"BTCUSDT","b":"1.0","B":"1","a":"2.0","A":"1"}'),
        ("hyperliquid", step, '{"channel":"bbo","data":{"coin":"BTC","time":1100,"bbo":[null,null]}}'),
        ("binance", 2 * step, '{"stream":"btcusdt@bookTicker","data":{"e":"bookTicker","u":2,"E":1200,"T":1199,'
                              '"s":"BTCUSDT","b":"1.0","B":"1","a":"2.0","A":"1"}}'),
        ("hyperliquid", 3 * step, "Websocket connection established."),
        ("binance", 4 * step, '{"e":"aggTrade","E":1400,"s":"BTCUSDT","a":1,"p":"1.0","q":"1"}'),
        ("binance", 5 * step, '{"e":"bookTicker","u":3,"E":1500,"T":1499,"s":"BTCUSDT","b":"1.0","B":"1",'
                              '"a":"2.0","A":"1"}'),
        ("hyperliquid", 6 * step, '{"channel":"bbo","data":{"coin":"BTC","time":1600,"bbo":[null,null]}}'),
    ]
    path = tmp_path / "frames.jsonl"
    write_frames(path, recorded)
    sim = venue_sim_factory(args=["--replay", str(path)])

    async def collect() -> list[tuple[int, str, Any]]:
        got: list[tuple[int, str, Any]] = []
        ctx = sim.ssl_context()
        async with connect(sim["binance_url"] + "/public/stream?streams=btcusdt@bookTicker", ssl=ctx) as bn, \
                connect(sim["hyperliquid_url"] + "/ws", ssl=ctx) as hl:
            await hl.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": "BTC"}}))
            assert json.loads(await hl.recv())["channel"] == "subscriptionResponse"

            async def pump(ws: Any, venue: str, n: int) -> None:
                for _ in range(n):
                    text = await asyncio.wait_for(ws.recv(), 15)
                    got.append((time.monotonic_ns(), venue, text))

            await asyncio.gather(pump(bn, "binance", 3), pump(hl, "hyperliquid", 3))
            extra = await asyncio.gather(*(asyncio.wait_for(ws.recv(), 0.5) for ws in (bn, hl)),
                                         return_exceptions=True)
            assert all(isinstance(e, TimeoutError) for e in extra), extra  # aggTrade was not subscribed
        return sorted(got)

    got = asyncio.run(collect())
    venues = [v for _, v, _ in got]
    assert venues == ["binance", "hyperliquid", "binance", "hyperliquid", "binance", "hyperliquid"]
    bn = [json.loads(t) for _, v, t in got if v == "binance"]
    assert [m["stream"] for m in bn] == ["btcusdt@bookTicker"] * 3  # combined subscriber gets the wrapper
    assert [m["data"]["u"] for m in bn] == [1, 2, 3]  # verbatim payloads, recorded timestamps kept
    assert [m["data"]["E"] for m in bn] == [1000, 1200, 1500]
    assert [t for _, v, t in got if v == "hyperliquid"][1] == "Websocket connection established."


def test_replay_retime_keeps_the_recorded_spacing_and_is_never_early(tmp_path: Path,
                                                                     venue_sim_factory: Any) -> None:
    step_ms = 120
    recorded = [("binance", i * step_ms * 1_000_000,
                 f'{{"e":"bookTicker","u":{i},"E":5,"T":4,"s":"BTCUSDT","b":"1.0","B":"1","a":"2.0","A":"1"}}')
                for i in range(8)]
    path = tmp_path / "frames.jsonl"
    write_frames(path, recorded)
    sim = venue_sim_factory(args=["--replay", str(path), "--replay-retime"])

    async def collect() -> list[tuple[int, dict]]:
        url = sim["binance_url"] + "/public/ws/btcusdt@bookTicker"
        out = []
        async with connect(url, ssl=sim.ssl_context()) as ws:
            for _ in recorded:
                text = await asyncio.wait_for(ws.recv(), 15)
                out.append((time.time_ns(), json.loads(text)))
        return out

    got = asyncio.run(collect())
    assert [m["u"] for _, m in got] == list(range(8))
    sched = [m["E"] for _, m in got]  # retimed: the scheduled send time in ms
    assert all(abs((b - a) - step_ms) <= 1 for a, b in itertools.pairwise(sched))  # recorded pacing kept
    assert all(t_recv // 1_000_000 >= m["E"] for t_recv, m in got)  # never sent ahead of its schedule
    assert all(m["T"] == m["E"] - 1 for _, m in got)


def test_bad_config_exits_2_before_starting(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cert_dir = tmp_path / "certs"
    res = subprocess.run([sys.executable, "-m", "caerus", "venue-sim", "--cert-dir", str(cert_dir),
                          "--scenario", "bogus"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert res.returncode == 2
    assert "unknown scenario 'bogus'" in res.stderr
    assert not cert_dir.exists()  # nothing was started or written
    listing = subprocess.run([sys.executable, "-m", "caerus", "venue-sim", "--list-scenarios"],
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert listing.returncode == 0 and "slow-drip" in listing.stdout


def test_the_emulator_writes_its_lateness_for_every_top_of_book_frame_it_sends(venue_sim_factory: Any,
                                                                                tmp_path: Path) -> None:
    """``--metrics-dir``: one lateness sample (actual send - scheduled exchange time) per bookTicker / bbo frame
    sent to a subscriber, in ``venue-sim.hlog`` (what the session merges next to the feeds' information age)."""
    from caerus.metrics.summary import load_metrics

    metrics = tmp_path / "metrics"
    sim = venue_sim_factory(args=["--metrics-dir", str(metrics)])
    received = {"binance": 0, "hyperliquid": 0}

    async def listen() -> None:
        ctx = sim.ssl_context()
        async with connect(sim["binance_url"] + "/public/ws/btcusdt@bookTicker", ssl=ctx) as bn, \
                connect(sim["hyperliquid_url"] + "/ws", ssl=ctx) as hl:
            await hl.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": "BTC"}}))
            deadline = time.monotonic() + 3.0

            async def count(ws: Any, venue: str, kind: str) -> None:
                while time.monotonic() < deadline:
                    try:
                        raw = await asyncio.wait_for(ws.recv(), max(0.01, deadline - time.monotonic()))
                    except TimeoutError:
                        return
                    if kind in raw:
                        received[venue] += 1

            await asyncio.gather(count(bn, "binance", '"bookTicker"'), count(hl, "hyperliquid", '"channel":"bbo"'))

    asyncio.run(listen())
    assert sim.stop() == 0  # SIGTERM: the last second's samples are written on the way out
    sm = load_metrics(metrics)
    n = {venue: sm.metrics[f"emulator_lateness.{venue}"].stats()["n"] for venue in received}
    # Every scheduled frame a subscriber got has its sample (frames sent after our client stopped reading add a
    # few more); Hyperliquid's first bbo answers the subscription from the current block, off the schedule.
    assert received["binance"] > 10 and received["hyperliquid"] > 3, received
    assert n["binance"] >= received["binance"] and n["hyperliquid"] >= received["hyperliquid"] - 1, (n, received)
