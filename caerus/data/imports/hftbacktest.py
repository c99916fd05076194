"""hftbacktest's collector format: gzip text, ``<local receive ns> <frame as the venue sent it>`` per line.

Binance (USD-M, COIN-M, spot): combined-stream frames ``{"stream":"btcusdt@bookTicker","data":{...}}`` (raw-stream
frames without the wrapper are read too), plus the REST depth snapshot the collector writes before the diffs
(``{"lastUpdateId":...}``). The bookTicker message inside is decoded with the live feed's own ``BookTicker`` type
(spot's, which has no event time, with ``SpotBookTicker``: the same fields otherwise); depth diffs and trades are
decoded for their event time (the clock) and counted, not stored (a diff is not a top of book; the capture schema
has no trades table). Hyperliquid: ``{"channel":"l2Book"|"bbo"|"trades",...}`` decoded with the live feed's own
types (l2Book's top level becomes the book, DEPTH-flagged as the feed flags it).

A frame the typed decoder refuses is classified as the feed classifies it: a data frame that cannot be read is a
MALFORMED candidate (stored REJECTED, as the feed publishes it), anything else (not JSON, an unknown shape, an
ack) is dropped and counted by kind. A line whose receive stamp is not an integer is a ``bad_line``.

The product of a Binance symbol comes from its frames: a ``_`` in the symbol is COIN-M, a bookTicker without event
time is spot, one with it USD-M; ``--product`` overrides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from caerus.venuekit.book_rules import MALFORMED
from caerus.venuekit.frames import FrameKind
from caerus.venues.binance import data as bn

from .binance_streams import Gathered, StreamTypes, read_lines, read_run
from .compressed import file_digest, text_chunks, writable_text_chunks
from .formats import PRODUCTS, ReadOptions
from .hl_frames import hl_frame
from .lines import stamped
from .records import MISSING, Builder, Chunk, ImportRefused, Market, SymbolIds

NAME = "hftbacktest"
#: text per chunk and compressed bytes per read: small enough that a chunk's passes (inflate, line ends, stamps,
#: decode, columns) stay in a core's 2-4 MiB of cache; measured ~1.7 -> ~1.4 us a frame against 16 MiB chunks
CHUNK_BYTES = 2 << 20
READ_BYTES = 512 << 10
_DecodeError = msgspec.DecodeError


def _line_frames(text: bytes | bytearray, counts: Counter[str]) -> Iterator[tuple[int, bytes | bytearray]]:
    """(receive ns, frame) of every line, one line at a time: the general path for a chunk that is not all
    ``<19 digits> <frame>`` lines (a stamp that is not an integer is a ``bad_line``)."""
    for line in text.split(b"\n"):
        if not line.strip():
            continue
        ts, _, frame = line.partition(b" ")
        try:
            t_recv = int(ts)
        except ValueError:
            counts["dropped.bad_line"] += 1
            continue
        yield t_recv, frame


def _frames(text: bytes | bytearray, counts: Counter[str]) -> Iterator[tuple[int, memoryview | bytes | bytearray]]:
    """(receive ns, frame) of every line: zero-copy slices when the chunk is all ``<19 digits> <frame>`` lines
    (lines.py), else line by line."""
    got = stamped(text)
    if got is None:
        yield from _line_frames(text, counts)
        return
    mv, starts, ends, stamps = got
    for s, e, t in zip(starts.tolist(), ends.tolist(), stamps.tolist(), strict=True):
        yield t, mv[s:e]


def _first_frame(head: bytes) -> bytes:
    for line in head.split(b"\n")[:5]:
        ts, _, frame = line.partition(b" ")
        if ts.isdigit() and frame.startswith(b"{"):
            return frame
    return b""


def sniff(path: Path, head: bytes) -> bool:
    return _first_frame(head)[:40].startswith((b'{"stream"', b'{"channel"', b'{"lastUpdateId"', b'{"e"', b'{"u"'))


class Reader(SymbolIds):
    #: how combined frames are decoded (binance_streams.py): "lines" (a run of lines per decode_lines call), "runs"
    #: (a run per C loop of decode calls) or "one" (one frame at a time, the general path); every run a faster way
    #: refuses is read the next way down. The tests read all three ways and compare.
    mode = "lines"

    def __init__(self, path: Path, options: ReadOptions) -> None:
        from .compressed import head_text

        self.path = Path(path)
        self.options = options
        if options.product is not None and options.product not in PRODUCTS:
            raise ImportRefused(f"--product {options.product!r}: one of {', '.join(PRODUCTS)}")
        frame = _first_frame(head_text(self.path, 1 << 14))
        self.venue = "hyperliquid" if frame.startswith(b'{"channel"') else "binance"
        self.rule = "time" if self.venue == "hyperliquid" else "update_id"
        self.has_receive_time = True
        self.digest = file_digest()
        self.symbols: list[str] = []
        self._index: dict[str, int] = {}
        self._product: dict[str, str] = {}
        self._types = StreamTypes()  # stream name -> kind, and the run decoder over them
        self._futures = False  # a futures bookTicker (with event time) was seen

    def markets(self) -> list[Market]:
        out = []
        for s in self.symbols:
            if self.venue == "hyperliquid":
                out.append(Market("hyperliquid", "perp", s))
                continue
            product = self.options.product or self._product.get(s)
            if product is None:
                raise ImportRefused(f"{self.path}: cannot tell the Binance product of {s} from its frames "
                                    f"(no bookTicker); give --product ({', '.join(PRODUCTS)})")
            out.append(Market("binance", product, s))
        return out

    def notes(self) -> dict[str, object]:
        return {"product_from": "--product" if self.options.product else "frames",
                "streams": dict(sorted(self._types.kinds.items()))}

    def chunks(self) -> Iterator[Chunk]:
        step = self._binance_chunk if self.venue == "binance" else self._hl_chunk
        # read_lines blanks the stamps in place
        writable = self.venue == "binance" and self.mode == "lines"
        read = writable_text_chunks if writable else text_chunks
        for text in read(self.path, CHUNK_BYTES, digest=self.digest, read_bytes=READ_BYTES):
            yield step(text)

    # --- Binance -------------------------------------------------------------------------------------------------

    def _binance_chunk(self, text: bytes | bytearray) -> Chunk:
        """One chunk of Binance lines: runs of combined frames decoded together (binance_streams.py), the rest one
        frame at a time; the books are turned into columns once per chunk."""
        out = Gathered()
        got = stamped(text)
        if got is None:
            for t_recv, frame in _line_frames(text, out.counts):
                self._binance_frame(frame, t_recv, out)
        else:
            mv, starts, ends, stamps = got
            if self.mode == "lines":
                read_lines(text, starts, ends, stamps, self._types, out, self._binance_frame)
            elif self.mode == "runs":
                read_run(text, starts.tolist(), ends.tolist(), stamps, self._types, out, self._binance_frame)
            else:
                for s, e, t_recv in zip(starts.tolist(), ends.tolist(), stamps.tolist(), strict=True):
                    self._binance_frame(mv[s:e], t_recv, out)
        return self._columns(out)

    def _binance_frame(self, frame: Any, t_recv: int, out: Gathered) -> None:
        """One line's frame, the general way: the combined envelope, then the type its stream's kind says."""
        try:
            env = bn.COMBINED_DECODER.decode(frame)
        except _DecodeError:
            self._binance_unwrapped(frame, t_recv, out)
            return
        data = env.data
        kind = self._types.kinds.get(env.stream) or self._types.learn(env.stream, bytes(data))
        try:
            if kind == "bookTicker":
                out.rows.append(self._bt_decode(data))
                out.recv.append(t_recv)
            elif kind == "spotBookTicker":
                out.rows.append(bn.SPOT_BOOK_TICKER_DECODER.decode(data))
                out.recv.append(t_recv)
            elif kind == "depth":
                out.clock.append(t_recv - bn.DEPTH_EVENT_DECODER.decode(data).E * 1_000_000)
                out.counts["read.depth"] += 1
            elif kind == "trade":
                out.clock.append(t_recv - bn.TRADE_DECODER.decode(data).E * 1_000_000)
                out.counts["read.trade"] += 1
            else:
                out.counts["read.other_stream"] += 1
        except _DecodeError:
            self._binance_refused(kind, bytes(data), t_recv, out)

    def _bt_decode(self, data: object) -> object:
        m = bn.BOOK_TICKER_DECODER.decode(data)  # type: ignore[arg-type]
        self._futures = True
        return m

    def _columns(self, out: Gathered) -> Chunk:
        """The chunk's books as columns (one pass per field in C, not one append per field per row), the unreadable
        ones put back at their places, and the bookTickers' own clock samples."""
        rows, odd, counts = out.rows, out.odd, out.counts
        n = len(rows)
        counts["read.bookTicker"] += n + len(odd)
        t_recv = out.recv.array()
        clock = out.clock.array()
        if out.futures:
            self._futures = True  # a run decoded futures bookTickers (the one-frame path sets it in _bt_decode)
        has_time = n and hasattr(rows[0], "E")
        names = list(map(attrgetter("s"), rows))
        uniq = set(names)
        for s in uniq:
            self._sym(s)
            self._product.setdefault(s, "coinm" if "_" in s else ("usdm" if self._futures else "spot"))
        if len(uniq) == 1:
            sym = np.full(n, self._index[names[0]], dtype=np.uint16)
        else:
            sym = np.fromiter(map(self._index.__getitem__, names), dtype=np.uint16, count=n)
        seq = np.fromiter(map(attrgetter("u"), rows), dtype=np.int64, count=n)
        if has_time:
            t_ex = np.fromiter(map(attrgetter("E"), rows), dtype=np.int64, count=n) * 1_000_000
            clock_all: np.ndarray = np.concatenate([clock, t_recv - t_ex])
        else:
            t_ex = np.full(n, MISSING, dtype=np.int64)
            clock_all = clock
        px = {k: np.fromiter(map(attrgetter(k), rows), dtype=np.float64, count=n) for k in ("b", "B", "a", "A")}
        pre = np.zeros(n, dtype=np.uint8)
        if odd:
            at = [p for p, _, _ in odd]
            sym = np.insert(sym, at, [s for _, s, _ in odd])
            seq = np.insert(seq, at, 0)
            t_ex = np.insert(t_ex, at, MISSING)
            t_recv = np.insert(t_recv, at, [r for _, _, r in odd])
            px = {k: np.insert(v, at, np.nan) for k, v in px.items()}
            pre = np.insert(pre, at, MALFORMED)
        m = len(sym)
        return Chunk(sym=sym, seq=seq, t_ex=t_ex, t_recv=t_recv, bp=px["b"], bq=px["B"], ap=px["a"], aq=px["A"],
                     pre=pre, depth=np.zeros(m, dtype=np.uint8), clock=clock_all, counts=counts)

    def _binance_refused(self, kind: str, data: bytes, t_recv: int, out: Gathered) -> None:
        """A message on a known stream its typed decoder refused: on a bookTicker stream, a MALFORMED book (the feed
        publishes a REJECTED record for it); on another stream, counted as unreadable (nothing of it is stored)."""
        if kind in ("bookTicker", "spotBookTicker"):
            sym = bn.frame_symbol(data)
            if sym is None and len(self.symbols) == 1:
                sym = self.symbols[0]
            if sym is None:
                out.counts["read.bookTicker"] += 1
                out.counts["refused.malformed_unnamed"] += 1  # names no instrument we can read: nothing to withdraw
                return
            out.odd.append((len(out.rows), self._sym(sym), t_recv))
        else:
            out.counts[f"read.{kind}"] += 1
            out.counts[f"refused.unreadable_{kind}"] += 1

    def _binance_unwrapped(self, frame: Any, t_recv: int, out: Gathered) -> None:
        """A line that is not a combined-stream frame: the REST snapshot, a raw-stream message, or not data."""
        frame = bytes(frame)
        counts = out.counts
        try:
            snap = bn.REST_DEPTH_DECODER.decode(frame)
        except _DecodeError:
            pass
        else:
            counts["read.rest_snapshot"] += 1
            del snap
            return
        try:
            m = bn.DATA_DECODER.decode(frame)  # a raw-stream (unwrapped) message: the live decoder itself
        except _DecodeError:
            kind, _detail = bn.classify(frame)
            if kind is FrameKind.MALFORMED_DATA:
                self._binance_refused("bookTicker", frame, t_recv, out)
            elif kind is FrameKind.MALFORMED:
                counts["dropped.not_json"] += 1
            elif kind in (FrameKind.ACK, FrameKind.SUB_ERROR, FrameKind.VENUE_ERROR):
                counts["dropped.control"] += 1
            else:
                counts["dropped.unknown"] += 1
            return
        if isinstance(m, bn.BookTicker):
            self._futures = True
            out.rows.append(m)
            out.recv.append(t_recv)
        else:  # a depth message: the feed reads depth5 snapshots only
            out.clock.append(t_recv - m.E * 1_000_000)
            counts["read.depth"] += 1

    # --- Hyperliquid ---------------------------------------------------------------------------------------------

    def _hl_chunk(self, text: bytes | bytearray) -> Chunk:
        b = Builder()
        clock: list[int] = []
        counts: Counter[str] = Counter()
        frame_ = hl_frame
        for t_recv, frame in _frames(text, counts):
            frame_(self, bytes(frame), t_recv, b, clock, counts)
        return Chunk.build(b, clock, counts)
