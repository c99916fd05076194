"""Binance combined-stream frames (``{"stream": <name>, "data": <message>}``) decoded in runs: one C loop of typed
decodes over many frames, the results sorted into columns by numpy, a frame the run's decoder refuses handed to the
reader's one-frame path.

The stream name says what its messages are (``<symbol>@bookTicker`` a bookTicker, ``@depth...`` a depth event,
``@trade`` a trade; anything else is counted, its message only checked to be JSON). The one-frame path learns each
stream's kind from its first frame (``stream_kind``); :class:`StreamTypes` then builds one decoder for every stream
learnt so far: a union of Structs tagged on ``stream``, one per stream name, whose ``data`` field has the type the
one-frame path decodes that stream's message with (the live feed's ``BookTicker``; ``SpotBookTicker``,
``DepthEvent``, ``Trade`` of caerus.venues.binance.data). So a frame decodes in a run exactly when the one-frame path
would decode it -- the same type, the same ``strict=False`` string-to-float conversion and bounds -- to the same
values; a frame that fails (another stream, an unreadable message, a REST snapshot, not JSON, a repeated key) stops
the run there and goes through the one-frame path, which classifies it as before. tests/unit/data checks the two
paths give the same chunks on real files and on hostile frames.

Why: one ``decode`` call per frame from a Python loop, with its try/except, type dispatch and appends, cost
~0.5 us a frame beyond the decode itself (~0.6 us); here the loop is ``list.extend(map(decode, frames))``.

Faster still, :func:`read_lines`: a whole run is one ``decode_lines`` call over the chunk's own text (no slice per
frame, no call per frame: ~0.1 us a frame less). Each line's 20-byte receive stamp is overwritten with ``0 0`` and
spaces (in a copy) and the run decoder also accepts an int, so a run of n lines decodes to ``[0, 0, frame] * n``
exactly when every line's frame is one JSON value the run decoder takes, by itself, as decoding it alone would:
``0 0`` is two values without a comma, invalid anywhere inside an object or array, and a raw newline is invalid in
a string, so no value can run on into the next line; a line holding no value, or two, or a frame that is a number,
breaks the ``int, int, frame`` pattern (checked for every element). A run that does not decode, or does not give
that pattern, is read again by :func:`read_run`, which hands the frames its decoder refuses to the one-frame path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import compress
from operator import attrgetter
from typing import Any, Union

import msgspec
import numpy as np

from caerus.venues.binance import data as bn

#: a stream's kind -> the type its messages decode with (the one-frame path's decoders use the same types)
KIND_TYPES: dict[str, Any] = {"bookTicker": bn.BookTicker, "spotBookTicker": bn.SpotBookTicker,
                              "depth": bn.DepthEvent, "trade": bn.Trade, "other_stream": msgspec.Raw}
_CODES = {kind: i for i, kind in enumerate(KIND_TYPES)}
BOOK, SPOT_BOOK, DEPTH, TRADE, OTHER = range(5)
#: frames per decode call at most (a refused frame ends a run early); small enough that the numpy work on a run's
#: results stays in cache, large enough that per-run costs vanish
RUN = 4096
_data = attrgetter("data")
_time = attrgetter("E")


def stream_kind(stream: str, data: bytes) -> str:
    """The kind of a stream from its name (and, for bookTicker, whether its first message has an event time:
    futures' has ``E``, spot's has none)."""
    tail = stream.partition("@")[2]
    if tail == "bookTicker":
        return "bookTicker" if b'"E":' in data else "spotBookTicker"
    if tail.startswith("depth"):
        return "depth"
    if tail == "trade":
        return "trade"
    return "other_stream"


class Ints:
    """int64 values gathered in order, a few at a time (Python ints) or many (arrays), joined once."""

    __slots__ = ("_loose", "_parts")

    def __init__(self) -> None:
        self._parts: list[np.ndarray] = []
        self._loose: list[int] = []

    def append(self, v: int) -> None:
        self._loose.append(v)

    def extend(self, values: np.ndarray) -> None:
        if self._loose:
            self._parts.append(np.array(self._loose, dtype=np.int64))
            self._loose = []
        self._parts.append(values)

    def array(self) -> np.ndarray:
        if self._loose:
            self.extend(np.zeros(0, dtype=np.int64))
        return np.concatenate(self._parts) if self._parts else np.zeros(0, dtype=np.int64)


class Gathered:
    """One chunk's Binance results in file order: decoded books (structs) and their receive times, unreadable books
    (position among the books, symbol index, receive time), clock samples, counts."""

    __slots__ = ("clock", "counts", "futures", "odd", "recv", "rows")

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.recv = Ints()
        self.odd: list[tuple[int, int, int]] = []
        self.clock = Ints()
        self.counts: Counter[str] = Counter()
        self.futures = False  # a run held futures bookTickers


class StreamTypes:
    """The streams of one file and their kinds, and the run decoder over all of them."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        self._decode: Callable[[Any], Any] | None = None
        self._decode_lines: Callable[[Any], list[Any]] | None = None
        self._code: dict[type, int] = {}
        self._built_for = 0

    def learn(self, stream: str, data: bytes) -> str:
        kind = self.kinds.get(stream)
        if kind is None:
            kind = self.kinds[stream] = stream_kind(stream, data)
        return kind

    def decoder(self) -> Callable[[Any], Any] | None:
        """``decode(frame)`` for a combined frame of any stream learnt so far (None before the first)."""
        if self._built_for != len(self.kinds):
            self._build()
        return self._decode

    def lines_decoder(self) -> Callable[[Any], list[Any]] | None:
        """``decode_lines(text)`` for lines of ``0 0 <combined frame>`` (read_lines): the run decoder's types, and
        int for the two zeros."""
        if self._built_for != len(self.kinds):
            self._build()
        return self._decode_lines

    def _build(self) -> None:
        types = []
        code = {}
        for i, (stream, kind) in enumerate(self.kinds.items()):
            t = msgspec.defstruct(f"Stream{i}", [("data", KIND_TYPES[kind])], tag_field="stream", tag=stream,
                                  gc=False)
            types.append(t)
            code[t] = _CODES[kind]
        union: Any = Union[tuple(types)] if len(types) > 1 else types[0]  # noqa: UP007 - a runtime tuple of types
        self._decode = msgspec.json.Decoder(union, strict=False).decode
        self._decode_lines = msgspec.json.Decoder(Union[(*types, int)], strict=False).decode_lines
        self._code = code
        self._built_for = len(self.kinds)

    def codes(self, decoded: list[Any]) -> np.ndarray:
        return np.fromiter(map(self._code.__getitem__, map(type, decoded)), dtype=np.int8, count=len(decoded))


