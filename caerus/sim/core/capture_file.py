"""Real captures the emulator serves (``venue-sim --replay CAPTURE.gz``): hftbacktest's collector files, read lazily.

Format: gzip text, ``<local receive ns> <frame exactly as the venue sent it>`` per line (the shared real captures;
docs/research.md, "Bring your own data"). The emulated Binance venue is USD-M futures, so a capture served here
must hold Binance USD-M combined-stream frames ``{"stream":"btcusdt@bookTicker","data":{...}}`` (raw-stream frames
without the wrapper are read too). What becomes of each line:

* a ``bookTicker`` frame: a :class:`RealQuote`, served to that symbol's bookTicker subscribers;
* a ``trade`` frame: a :class:`RealFrame` for the symbol's ``trade`` subscribers;
* depth diffs, the REST depth snapshot line, other streams: read and counted, not served (a diff needs the real
  REST snapshot to chain: the emulator's own depth book, built around the real tops, serves depth);
* a line that is not ``<integer> <JSON object>``: counted ``bad_line`` and skipped.

Each served frame keeps the venue's text byte for byte except its exchange times: ``E`` becomes the frame's
scheduled send time on the replay clock (in ms, as the market driver stamps every frame: no coordinated omission)
and ``T`` keeps its recorded distance to ``E``. So information age measured by the fleet is the emulator's and the
feed's lateness, as with the market model, while update ids, prices and sizes are the venue's. The pace is the
recorder's: a frame is due ``t_recv - t_recv(first bookTicker)`` after the replay starts. The recorder's clock
offset (its receive stamps against the venue's ``E``) does not enter the replay; it is measured here (median of
``t_recv - E`` over the bookTicker frames read) and reported.

Refused before anything starts (ValueError naming the file and what it holds): a Hyperliquid capture, Binance spot
(bookTicker without an event type) or COIN-M (``_`` in the symbol), a symbol the emulated venues do not list, a
file with no bookTicker in its first lines. This module parses with ``json`` and never imports the production
decoders (the emulator-independent import contract).
"""

from __future__ import annotations

import gzip
import heapq
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from caerus.sim.core.catalogue import BINANCE
from caerus.sim.core.market import BinanceQuote

#: lines read at start to find the capture's symbols and check what it is
HEAD_LINES = 5000
_TIMES = re.compile(r'"([ET])":(\d+)')
_STREAM_PREFIX = '{"stream":"'
_STREAMED = Path("-")  # what a refusal met mid-stream names (counted, not raised: inspect checked the head)
_SERVED = ('@bookTicker"', '@trade"')  # the streams served (after the symbol in a combined frame's stream name)


class Retimed:
    """A frame's text with its exchange times (``"E":<ms>``, ``"T":<ms>``) cut out, to be put back at send time:
    ``E`` = the send time, ``T`` = the send time + (recorded T - recorded E)."""

    __slots__ = ("parts", "shifts")

    def __init__(self, text: str) -> None:
        cut = _TIMES.split(text)  # [text, key, number, text, key, number, ..., text]
        keys, numbers = cut[1::3], cut[2::3]
        e = next((int(n) for k, n in zip(keys, numbers, strict=True) if k == "E"), None)
        texts = cut[0::3]
        # each part ends with the key of the time that follows it ("E":), the last is the text after the last time
        self.parts: list[str] = [t + f'"{k}":' for t, k in zip(texts, keys, strict=False)] + [texts[-1]]
        self.shifts: list[int] = [0 if k == "E" or e is None else int(n) - e
                                  for k, n in zip(keys, numbers, strict=True)]

    def at(self, ms: int) -> str:
        """The frame as sent at ``ms`` (epoch milliseconds)."""
        parts, shifts = self.parts, self.shifts
        if not shifts:
            return parts[0]
        out = [parts[0]]
        for part, shift in zip(parts[1:], shifts, strict=True):
            out.append(str(ms + shift))
            out.append(part)
        return "".join(out)


@dataclass(frozen=True, slots=True)
class RealQuote(BinanceQuote):
    """A real bookTicker frame: its top (the fields the emulator's marks, order fills and depth book read) and the
    venue's text to send."""

    text: Retimed | None = None
    recv_ns: int = 0  # the recorder's receive stamp (ns since the epoch)


@dataclass(frozen=True, slots=True)
class RealFrame:
    """Another real frame served as recorded (a trade): ``topic`` is the emulator's topic key for it."""

    t_ns: int
    topic: str
    text: Retimed
    recv_ns: int
    symbol: int = 0


