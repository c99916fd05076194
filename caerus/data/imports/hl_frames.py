"""One Hyperliquid WebSocket frame -> a book candidate, a clock sample, counts: shared by the recordings that carry
Hyperliquid's frames (hftbacktest's collector, Hyperliquid's own archive).

Decoded with the live feed's types (caerus.venues.hyperliquid.data: ``L2Book``, ``Bbo``), plus ``Trades``, which the
feed does not subscribe. l2Book's top level is the book (DEPTH-flagged, as the feed flags it); an empty side is
NULL_SIDE; block ``time`` is the venue time. Trades are counted, and give no clock sample: the first trades message
after subscribing repeats older prints. A frame the decoder refuses is classified as the feed classifies it.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

import msgspec

from caerus.venuekit.book_rules import MALFORMED, NULL_SIDE
from caerus.venuekit.frames import FrameKind
from caerus.venues.hyperliquid import data as hl

from .records import MISSING, Builder

_NAN = float("nan")
_decode = hl.RECORDED_DECODER.decode
_L2, _BBO, _TRADES = hl.L2Book, hl.Bbo, hl.Trades


class Symbols(Protocol):
    symbols: list[str]
    _index: dict[str, int]

    def _sym(self, s: str) -> int: ...


def hl_frame(r: Symbols, frame: bytes, t_recv: int, b: Builder, clock: list[int], counts: Counter[str]) -> None:
    try:
        m = _decode(frame)
    except msgspec.DecodeError:
        _refused(r, frame, t_recv, b, counts)
        return
    tm = type(m)
    if tm is _L2 or tm is _BBO:
        d = m.data
        if tm is _L2:
            bids, asks = d.levels
            bid = bids[0] if bids else None
            ask = asks[0] if asks else None
            counts["read.l2Book"] += 1
        else:
            bid, ask = d.bbo
            counts["read.bbo"] += 1
        t_ex = d.time * 1_000_000
        if t_recv != MISSING:
            clock.append(t_recv - t_ex)
        i = r._index.get(d.coin)
        if i is None:
            i = r._sym(d.coin)
        depth = int(tm is _L2)
        if bid is None or ask is None:
            b.add(i, 0, t_ex, t_recv, _NAN, _NAN, _NAN, _NAN, pre=NULL_SIDE, depth=depth)
        else:
            b.add(i, 0, t_ex, t_recv, bid.px, bid.sz, ask.px, ask.sz, depth=depth)
    elif tm is _TRADES:
        counts["read.trades"] += 1
    else:  # pong, subscription response, error: not data
        counts["dropped.control"] += 1


def _refused(r: Symbols, frame: bytes, t_recv: int, b: Builder, counts: Counter[str]) -> None:
    kind, _detail = hl.classify(frame)
    if kind is FrameKind.MALFORMED_DATA:
        counts["read.l2Book"] += 1
        coin = hl.frame_coin(frame)
        if coin is None and len(r.symbols) == 1:
            coin = r.symbols[0]
        if coin is None:
            counts["refused.malformed_unnamed"] += 1  # names no coin we can read: nothing to withdraw
            return
        b.add(r._sym(coin), 0, MISSING, t_recv, _NAN, _NAN, _NAN, _NAN, pre=MALFORMED)
    elif kind is FrameKind.MALFORMED:
        counts["dropped.not_json"] += 1
    elif kind is FrameKind.GREETING:
        counts["dropped.control"] += 1
    else:
        counts["dropped.unknown"] += 1