def read_run(text: Any, starts: list[int], ends: list[int], stamps: np.ndarray, types: StreamTypes, out: Gathered,
             one: Callable[[Any, int, Gathered], None]) -> None:
    """Every frame ``text[starts[i]:ends[i]]`` (receive time ``stamps[i]``) into ``out``, in order: runs through the
    run decoder, and each frame it refuses (or every frame, before a stream is known) through
    ``one(frame, t_recv, out)``. Frames are sliced off ``text`` as the decoder takes them (bytes slices: a copy of
    ~300 bytes beats a memoryview's setup here), never held in a list: ~10^5 live slices a chunk would be objects
    the garbage collector scans again and again (measured: 2-4x the slicing's own cost)."""
    view = text
    cut = view.__getitem__
    n = len(starts)
    pos = 0
    wait = 0  # frames to hand to ``one`` before trying a run again (grows while runs are refused at once)
    backoff = 1
    while pos < n:
        decode = types.decoder() if wait == 0 else None
        if decode is None:
            one(view[starts[pos]:ends[pos]], int(stamps[pos]), out)
            pos += 1
            wait = max(wait - 1, 0)
            continue
        end = min(n, pos + RUN)
        got: list[Any] = []
        try:
            # extend appends as it goes: on a refusal ``got`` holds the frames decoded before it (were it not so,
            # the frame at pos + len(got) would simply go through the one-frame path: correct, only slower)
            got.extend(map(decode, map(cut, map(slice, starts[pos:end], ends[pos:end]))))
        except msgspec.DecodeError:
            pass
        if got:
            _sort(got, stamps[pos:pos + len(got)], types, out)
            pos += len(got)
            backoff = 1
        if pos < end:  # the run decoder refused the frame at pos
            known = len(types.kinds)
            one(view[starts[pos]:ends[pos]], int(stamps[pos]), out)
            pos += 1
            if not got and len(types.kinds) == known:  # refused at once, and the frame taught no new stream
                wait, backoff = backoff, min(backoff * 2, RUN)


#: what each line's receive stamp and its space become for read_lines: two JSON values, then spaces
_STAMP_HEAD = np.uint32(int.from_bytes(b"0 0 ", "little"))
_SPACES = np.uint64(int.from_bytes(b" " * 8, "little"))
_STAMP = 20  # 19 digits and a space (lines.py checked every line of the chunk has them)
#: lines per decode_lines call: a run the fast path refuses is read again by read_run, so keep the waste bounded
LINES_RUN = 8192
PIECES = 16  # parts a refused run is tried again in
FIRST = 64  # lines read_run reads while no stream is known yet (the first frames name the streams)