@dataclass
class CaptureInfo:
    """What a capture holds, from its first lines: the files, their symbols (Binance USD-M), the first receive
    stamp of a bookTicker and the recorder's clock offset measured there."""

    files: tuple[Path, ...]
    symbols: tuple[str, ...]  # Binance symbols in order of first appearance (BTCUSDT)
    names: tuple[str, ...]  # their catalogue names (BTC): the emulated instruments
    first_recv_ns: int
    streams: dict[str, int] = field(default_factory=dict)  # stream name -> lines in the head
    clock_offset_ns: int | None = None  # median t_recv - E over the head's bookTicker frames (recorder vs venue)
    head_rate_hz: float = 0.0  # bookTicker frames per second over the head (all symbols)

    def describe(self) -> dict[str, Any]:
        """The ready file's ``capture`` entry: what is real (Binance) and where it comes from."""
        return {"format": "hftbacktest", "files": [str(f) for f in self.files], "venue": "binance",
                "product": "usdm", "symbols": list(self.symbols), "instruments": list(self.names),
                "first_recv_ns": self.first_recv_ns, "clock_offset_ns_head": self.clock_offset_ns,
                "streams": dict(sorted(self.streams.items())),
                "served": {"bookTicker": "real frames (E/T retimed to the send time)",
                           "trade": "real frames (E/T retimed to the send time)",
                           "depth, aggTrade, kline, tickers, markPrice": "modelled from the real tops"}}


def _open(path: Path) -> IO[str]:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def is_capture(path: Path) -> bool:
    """Whether ``path`` looks like an hftbacktest capture (``<receive ns> {...}`` lines, gzip or not) rather than a
    frames file (JSON Lines, caerus.recording)."""
    try:
        with _open(path) as f:
            for line in f:
                if line.strip():
                    ts, _, rest = line.partition(" ")
                    return ts.isdigit() and rest.lstrip().startswith("{")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return False
    return False


def _split(line: str) -> tuple[int, str] | None:
    ts, _, frame = line.rstrip("\n").partition(" ")
    if not ts.isdigit() or not frame.startswith("{"):
        return None
    return int(ts), frame


def _data_text(frame: str) -> tuple[str | None, str]:
    """(stream name or None, the data object's text exactly as sent) of a combined-stream or raw frame."""
    if frame.startswith(_STREAM_PREFIX):
        end = frame.find('"', len(_STREAM_PREFIX))
        marker = ',"data":'
        if end > 0 and frame.startswith(marker, end + 1) and frame.endswith("}"):
            return frame[len(_STREAM_PREFIX):end], frame[end + 1 + len(marker):-1]
    return None, frame


def _classify(path: Path, frame: str) -> tuple[str, str | None, dict[str, Any] | None, str]:
    """(kind, stream, data, data text) of one frame; ValueError for what the emulated venue cannot serve."""
    stream, text = _data_text(frame)
    try:
        data = json.loads(text)
    except ValueError:
        return "bad_line", stream, None, text
    if not isinstance(data, dict):
        return "other", stream, None, text
    if stream is None and "stream" in data and isinstance(data.get("data"), dict):  # a wrapper not in the usual form
        stream, data = str(data["stream"]), data["data"]
        text = json.dumps(data, separators=(",", ":"))
    if "channel" in data:
        raise ValueError(f"{path}: a Hyperliquid capture ({str(data['channel'])!r} frames); replay serves a Binance "
                         f"USD-M capture and models the Hyperliquid side")
    if "lastUpdateId" in data:
        return "rest_snapshot", stream, data, text
    kind = data.get("e")
    if kind is None and {"u", "s", "b", "a"} <= set(data):
        raise ValueError(f"{path}: Binance spot frames (bookTicker without an event type, symbol {data['s']}); the "
                         f"emulated Binance venue is USD-M futures: replay serves USD-M captures")
    return (str(kind) if kind is not None else "other"), stream, data, text


def _check_symbol(path: Path, symbol: str) -> None:
    if "_" in symbol:
        raise ValueError(f"{path}: Binance COIN-M frames (symbol {symbol}); the emulated Binance venue is USD-M "
                         f"futures: replay serves USD-M captures")
    if symbol not in BINANCE:
        raise ValueError(f"{path}: symbol {symbol} is not listed by the emulated venues (caerus/sim/core/catalogue.py)")
    if BINANCE[symbol].hl_asset is None:
        raise ValueError(f"{path}: {symbol} has no Hyperliquid coin in the catalogue to model the follower on")


