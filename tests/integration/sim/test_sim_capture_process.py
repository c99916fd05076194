"""`caerus venue-sim --replay CAPTURE.gz` as a real process: a real Binance capture served over TLS.

The fixture is 12 s of real USD-M BTCUSDT (bookTicker and trade lines of hftbacktest's recording, MIT). A client
subscribed like the fleet's feed (combined stream) and to Hyperliquid's bbo checks, against the file: every frame
in file order with nothing skipped, each the venue's own text with only E/T retimed, the recorded spacing kept in
the exchange times, never sent before its schedule; the Hyperliquid side following the real mid; the ready file
and venue-sim.replay.json naming what was replayed; bad captures refused with exit 2 before anything starts.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.fixtures.venue_sim import ROOT

pytestmark = pytest.mark.integration

REAL = ROOT / "tests" / "fixtures" / "data" / "real"
SLICE = REAL / "usdm_btcusdt_20240808_12s.gz"
FRAMES = 700  # ~3 s of the capture (bookTicker and trade frames)


def _file() -> list[tuple[int, str]]:
    """(receive ns, frame text) of every line, read apart from the emulator's reader."""
    out = []
    for line in gzip.decompress(SLICE.read_bytes()).decode().splitlines():
        ts, _, frame = line.partition(" ")
        out.append((int(ts), frame))
    return out


def test_a_real_capture_is_served_in_order_at_its_pace_with_the_venue_text(venue_sim_factory: Any,
                                                                           tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    sim = venue_sim_factory(args=["--replay", str(SLICE), "--metrics-dir", str(metrics)])
    assert sim["symbols"] == ["BTC"]
    cap = sim["capture"]
    assert (cap["venue"], cap["product"], cap["symbols"]) == ("binance", "usdm", ["BTCUSDT"])
    assert cap["hyperliquid"]["real"] is False and cap["hyperliquid"]["settings"]["hl_lag_ms"] == 650.0

    async def collect() -> tuple[list[tuple[int, str]], list[dict]]:
        ctx = sim.ssl_context()
        got: list[tuple[int, str]] = []
        bbo: list[dict] = []
        url = sim["binance_url"] + "/public/stream?streams=btcusdt@bookTicker/btcusdt@trade"
        async with connect(url, ssl=ctx) as bn, connect(sim["hyperliquid_url"] + "/ws", ssl=ctx) as hl:
            await hl.send(json.dumps({"method": "subscribe", "subscription": {"type": "bbo", "coin": "BTC"}}))

            async def binance() -> None:
                while len(got) < FRAMES:
                    text = await asyncio.wait_for(bn.recv(), 15)
                    got.append((time.time_ns(), str(text)))

            async def hyperliquid() -> None:
                while len(got) < FRAMES:
                    try:
                        msg = json.loads(await asyncio.wait_for(hl.recv(), 1))
                    except TimeoutError:
                        continue
                    if msg["channel"] == "bbo":
                        bbo.append(msg["data"])

            await asyncio.gather(binance(), hyperliquid())
        return got, bbo

    got, bbo = asyncio.run(asyncio.wait_for(collect(), 60))
    want = _file()[:FRAMES]
    first_recv = want[0][0]
    e0 = None
    for (t_client, text), (t_recv, frame) in zip(got, want, strict=True):
        sent, recorded = json.loads(text), json.loads(frame)
        assert sent["stream"] == recorded["stream"]  # in file order, nothing skipped or added
        data, rec = sent["data"], recorded["data"]
        # the venue's own frame: every field as recorded but the exchange times, byte for byte
        assert text == frame.replace(f'"E":{rec["E"]}', f'"E":{data["E"]}').replace(
            f'"T":{rec["T"]}', f'"T":{data["T"]}')
        assert data["T"] - data["E"] == rec["T"] - rec["E"]
        e0 = data["E"] if e0 is None else e0
        # E is the scheduled send time in ms: the recorded receive spacing (ms rounding), and never ahead of it
        assert abs((data["E"] - e0) - (t_recv - first_recv) / 1e6) < 1.0
        assert t_client // 1_000_000 >= data["E"]
    mids = [(float(json.loads(f)["data"]["b"]) + float(json.loads(f)["data"]["a"])) / 2 for _, f in want
            if "@bookTicker" in f]
    assert bbo, "no Hyperliquid bbo while the capture played"
    for b in bbo:  # modelled from the real mid (the catalogue's BTC start is 95,000: not following would show)
        hl_mid = (float(b["bbo"][0]["px"]) + float(b["bbo"][1]["px"])) / 2
        assert min(mids) * 0.995 < hl_mid < max(mids) * 1.005
    assert sim.stop() == 0
    played = json.loads((metrics / "venue-sim.replay.json").read_text())["played"]
    assert played["first_recv_ns"] == first_recv and played["frames_served"] >= FRAMES
    assert played["counts"]["served.bookTicker"] >= sum(1 for _, f in want if "@bookTicker" in f)


@pytest.mark.parametrize(("args", "problem"), [
    (["--replay", str(REAL / "spot_btcusdt_20240808_head.gz")], "Binance spot frames"),
    (["--replay", str(SLICE), "--symbols", "ETH"], "the capture holds BTCUSDT"),
    (["--replay", str(SLICE), "--binance-rate", "50"], "--binance-rate sets the model's Binance side"),
])
def test_what_cannot_be_replayed_exits_2_before_starting(tmp_path: Path, args: list[str], problem: str) -> None:
    cert_dir = tmp_path / "certs"
    res = subprocess.run([sys.executable, "-m", "caerus", "venue-sim", "--cert-dir", str(cert_dir), *args],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                         timeout=60, check=False)
    assert res.returncode == 2, res.stderr
    assert problem in res.stderr
    assert not cert_dir.exists()
