"""A store written by today's capture process (rings -> `caerus capture` -> chDB under a session folder) reads back
through caerus.data: every record once, named by the session's instruments.json, a withdrawn side NaN as published,
and aligned as the reference says."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from caerus import data
from caerus import instruments as inst_mod
from tests.fixtures.capture_rings import CaptureProcess, SessionRings, wait_counters
from tests.fixtures.data_books import BN, HAND, HL, INSTRUMENTS, T, reference_aligned
from tests.kit import records


def test_store_written_by_capture_reads_back(session_rings: SessionRings, tmp_path: Path) -> None:
    rings = session_rings
    sid = rings.sid
    names = [f"{sid}.book.binance", f"{sid}.book.hyperliquid"]
    rings.create(*names)
    ring_of = {BN: rings.writers[names[0]], HL: rings.writers[names[1]]}
    for venue, sym, seq, off, bid, ask, flags, reason, t_wire in HAND:
        ring_of[venue].publish(*records.book(venue, bid, ask, T + off, flags=flags, seq=seq, symbol=sym,
                                             reason=reason, t_wire=t_wire, bid_qty=1.5, ask_qty=2.5))
    folder = tmp_path / "session"
    folder.mkdir()
    inst_mod.save(INSTRUMENTS, folder / inst_mod.FILE_NAME)
    args = [a for n in names for a in ("--segment", n)]
    cap = CaptureProcess([*args, "--store", str(folder / "capture"), "--stats-segment", f"{sid}.stats.capture"],
                         tmp_path / "capture.log")
    try:
        wait_counters(f"{sid}.stats.capture", lambda s: s["rows.books"] == len(HAND), proc=cap)
    finally:
        rc = cap.stop()
    assert rc == 0, cap.output()

    books = data.books(folder)
    assert len(books) == len(HAND)
    assert set(books["session"]) == {sid}
    assert sorted(zip(books["venue"].astype(str), books["symbol"].astype(str), books["seq"], strict=True)) == sorted(
        ({BN: "binance", HL: "hyperliquid"}[v], INSTRUMENTS[s].name, q) for v, s, q, *_ in HAND)
    withdrawn = books[(books["venue"] == "hyperliquid") & (books["seq"] == 4)]
    assert len(withdrawn) == 1 and math.isnan(withdrawn["bid_px"].iloc[0])  # published NaN, stored NaN (not 0.0)
    assert withdrawn["ask_px"].iloc[0] == 100.8
    aligned = data.aligned(folder)
    want = reference_aligned(HAND, BN)
    assert aligned["seq"].tolist() == [w["seq"] for w in want]
    assert [None if v is pd.NA else v for v in aligned["other_seq"]] == [w["other_seq"] for w in want]
    s = data.sessions(folder)
    assert int(s["rows"].sum()) == len(HAND)

