"""Reading a source in slices: which rows a request selects, how they are cut, and the batches that come out.

A request (sessions, symbols, [start, end) of ``t_recv``) is checked against what the source holds before any
row is read: a session the store does not hold or a symbol the session's instrument list does not name is a
:class:`~caerus.data.engines.DataError` naming it and what there is. Then each session's selection is cut into
time slices of about ``slice_rows`` rows (equal spans of receive time between the first and the last row), read
one query per slice, in receive order. Memory is bounded by a slice on both engines (the as-of arrays included),
and a caller writing the batches as they come (caerus.data.export) never holds the whole result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa

from caerus.capture.rows import VENUE_NAMES
from caerus.instruments import InstrumentSet

from . import frames, sql
from .engines import DataError
from .source import Source

VENUES = tuple(name for code, name in sorted(VENUE_NAMES.items()) if code)  # binance, hyperliquid
DEFAULT_SLICE_ROWS = 2_000_000
TimeLike = int | str | datetime | np.datetime64 | None
SymbolsLike = str | Sequence[str] | None
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(value: TimeLike, what: str = "time") -> int | None:
    """Nanoseconds since the epoch (UTC) from an int, a numeric string, ISO 8601 text (naive = UTC), a datetime
    (pandas Timestamps keep their nanoseconds) or a numpy datetime64; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise DataError(f"{what} {value!r}: give epoch nanoseconds, ISO 8601 text or a datetime")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ns]").astype(np.int64))
    if isinstance(value, datetime):
        ns = getattr(value, "value", None)  # a pandas Timestamp: exact ns since the epoch (naive = UTC)
        if isinstance(ns, int):
            return ns
        stamp = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (stamp - _EPOCH) // timedelta(microseconds=1) * 1000
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        m = re.fullmatch(r"(.*?[T ]\d\d:\d\d:\d\d)\.(\d{1,9})(.*)", text)  # keep digits beyond microseconds
        frac_ns = 0
        if m:
            text, frac = m.group(1) + m.group(3), m.group(2)
            frac_ns = int(frac.ljust(9, "0"))
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise DataError(f"{what} {value!r}: not epoch nanoseconds or ISO 8601 time") from None
        return int(parse_time(parsed, what) or 0) + frac_ns
    raise DataError(f"{what} {value!r}: give epoch nanoseconds, ISO 8601 text or a datetime")


@dataclass(frozen=True)
class Selection:
    """What a request reads: sessions, instrument ids (None: all), venues (None: all), [start, end) of t_recv."""

    sessions: tuple[str, ...]
    symbol_ids: tuple[int, ...] | None
    start: int | None
    end: int | None
    venues: tuple[str, ...] | None = None


def _names(src: Source) -> list[str]:
    schema = pa.schema([("n", pa.uint64())])
    has = [b.column(0)[0].as_py() for b in src.engine.batches(sql.has_books(), schema)]
    if not has or not has[0]:
        raise DataError(f"{src.label}: no captured books (the store has no caerus.books table)")
    out: list[str] = []
    for b in src.engine.batches(sql.session_names(), pa.schema([("session", pa.string())])):
        out.extend(b.column(0).to_pylist())
    return out


def _symbol_ids(symbols: SymbolsLike, insts: InstrumentSet, where: str) -> tuple[int, ...] | None:
    if symbols is None:
        return None
    wanted = [s.strip() for s in symbols.split(",")] if isinstance(symbols, str) else [str(s) for s in symbols]
    ids = []
    for name in wanted:
        inst = insts.by_name.get(name) or insts.by_name.get(name.upper())
        if inst is None:
            raise DataError(f"symbol {name!r} not in {where} (has {', '.join(insts.names)})")
        ids.append(inst.id)
    if not ids:
        raise DataError(f"no symbols given for {where} (has {', '.join(insts.names)})")
    return tuple(sorted(set(ids)))


def select(src: Source, session: str | Sequence[str] | None = None, symbols: SymbolsLike = None,
           start: TimeLike = None, end: TimeLike = None, venues: Sequence[str] | None = None) -> Selection:
    """Check a request against the source; DataError naming a missing session, symbol or venue, or a bad range."""
    held = _names(src)
    if session is None:
        chosen = tuple(held)
    else:
        chosen = (session,) if isinstance(session, str) else tuple(session)
        for s in chosen:
            if s not in held:
                has = ", ".join(held) if held else "none"
                raise DataError(f"session {s!r} not in {src.label} (has {has})")
    where = f"session {', '.join(chosen)}" if chosen else src.label
    if venues is not None:
        for v in venues:
            if v not in VENUES:
                raise DataError(f"venue {v!r} is not one of {', '.join(VENUES)}")
    t0, t1 = parse_time(start, "start"), parse_time(end, "end")
    if t0 is not None and t1 is not None and t1 <= t0:
        raise DataError(f"end {end!r} is not after start {start!r}")
    return Selection(chosen, _symbol_ids(symbols, src.instruments, where), t0, t1,
                     tuple(venues) if venues is not None else None)


