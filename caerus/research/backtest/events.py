"""The book events a backtest replays: one columnar table (numpy arrays), whatever the source.

Every source (a session's capture store, ClickHouse, the emulator's market model run offline) yields a
:class:`BookEvents`: per book, venue, flags, instrument id, seq, t_exchange, t_recv, the top of book and, when the
source measured it, t_publish (0 when not: the latency model then draws the feed's internal time). Rows are in
t_recv order. The engine turns the table into BOOK record tuples (caerus.wire.BOOK field order) before its loop
reads them (batch by batch), so the decision code reads exactly the records the live strategy reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from caerus.wire import BOOK, Venue

#: column -> numpy dtype (what every source delivers; t_publish may be all zeros)
COLUMNS: dict[str, str] = {
    "venue": "u1", "flags": "u1", "symbol": "u2", "seq": "i8", "t_exchange": "i8", "t_recv": "i8",
    "t_publish": "i8", "bid_px": "f8", "bid_qty": "f8", "ask_px": "f8", "ask_qty": "f8",
}
REQUIRED = tuple(c for c in COLUMNS if c != "t_publish")


class EventsError(ValueError):
    """Book events that cannot be replayed (a missing column, unsorted times); the message says which."""


@dataclass(frozen=True)
class BookEvents:
    """Book events in t_recv order, one numpy array per column (all the same length)."""

    venue: np.ndarray
    flags: np.ndarray
    symbol: np.ndarray
    seq: np.ndarray
    t_exchange: np.ndarray
    t_recv: np.ndarray
    t_publish: np.ndarray
    bid_px: np.ndarray
    bid_qty: np.ndarray
    ask_px: np.ndarray
    ask_qty: np.ndarray

    @classmethod
    def from_columns(cls, cols: Mapping[str, object], *, sort: bool = True) -> BookEvents:
        """From any mapping of column name -> array-like (a DataFrame too); t_publish optional. Sorted by
        (t_recv, venue, seq) unless ``sort`` is False, in which case unsorted t_recv is refused."""
        missing = [c for c in REQUIRED if c not in cols]
        if missing:
            raise EventsError(f"book events lack column(s) {', '.join(missing)} (need {', '.join(REQUIRED)})")
        n = len(np.asarray(cols["t_recv"]))
        arrays: dict[str, np.ndarray] = {}
        for name, dt in COLUMNS.items():
            if name == "venue" and name in cols:
                arrays[name] = _venue_codes(np.asarray(cols[name]))
            elif name in cols:
                arrays[name] = np.ascontiguousarray(np.asarray(cols[name]).astype(dt, copy=False))
            else:
                arrays[name] = np.zeros(n, dtype=dt)
            if len(arrays[name]) != n:
                raise EventsError(f"book events column {name} has {len(arrays[name])} rows, t_recv has {n}")
        ev = cls(**arrays)
        if sort:
            order = np.lexsort((ev.seq, ev.venue, ev.t_recv))
            if not np.array_equal(order, np.arange(n)):
                ev = ev.take(order)
        elif n > 1 and bool((np.diff(ev.t_recv) < 0).any()):
            raise EventsError("book events are not in t_recv order")
        return ev

    def __len__(self) -> int:
        return len(self.t_recv)

    def take(self, idx: np.ndarray) -> BookEvents:
        """The rows at ``idx`` (an index array or a boolean mask), as a new table."""
        return BookEvents(**{c: getattr(self, c)[idx] for c in COLUMNS})

    def between(self, start: int | None, end: int | None) -> BookEvents:
        """Rows with start <= t_recv < end (None: unbounded)."""
        lo = 0 if start is None else int(np.searchsorted(self.t_recv, start, "left"))
        hi = len(self) if end is None else int(np.searchsorted(self.t_recv, end, "left"))
        return self.take(np.arange(lo, hi))

    @property
    def span_ns(self) -> int:
        return int(self.t_recv[-1] - self.t_recv[0]) if len(self) else 0

    def counts(self) -> dict[str, int]:
        """Books per venue name."""
        return {Venue(v).name.lower(): int((self.venue == v).sum()) for v in Venue}

    def records(self, t_publish: np.ndarray, order: np.ndarray | slice | None = None) -> list[tuple]:
        """BOOK record tuples (caerus.wire.BOOK field order: conn, reason, pad and t_wire 0) with the given
        t_publish column, rows in ``order`` (an index array or a slice; None: as stored). Built before the replay
        loop reads them: the loop allocates nothing per book. Each column is reordered in numpy and turned into
        Python objects once (``tolist``), and ``zip`` makes the tuples in C: no Python code runs per row."""
        cols = [self.venue, self.flags, self.symbol, self.seq, self.t_exchange, self.t_recv, t_publish, self.bid_px,
                self.bid_qty, self.ask_px, self.ask_qty]
        v, f, s, seq, tx, tr, tp, bp, bq, ap, aq = (c.tolist() if order is None else c[order].tolist() for c in cols)
        n = len(v)
        return list(zip(v, f, s, repeat(0, n), repeat(0, n), repeat(0, n), seq, tx, tr, tp, bp, bq, ap, aq,
                        repeat(0, n), strict=False))


def _venue_codes(a: np.ndarray) -> np.ndarray:
    """Venue codes from codes or names ('binance', 'hyperliquid', as chDB returns the enum)."""
    if a.dtype.kind in "iu":
        return a.astype("u1")
    names = {v.name.lower(): int(v) for v in Venue}
    try:
        return np.array([names[str(x).lower()] for x in a], dtype="u1")
    except KeyError as exc:
        raise EventsError(f"book events name an unknown venue {exc.args[0]!r}") from None


# BookEvents.records builds BOOK tuples field by field: a layout change must change it too.
_RECORD_FIELDS = ("venue", "flags", "symbol", "conn", "reason", "_pad", "seq", "t_exchange", "t_recv", "t_publish",
                  "bid_px", "bid_qty", "ask_px", "ask_qty", "t_wire")
if BOOK.names != _RECORD_FIELDS:  # pragma: no cover - caught by the unit tests' import on a layout change
    raise ImportError(f"caerus.wire.BOOK changed ({BOOK.names}): update BookEvents.records")
