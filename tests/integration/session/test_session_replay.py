"""Real sessions on a real market and in record mode (``python -m caerus session``, real processes on loopback).

Replay: ``--market replay:<12 s of real USD-M BTCUSDT>`` runs the whole fleet (venue-sim playing the capture,
both feeds, strategy, execution, capture) for a few seconds; the captured store holds the capture's own books (the
same update ids and prices, in the file's order, from its first frame), the Hyperliquid books follow the real mid,
and the report names the market: real Binance (venue, product, symbol, file, date), modelled Hyperliquid.

Record: ``caerus record --emulator`` runs the feeds and capture only; the store holds both venues' books, nothing
traded, and the summary says how fast the store grew.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import caerus.data
from caerus.wire import BookFlags

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SLICE = ROOT / "tests" / "fixtures" / "data" / "real" / "usdm_btcusdt_20240808_12s.gz"


def _run(out: Path, shm: Path, *argv: str) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)}
    res = subprocess.run([sys.executable, "-m", "caerus", *argv, "--out", str(out), "--progress", "lines",
                          "--stop-grace", "15"], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert res.returncode == 0, f"failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    found = [p for p in out.iterdir() if p.is_dir() and p.name != "reports"]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def shm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = Path("/dev/shm") / f"caerus-test-replay-{os.getpid()}"
    path.mkdir(exist_ok=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def replay_session(tmp_path_factory: pytest.TempPathFactory, shm: Path) -> Path:
    base = tmp_path_factory.mktemp("replay")
    return _run(base / "sessions", shm, "session", "--market", f"replay:{SLICE}", "--duration", "8", "--reports",
                str(base / "reports"))


def _book_tickers() -> list[tuple[int, float, float, float, float]]:
    out = []
    for line in gzip.decompress(SLICE.read_bytes()).decode().splitlines():
        frame = json.loads(line.partition(" ")[2])
        if frame["stream"].endswith("@bookTicker"):
            d = frame["data"]
            out.append((d["u"], float(d["b"]), float(d["B"]), float(d["a"]), float(d["A"])))
    return out


def test_the_whole_fleet_ran_on_the_replayed_market(replay_session: Path) -> None:
    summary = json.loads((replay_session / "summary.json").read_text())
    statuses = {n: p["status"] for n, p in summary["processes"].items()}
    assert statuses == dict.fromkeys(("venue-sim", "capture", "execution", "strategy", "feed-binance",
                                      "feed-hyperliquid"), "ok"), statuses
    argv = " ".join((replay_session / "logs" / "venue-sim.log").read_text().splitlines()[0].split())
    assert f"--replay {SLICE}" in argv and "--market default" in argv


def test_the_capture_holds_the_real_books_from_the_first_frame(replay_session: Path) -> None:
    df = caerus.data.books(replay_session, frame="pandas")
    df = df[(df["flags"].astype(int) & int(BookFlags.VALID)) != 0]  # a feed stopped at the end writes STALE
    bn = df[df.venue == "binance"]
    stored = list(zip(bn.seq.astype(int), bn.bid_px, bn.bid_qty, bn.ask_px, bn.ask_qty, strict=True))
    real = _book_tickers()
    # the replay starts once the feeds subscribed: the store holds the capture from its first frame, in order,
    # nothing skipped, with the venue's update ids, prices and sizes
    assert len(stored) >= 200
    assert stored == real[:len(stored)]
    hl = df[df.venue == "hyperliquid"]
    assert len(hl) >= 10
    lo, hi = min(b for _, b, _, _, _ in real), max(a for _, _, _, a, _ in real)
    mids = (hl.bid_px + hl.ask_px) / 2
    assert (mids > lo * 0.995).all() and (mids < hi * 1.005).all()  # the modelled follower of the real mid


def test_the_report_names_the_market(replay_session: Path) -> None:
    report = (replay_session / "report.md").read_text()
    opening, _, rest = report.partition("## The session")
    header = rest.split("\n## ", 1)[0]
    # the opening section names the market as the session's header does: real Binance, modelled Hyperliquid
    assert "REPLAY: Binance REAL (binance usdm BTCUSDT" in opening and "Hyperliquid MODELLED" in opening
    for text in ("REPLAY of a real capture", "Binance REAL, Hyperliquid MODELLED", "binance usdm BTCUSDT",
                 SLICE.name, "recorded 2024-08-08 23:54:15 UTC", "played 2024-08-08 23:54:15 UTC",
                 "| Hyperliquid (modelled) | market `default`, seed 1: follower", "hl_lag_ms 650",
                 "1,268.8 ms behind the venue's"):
        assert text in header, text
    env = json.loads((replay_session / "env.json").read_text())
    market = env["market"]
    assert market["kind"] == "replay" and market["binance"]["real"] is True
    assert market["hyperliquid"]["real"] is False and market["hyperliquid"]["market"] == "default"
    assert market["played"]["frames"] >= 200


def test_record_mode_runs_the_feeds_and_capture_only(tmp_path: Path, shm: Path) -> None:
    d = _run(tmp_path / "recordings", shm, "record", "--emulator", "--duration", "6")
    summary = json.loads((d / "summary.json").read_text())
    assert set(summary["processes"]) == {"venue-sim", "capture", "feed-binance", "feed-hyperliquid"}
    assert all(p["status"] == "ok" for p in summary["processes"].values())
    assert summary["options"]["record"] is True
    df = caerus.data.books(d, frame="pandas")
    assert set(df.venue.unique()) == {"binance", "hyperliquid"}
    assert not (d / "paper.json").exists() and "strategy" not in summary["counters"]
    store = summary["capture_store"]
    assert 0 < store["bytes"] <= store["peak_bytes"] and store["mb_per_hour"] > 0
    assert not any("No samples for" in c for c in summary["caveats"])  # no strategy: its metrics are not missing
    assert any("Record mode" in c for c in summary["caveats"])
