"""Captured books -> the venue emulator's frames file, so a session can be re-run on identical input.

Reads ``caerus.books`` from a session's chDB store (FINAL: each captured book once) and rebuilds, per row, the
venue message that produced it: a Binance ``bookTicker`` (``u`` = seq, ``E`` = t_exchange in ms, prices and
quantities as strings) or a Hyperliquid ``bbo`` (``time`` = t_exchange in ms, both levels). Frames are written in
the emulator's replay format (caerus.sim.replay): ``{"venue", "t_ns", "frame"}`` per line, ``t_ns`` the offset from
the first frame, non-decreasing.

Pacing: ``exchange`` (default) orders and spaces frames by venue event time, ``recv`` by our receive time (what
the fleet actually experienced, including network jitter). Only books the feed published as VALID and not STALE
are replayed: a STALE record is the feed's own note that a connection dropped, not a venue message.

What the store does not keep is filled in, and documented: Binance ``T`` = ``E`` (match time is not captured);
Hyperliquid level order counts ``n`` = 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from caerus.wire import BookFlags

from .store import ChdbStore

PACINGS = ("exchange", "recv")


@dataclass(frozen=True)
class ReplayOptions:
    venues: Sequence[str] = ("binance", "hyperliquid")
    pace: str = "exchange"
    session: str | None = None
    binance_symbol: str = "BTCUSDT"
    hyperliquid_coin: str = "BTC"


def _num(x: float) -> str:
    """Positional decimal text, never scientific notation (what the venues send)."""
    return np.format_float_positional(x, trim="0")


def binance_frame(seq: int, e_ms: int, symbol: str, bid: float, bid_qty: float, ask: float, ask_qty: float) -> str:
    return json.dumps({"e": "bookTicker", "u": int(seq), "E": e_ms, "T": e_ms, "s": symbol, "b": _num(bid),
                       "B": _num(bid_qty), "a": _num(ask), "A": _num(ask_qty)}, separators=(",", ":"))


def hyperliquid_frame(t_ms: int, coin: str, bid: float, bid_qty: float, ask: float, ask_qty: float) -> str:
    return json.dumps({"channel": "bbo", "data": {"coin": coin, "time": t_ms, "bbo": [
        {"px": _num(bid), "sz": _num(bid_qty), "n": 1}, {"px": _num(ask), "sz": _num(ask_qty), "n": 1}]}},
        separators=(",", ":"))


def load_books(store: ChdbStore, opts: ReplayOptions) -> pd.DataFrame:
    if opts.pace not in PACINGS:
        raise ValueError(f"pace {opts.pace!r} is not one of {', '.join(PACINGS)}")
    bad = [v for v in opts.venues if v not in ("binance", "hyperliquid")]
    if bad:
        raise ValueError(f"unknown venue(s) {bad}: binance, hyperliquid")
    venues = ", ".join(f"'{v}'" for v in opts.venues)
    where = [f"venue IN ({venues})", f"bitAnd(flags, {int(BookFlags.VALID)}) != 0",
             f"bitAnd(flags, {int(BookFlags.STALE)}) = 0"]
    if opts.session is not None:
        where.append("session = '" + opts.session.replace("\\", "\\\\").replace("'", "\\'") + "'")
    order = "t_exchange, t_recv" if opts.pace == "exchange" else "t_recv, t_exchange"
    sql = (f"SELECT toString(venue) AS venue, seq, t_exchange, t_recv, bid_px, bid_qty, ask_px, ask_qty "
           f"FROM caerus.books FINAL WHERE {' AND '.join(where)} ORDER BY {order}, venue, seq")
    return store.query_df(sql)


def frames(books: pd.DataFrame, opts: ReplayOptions) -> Iterator[tuple[str, int, str]]:
    """(venue, t_ns, frame) per book row, in the order given."""
    if books.empty:
        return
    clock = books["t_exchange" if opts.pace == "exchange" else "t_recv"].to_numpy()
    t0 = int(clock[0])
    cols = [books[c].to_numpy() for c in ("venue", "seq", "t_exchange", "bid_px", "bid_qty", "ask_px", "ask_qty")]
    for i, (venue, seq, t_ex, bid, bq, ask, aq) in enumerate(zip(*cols, strict=True)):
        ms = int(t_ex) // 1_000_000
        if venue == "binance":
            text = binance_frame(seq, ms, opts.binance_symbol, bid, bq, ask, aq)
        else:
            text = hyperliquid_frame(ms, opts.hyperliquid_coin, bid, bq, ask, aq)
        yield venue, int(clock[i]) - t0, text