@dataclass(frozen=True)
class Slice:
    session: str
    start: int | None
    end: int | None
    rows: int  # expected rows (an equal share of the session's)


@dataclass
class Plan:
    """The slices of a request, their expected rows, the output schema and how to read one slice."""

    slices: list[Slice]
    schema: pa.Schema
    read: Callable[[Slice], Iterator[pa.RecordBatch]]

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.slices)

    def batches(self) -> Iterator[pa.RecordBatch]:
        for s in self.slices:
            yield from self.read(s)


def cut(src: Source, sel: Selection, venues: Sequence[str] | None, slice_rows: int) -> tuple[list[Slice], int]:
    """Time slices per session with about ``slice_rows`` rows each; also the highest symbol id seen."""
    slices: list[Slice] = []
    top = 0
    schema = pa.schema([("n", pa.uint64()), ("lo", pa.int64()), ("hi", pa.int64()), ("top", pa.uint16())])
    for session in sel.sessions:
        q = sql.extent(session, venues, sel.symbol_ids, sel.start, sel.end)
        row = next(iter(src.engine.batches(q, schema)), None)
        n, lo, hi, sym = (row.column(i)[0].as_py() for i in range(4)) if row is not None else (0, 0, 0, 0)
        if not n:
            continue
        top = max(top, int(sym))
        k = max(1, math.ceil(n / max(1, slice_rows)))
        edges: list[int | None] = [lo + (hi + 1 - lo) * i // k for i in range(k + 1)]
        edges[0], edges[-1] = sel.start, sel.end  # the request's own bounds (None: open)
        share = [n // k + (1 if i < n % k else 0) for i in range(k)]
        slices.extend(Slice(session, edges[i], edges[i + 1], share[i]) for i in range(k))
    return slices, top


def plan_books(src: Source, sel: Selection, slice_rows: int = DEFAULT_SLICE_ROWS) -> Plan:
    """Book rows of the selection (both venues unless ``sel.venues``), in receive order per session."""
    slices, top = cut(src, sel, sel.venues, slice_rows)
    names = frames.symbol_names(src.instruments, top)

    def read(s: Slice) -> Iterator[pa.RecordBatch]:
        q = sql.books(s.session, sel.venues, sel.symbol_ids, s.start, s.end)
        for b in src.engine.batches(q, frames.BOOKS_RAW):
            yield frames.books_batch(b, s.session, names)

    return Plan(slices, frames.books_schema(), read)


def other_venue(base: str) -> str:
    if base not in VENUES:
        raise DataError(f"base venue {base!r} is not one of {', '.join(VENUES)}")
    return next(v for v in VENUES if v != base)


def plan_aligned(src: Source, sel: Selection, base: str = "binance",
                 slice_rows: int = DEFAULT_SLICE_ROWS) -> Plan:
    """Every ``base`` book of the selection with the other venue's book as of its t_recv (sql.aligned)."""
    other = other_venue(base)
    slices, top = cut(src, sel, (base,), slice_rows)
    names = frames.symbol_names(src.instruments, top)

    def read(s: Slice) -> Iterator[pa.RecordBatch]:
        q = sql.aligned(s.session, base, other, sel.symbol_ids, s.start, s.end)
        for b in src.engine.batches(q, frames.ALIGNED_RAW):
            yield frames.aligned_batch(b, s.session, base, other, names)

    return Plan(slices, frames.books_schema(aligned=True), read)


def inventory(src: Source) -> pa.Table:
    """sessions()'s table: one row per session, venue and symbol with rows, rejected rows and the t_recv range."""
    _names(src)
    parts = list(src.engine.batches(sql.inventory(), frames.INVENTORY_RAW))
    raw = pa.Table.from_batches(parts, schema=frames.INVENTORY_RAW)
    ids = raw.column("symbol").to_numpy()
    top = int(ids.max()) if len(ids) else 0
    names = frames.symbol_names(src.instruments, top).to_pylist()
    venue = [VENUE_NAMES.get(int(v), f"#{v}") for v in raw.column("venue_code").to_pylist()]
    first, last = raw.column("t_first").combine_chunks(), raw.column("t_last").combine_chunks()
    return pa.table({
        "session": raw.column("session"), "venue": pa.array(venue, pa.string()),
        "symbol": pa.array([names[int(i)] for i in ids], pa.string()), "symbol_id": raw.column("symbol"),
        "rows": raw.column("rows"), "rejected": raw.column("rejected"),
        "t_first": first, "t_first_ts": first.view(frames.TS), "t_last": last, "t_last_ts": last.view(frames.TS),
    })
