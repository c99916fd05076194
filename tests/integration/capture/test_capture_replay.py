"""Captured session -> frames file the venue emulator plays: venue-format messages at the original pacing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from caerus.records.book import (
    BOOK_ASK_PX,
    BOOK_ASK_QTY,
    BOOK_BID_PX,
    BOOK_BID_QTY,
    BOOK_FLAGS,
    BOOK_SEQ,
    BOOK_T_EXCHANGE,
    BOOK_T_RECV,
)
from caerus.sim.core.replay import read_frames
from caerus.venues.binance import data as binance
from caerus.venues.hyperliquid import data as hyperliquid
from caerus.wire import BookFlags
from tests.fixtures.capture_rings import REPO, CaptureProcess, SessionRings, book, wait_counters


def _replay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caerus", "replay", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_replay_rebuilds_venue_frames_in_exchange_time_order(session_rings: SessionRings, tmp_path: Path) -> None:
    rings = session_rings
    sid = rings.sid
    rings.create(f"{sid}.book.binance", f"{sid}.book.hyperliquid")
    published = {"binance": [], "hyperliquid": []}
    for i in range(200):
        b = book(1, i)
        rings.writers[f"{sid}.book.binance"].publish(*b)
        published["binance"].append(b)
        # Hyperliquid event time lags Binance's by 2.5 ms: the file must interleave the venues by event time.
        h = list(book(2, i))
        h[BOOK_T_EXCHANGE] += 2_500_000
        rings.writers[f"{sid}.book.hyperliquid"].publish(*h)
        published["hyperliquid"].append(tuple(h))
    stale = list(book(1, 500))
    stale[BOOK_FLAGS] = int(BookFlags.STALE)  # the feed's own "connection dropped" note: not a venue message
    rings.writers[f"{sid}.book.binance"].publish(*stale)
    store = tmp_path / "session"
    cap = CaptureProcess(["--segment", f"{sid}.book.binance", "--segment", f"{sid}.book.hyperliquid", "--store",
                          str(store), "--stats-segment", f"{sid}.stats.capture"], tmp_path / "capture.log")
    try:
        wait_counters(f"{sid}.stats.capture", lambda s: s["rows.books"] == 401, proc=cap)
    finally:
        assert cap.stop() == 0, cap.output()

    out = tmp_path / "frames.jsonl"
    r = _replay("--store", str(store), "--out", str(out))
    assert r.returncode == 0, r.stderr
    frames = read_frames(out)  # the emulator's own loader accepts the file
    assert len(frames) == 400
    assert frames[0].t_ns == 0
    venues = [f.venue for f in frames]
    assert venues[:3] == ["binance", "binance", "binance"] and "hyperliquid" in venues[:10]
    got_b = [binance.DATA_DECODER.decode(f.frame) for f in frames if f.venue == "binance"]
    got_h = [hyperliquid.DECODER.decode(f.frame) for f in frames if f.venue == "hyperliquid"]
    assert [m.u for m in got_b] == [b[BOOK_SEQ] for b in published["binance"]]
    assert [(m.E, m.b, m.B, m.a, m.A) for m in got_b] == [
        (b[BOOK_T_EXCHANGE] // 1_000_000, b[BOOK_BID_PX], b[BOOK_BID_QTY], b[BOOK_ASK_PX], b[BOOK_ASK_QTY])
        for b in published["binance"]]
    assert [(m.data.coin, m.data.time, m.data.bbo[0].px, m.data.bbo[1].sz) for m in got_h] == [
        ("BTC", h[BOOK_T_EXCHANGE] // 1_000_000, h[BOOK_BID_PX], h[BOOK_ASK_QTY])
        for h in published["hyperliquid"]]
    # Pacing: offsets are the exchange-time differences.
    first_h = next(f for f in frames if f.venue == "hyperliquid")
    assert first_h.t_ns == published["hyperliquid"][0][BOOK_T_EXCHANGE] - published["binance"][0][BOOK_T_EXCHANGE]

    only = tmp_path / "hl.jsonl"
    r = _replay("--store", str(store), "--out", str(only), "--venue", "hyperliquid", "--pace", "recv")
    assert r.returncode == 0, r.stderr
    hl = read_frames(only)
    assert {f.venue for f in hl} == {"hyperliquid"} and len(hl) == 200
    assert hl[1].t_ns == published["hyperliquid"][1][BOOK_T_RECV] - published["hyperliquid"][0][BOOK_T_RECV]


def test_replay_without_a_store_is_a_clear_error(tmp_path: Path) -> None:
    r = _replay("--store", str(tmp_path / "nothing"), "--out", str(tmp_path / "f.jsonl"))
    assert r.returncode == 2 and "no chDB store" in r.stderr
