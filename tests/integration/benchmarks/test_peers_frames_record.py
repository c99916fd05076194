"""The side-by-side benchmark's input is the venue emulator's own output: benchmarks.peers.frames.record starts a real
`caerus venue-sim` on loopback TLS, subscribes as the peers do, and writes frames that load back as documented
bookTicker (combined stream) and bbo frames, each raw frame the combined frame's payload."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.peers import feed_decode, frames


def test_record_writes_the_emulators_frames_for_both_venues(tmp_path: Path) -> None:
    path = tmp_path / "frames.jsonl"
    fr = frames.record(path, 25, timeout_s=90, seed=5, n_depth=5)
    assert len(fr.binance_combined) == 25 and len(fr.hyperliquid) == 24  # the first HL frame: the subscription reply
    assert fr == frames.load(path)  # what was returned is what was written
    assert len(fr.binance_depth_combined) == 5  # no more than asked is kept
    for raw in fr.binance_raw:
        m = json.loads(raw)
        assert m["e"] == "bookTicker" and m["s"] == "BTCUSDT" and isinstance(m["b"], str) and isinstance(m["a"], str)
    for f in fr.hyperliquid:
        m = json.loads(f)
        assert m["channel"] == "bbo" and m["data"]["coin"] == "BTC" and len(m["data"]["bbo"]) == 2
    for venue, src in (("binance", fr.binance_raw), ("hyperliquid", fr.hyperliquid),
                       ("binance_depth", fr.binance_depth_raw)):
        books = feed_decode.reference_values(src, venue)
        assert all(bid < ask for bid, ask in books), venue  # live books, never crossed
