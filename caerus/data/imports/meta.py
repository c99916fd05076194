"""Reading an imported store's record (``<store>/import.json``) back: what each file and market was, and receive
times put on the venue's clock.

Receive times are stored as measured. A reader comparing receive times with venue times (information age, a lead
measured on receive times across recorders) subtracts the receive clock's offset: :func:`recv_on_venue_clock`
gives ``t_recv - clock_offset_ns`` of each row's own file (found by the row's ``conn``, the file number).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .records import ImportRefused

#: the import's record, beside the store it filled
META_NAME = "import.json"


def load_meta(store: Path | str) -> dict[str, Any]:
    """``<store>/import.json`` (or a folder's ``capture/import.json``); ImportRefused naming what is missing."""
    path = Path(store)
    for candidate in (path / META_NAME, path / "capture" / META_NAME, path.parent / META_NAME):
        if candidate.is_file():
            try:
                return dict(json.loads(candidate.read_text()))
            except ValueError as exc:
                raise ImportRefused(f"{candidate}: not JSON ({exc})") from None
    raise ImportRefused(f"{path}: no {META_NAME} (not a store made by caerus data import)")


def offsets_by_conn(meta: dict[str, Any]) -> dict[int, int]:
    """File number (a row's ``conn``) -> that file's clock_offset_ns."""
    return {int(f["n"]): int(f["clock_offset_ns"]) for f in meta["files"] if f.get("clock_offset_ns") is not None}


def recv_on_venue_clock(t_recv: np.ndarray, conn: np.ndarray, store: Path | str) -> np.ndarray:
    """``t_recv`` of each row minus its file's receive-clock offset: the receive time on the venue's clock."""
    offsets = offsets_by_conn(load_meta(store))
    conn = np.asarray(conn, dtype=np.int64)
    missing = sorted(set(np.unique(conn).tolist()) - set(offsets))
    if missing:
        raise ImportRefused(f"{store}: rows of file(s) {missing} have no clock offset in {META_NAME}")
    lut = np.zeros(max(offsets, default=0) + 1, dtype=np.int64)
    for n, off in offsets.items():
        lut[n] = off
    return np.asarray(t_recv, dtype=np.int64) - lut[conn]


def describe_markets(store: Path | str) -> str | None:
    """One line naming the real market behind each venue slot of an imported store (None: not an imported store),
    for reports to print beside their results: ``leader (slot binance): binance usdm BTCUSDT as BTC; follower
    (slot hyperliquid): binance coinm BTCUSD_PERP as BTC``."""
    try:
        meta = load_meta(store)
    except ImportRefused:
        return None
    parts = [f"{m['role']} (slot {m['slot']}): {m['venue']} {m['product']} {m['symbol']} as {m['instrument']}"
             + (f" [session {m['session']}]" if m["session"] != "import" else "") for m in meta.get("markets", [])]
    return "; ".join(parts) if parts else None
