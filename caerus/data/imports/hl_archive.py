"""Hyperliquid's archive (``market_data/<YYYYMMDD>/<H>/l2Book/<COIN>.lz4``): lz4-framed JSON lines, one recorded
WebSocket frame each, ``{"time":"<ISO 8601 receive time>","ver_num":1,"raw":{"channel":"l2Book","data":{...}}}``.

``raw`` is the frame as the venue sent it, decoded with the live feed's types exactly as a frame of the hftbacktest
format (hl_frames.py); ``time`` is the archiver's receive time (naive ISO 8601 = UTC), the book's ``t_recv``. A line
that is not such a record (no ``time`` or ``raw``, a time that is not ISO 8601) is a ``bad_line``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec

from .compressed import file_digest, text_chunks
from .formats import ReadOptions
from .hl_frames import hl_frame
from .records import Builder, Chunk, Market, SymbolIds

NAME = "hyperliquid-archive"


class Record(msgspec.Struct, gc=False):
    time: str
    raw: msgspec.Raw
    ver_num: int = 1


_decode = msgspec.json.Decoder(Record).decode


def sniff(path: Path, head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    return first.startswith(b'{"time":') and b'"raw":' in first


def receive_ns(text: str) -> int:
    """ISO 8601 receive time (naive = UTC, up to 9 fractional digits) -> ns since the epoch; ValueError if not."""
    from caerus.data.engines import DataError
    from caerus.data.read import parse_time

    try:
        ns = parse_time(text, "time")
    except DataError as exc:
        raise ValueError(str(exc)) from None
    if ns is None:
        raise ValueError("no time")
    return ns


class Reader(SymbolIds):
    def __init__(self, path: Path, options: ReadOptions) -> None:
        self.path = Path(path)
        self.rule = "time"
        self.has_receive_time = True
        self.symbols: list[str] = []
        self._index: dict[str, int] = {}
        self.digest = file_digest()

    def markets(self) -> list[Market]:
        return [Market("hyperliquid", "perp", s) for s in self.symbols]

    def notes(self) -> dict[str, object]:
        return {"receive_time": "the archive record's time (naive ISO 8601, taken as UTC)"}

    def chunks(self) -> Iterator[Chunk]:
        for text in text_chunks(self.path, digest=self.digest):
            b = Builder()
            clock: list[int] = []
            counts: Counter[str] = Counter()
            for line in text.split(b"\n"):
                if not line.strip():
                    continue
                try:
                    rec = _decode(line)
                    t_recv = receive_ns(rec.time)
                except (msgspec.DecodeError, ValueError):
                    counts["dropped.bad_line"] += 1
                    continue
                hl_frame(self, bytes(rec.raw), t_recv, b, clock, counts)
            yield Chunk.build(b, clock, counts)