def blanked(text: bytes | bytearray, frame_starts: np.ndarray) -> bytearray:
    """``text`` with its lines' 20-byte stamps (just before each frame start) made to read ``0 0`` and spaces:
    a bytearray in place (its stamps are gone: lines.stamped has read them), bytes in a copy."""
    buf = text if isinstance(text, bytearray) else bytearray(text)
    if len(frame_starts):
        line = frame_starts - _STAMP
        np.ndarray(shape=(len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))[line] = _STAMP_HEAD
        w8 = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        w8[line + 4] = _SPACES
        w8[line + 12] = _SPACES
    return buf


def read_lines(text: bytes | bytearray, starts: np.ndarray, ends: np.ndarray, stamps: np.ndarray, types: StreamTypes,
               out: Gathered, one: Callable[[Any, int, Gathered], None]) -> None:
    """What :func:`read_run` does, a run of up to LINES_RUN lines per ``decode_lines`` call (module docstring): every
    frame ``text[starts[i]:ends[i]]`` (each line ``<19-digit stamp> <frame>``, as lines.stamped found) into ``out``,
    in order. A run that does not decode exactly line by line is tried again in PIECES parts, and a part that does
    not either goes through read_run (so one odd frame costs read_run's speed on a few hundred lines, not the whole
    run's). A bytearray ``text`` is written to (its stamps blanked; the frames are untouched)."""
    view = memoryview(blanked(text, starts))
    n = len(starts)
    todo = [(pos, min(n, pos + LINES_RUN), True) for pos in range(0, n, LINES_RUN)][::-1]
    while todo:
        pos, end, split = todo.pop()
        decode = types.lines_decoder()
        if decode is None:  # no stream known yet: the first lines teach read_run's one-frame path the streams
            cut = min(end, pos + FIRST)
            read_run(text, starts[pos:cut].tolist(), ends[pos:cut].tolist(), stamps[pos:cut], types, out, one)
            if cut < end:
                todo.append((cut, end, True))
            continue
        codes = None
        try:
            got = decode(view[int(starts[pos]) - _STAMP:int(ends[end - 1])])
        except msgspec.DecodeError:
            pass
        else:
            codes = _frames_of(got, end - pos, types)
        if codes is not None:
            _sort(got[2::3], stamps[pos:end], types, out, codes)
        elif split and end - pos > PIECES:
            step = -(-(end - pos) // PIECES)
            todo.extend((a, min(end, a + step), False) for a in range(pos, end, step)[::-1])
        else:
            read_run(text, starts[pos:end].tolist(), ends[pos:end].tolist(), stamps[pos:end], types, out, one)


def _frames_of(got: list[Any], n: int, types: StreamTypes) -> np.ndarray | None:
    """The kind code of each frame when ``got`` is exactly ``[0, 0, frame] * n`` (frames of the run decoder's
    types), else None.

    Checking the length and that every third value is a frame is enough: each line starts with two ints (the
    ``0 0``), which cannot stand where a frame must, so every line starts at a multiple of three and holds a multiple
    of three values, at least three; n lines in 3n values then hold exactly three each: ``0, 0, frame``."""
    if len(got) != 3 * n:
        return None
    try:
        return types.codes(got[2::3])  # an int (or anything not a stream type) there: KeyError
    except KeyError:
        return None


def _sort(decoded: list[Any], stamps: np.ndarray, types: StreamTypes, out: Gathered,
          codes: np.ndarray | None = None) -> None:
    """A run's decoded frames into books, clock samples and counts (selection by C iterators over numpy masks)."""
    if codes is None:
        codes = types.codes(decoded)
    tally = np.bincount(codes, minlength=5)
    books = int(tally[BOOK] + tally[SPOT_BOOK])
    if tally[BOOK]:
        out.futures = True
    if books == len(codes):
        out.rows.extend(map(_data, decoded))
        out.recv.extend(stamps)
    elif books:
        mask = codes <= SPOT_BOOK
        out.rows.extend(map(_data, compress(decoded, mask.tolist())))
        out.recv.extend(stamps[mask])
    timed = int(tally[DEPTH] + tally[TRADE])
    if timed:
        mask = (codes == DEPTH) | (codes == TRADE)
        e_ms = np.fromiter(map(_time, map(_data, compress(decoded, mask.tolist()))), dtype=np.int64, count=timed)
        out.clock.extend(stamps[mask] - e_ms * 1_000_000)
    c = out.counts
    for key, k in (("read.depth", DEPTH), ("read.trade", TRADE), ("read.other_stream", OTHER)):
        if tally[k]:
            c[key] += int(tally[k])