def inspect(paths: Sequence[Path | str]) -> CaptureInfo:
    """Read the first HEAD_LINES lines of every file: the symbols, streams, first bookTicker stamp and clock offset.
    ValueError naming the file when it cannot be served."""
    files = tuple(Path(p) for p in paths)
    if not files:
        raise ValueError("no capture file given")
    symbols: list[str] = []
    streams: Counter[str] = Counter()
    offsets: list[int] = []
    first: int | None = None
    books, head_first, head_last = 0, None, 0
    for path in files:
        if not path.is_file():
            raise ValueError(f"capture file {path} does not exist")
        if not is_capture(path):
            raise ValueError(f"{path}: not an hftbacktest capture (lines of '<receive ns> <frame>')")
        seen_book = False
        with _open(path) as f:
            for n, line in enumerate(f):
                if n >= HEAD_LINES:
                    break
                got = _split(line)
                if got is None:
                    continue
                t_recv, frame = got
                kind, stream, data, _ = _classify(path, frame)
                if stream is not None:
                    streams[stream] += 1
                if kind != "bookTicker" or data is None:
                    continue
                symbol = str(data.get("s"))
                _check_symbol(path, symbol)
                seen_book = True
                if symbol not in symbols:
                    symbols.append(symbol)
                if isinstance(data.get("E"), int):
                    offsets.append(t_recv - data["E"] * 1_000_000)
                first = t_recv if first is None else min(first, t_recv)
                books += 1
                head_first = t_recv if head_first is None else head_first
                head_last = max(head_last, t_recv)
        if not seen_book:
            raise ValueError(f"{path}: no Binance bookTicker frame in its first {HEAD_LINES} lines")
    assert first is not None
    span = head_last - (head_first or head_last)
    return CaptureInfo(files, tuple(symbols), tuple(BINANCE[s].name for s in symbols), first, dict(streams),
                       int(statistics.median(offsets)) if offsets else None,
                       (books - 1) / span * 1e9 if span > 0 else 0.0)


class CaptureFrames:
    """The served frames of one or more capture files in receive-time order, read lazily (memory stays flat over a
    long file): :class:`RealQuote` and :class:`RealFrame` with ``t_ns`` = receive stamp - ``info.first_recv_ns``,
    ``symbol`` = the index in ``info.symbols``. ``counts`` says what was read, served and skipped."""

    def __init__(self, info: CaptureInfo) -> None:
        self.info = info
        self.index = {s: k for k, s in enumerate(info.symbols)}
        self.counts: Counter[str] = Counter()
        self.last_recv_ns = 0

    def _lines(self, path: Path) -> Iterator[tuple[int, str]]:
        with _open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                got = _split(line)
                if got is None:
                    self.counts["skipped.bad_line"] += 1
                    continue
                yield got

    def __iter__(self) -> Iterator[RealQuote | RealFrame]:
        merged = heapq.merge(*(self._lines(p) for p in self.info.files), key=lambda x: x[0])
        first, counts, index = self.info.first_recv_ns, self.counts, self.index
        last_t = 0
        for t_recv, frame in merged:
            counts["read"] += 1
            if frame.startswith(_STREAM_PREFIX) and not frame.startswith(_SERVED, frame.find("@", 11)):
                # a stream not served (depth diffs are most of the bytes): skipped without decoding it
                counts[f"skipped.{frame[11:frame.find(chr(34), 11)].partition('@')[2] or 'other'}"] += 1
                continue
            try:
                kind, _, data, text = _classify(_STREAMED, frame)
            except ValueError:
                counts["skipped.other_venue"] += 1
                continue
            if t_recv < first:  # before the first bookTicker (the REST snapshot, an early diff): nothing to serve
                counts["skipped.before_first_book"] += 1
                continue
            k = index.get(str(data.get("s"))) if data is not None else None
            if kind not in ("bookTicker", "trade") or data is None:
                counts[f"skipped.{kind}"] += 1
                continue
            if k is None:
                counts["skipped.other_symbol"] += 1
                continue
            t_ns = t_recv - first
            if t_ns < last_t:  # a stamp going back: sent at once, in file order (counted)
                counts["stamp_backwards"] += 1
                t_ns = last_t
            last_t = t_ns
            self.last_recv_ns = t_recv
            if kind == "trade":
                counts["served.trade"] += 1
                yield RealFrame(t_ns, f"binance:{self.info.symbols[k].lower()}@trade", Retimed(text), t_recv, k)
                continue
            try:
                quote = RealQuote(t_ns=t_ns, update_id=int(data["u"]), bid=float(data["b"]), bid_qty=float(data["B"]),
                                  ask=float(data["a"]), ask_qty=float(data["A"]), symbol=k, text=Retimed(text),
                                  recv_ns=t_recv)
            except (KeyError, TypeError, ValueError):
                # served anyway: the venue sent it, and the feed's checks are what a bad frame must meet; the
                # emulator's own view of the top (marks, fills) keeps the previous quote
                counts["served.bookTicker_unreadable"] += 1
                yield RealFrame(t_ns, f"binance:{self.info.symbols[k].lower()}@bookTicker", Retimed(text), t_recv, k)
                continue
            counts["served.bookTicker"] += 1
            yield quote
