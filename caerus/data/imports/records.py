"""What a format reader hands the import: book candidates as columns, clock samples, and counts by kind.

A reader decodes frames (or CSV rows) into the typed records the venue decoders produce and reduces each chunk of a
file to one :class:`Chunk`: the top-of-book candidates in file order (one row per bookTicker / bbo / l2Book / quote,
with the venue's sequence and time where it has them), the clock samples (receive minus event time of every frame
carrying both), and the counts of everything read, whatever became of it. The checks (checks.py) then decide which
candidates are stored as VALID or REJECTED rows and which are refused, exactly as the live feed would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

#: a row without the venue's time (spot bookTicker) or without a receive time (a CSV of venue times only)
MISSING = -1

#: kinds of frames/rows counted as read (each reader uses the ones it meets)
READ_KINDS = ("bookTicker", "depth", "trade", "rest_snapshot", "l2Book", "bbo", "trades", "quote", "control")
#: frames dropped before they could be a book (not data at all, or data of an unknown shape): counted by kind
DROP_KINDS = ("not_json", "unknown", "bad_line", "control")


@dataclass(frozen=True)
class Market:
    """One market a file holds: the venue, the product (usdm, coinm, spot, perp) and the venue's symbol."""

    venue: str
    product: str
    symbol: str

    @property
    def label(self) -> str:
        return f"{self.venue} {self.product} {self.symbol}"


class ImportRefused(ValueError):
    """A file or option the import cannot take; the message names the file and what is wrong."""


class Builder:
    """Accumulates one chunk's book candidates row by row (lists, converted to arrays once per chunk)."""

    __slots__ = ("ap", "aq", "bp", "bq", "depth", "pre", "seq", "sym", "t_ex", "t_recv")

    def __init__(self) -> None:
        self.sym: list[int] = []
        self.seq: list[int] = []
        self.t_ex: list[int] = []
        self.t_recv: list[int] = []
        self.bp: list[float] = []
        self.bq: list[float] = []
        self.ap: list[float] = []
        self.aq: list[float] = []
        self.pre: list[int] = []
        self.depth: list[int] = []

    def add(self, sym: int, seq: int, t_ex: int, t_recv: int, bp: float, bq: float, ap: float, aq: float,
            pre: int = 0, depth: int = 0) -> None:
        self.sym.append(sym)
        self.seq.append(seq)
        self.t_ex.append(t_ex)
        self.t_recv.append(t_recv)
        self.bp.append(bp)
        self.bq.append(bq)
        self.ap.append(ap)
        self.aq.append(aq)
        self.pre.append(pre)
        self.depth.append(depth)

    def __len__(self) -> int:
        return len(self.sym)


@dataclass
class Chunk:
    """Book candidates of part of a file, in file order, plus what else was read there."""

    sym: np.ndarray  # u2: index into the reader's symbols
    seq: np.ndarray  # i8: the venue's update id (0 where it has none)
    t_ex: np.ndarray  # i8 ns: venue time, MISSING where the row has none
    t_recv: np.ndarray  # i8 ns: receive time, MISSING where the source has none
    bp: np.ndarray
    bq: np.ndarray
    ap: np.ndarray
    aq: np.ndarray
    pre: np.ndarray  # u1: a reason fixed at decode (MALFORMED, NULL_SIDE), else 0
    depth: np.ndarray  # u1: 1 where the top comes from a depth snapshot (l2Book)
    clock: np.ndarray  # i8 ns: receive minus event time, one per frame carrying both
    counts: Counter[str] = field(default_factory=Counter)

    def __len__(self) -> int:
        return len(self.sym)

    @classmethod
    def build(cls, b: Builder | None, clock: list[int] | np.ndarray, counts: Counter[str]) -> Chunk:
        if b is None:
            b = Builder()
        return cls(
            sym=np.array(b.sym, dtype=np.uint16), seq=np.array(b.seq, dtype=np.int64),
            t_ex=np.array(b.t_ex, dtype=np.int64), t_recv=np.array(b.t_recv, dtype=np.int64),
            bp=np.array(b.bp, dtype=np.float64), bq=np.array(b.bq, dtype=np.float64),
            ap=np.array(b.ap, dtype=np.float64), aq=np.array(b.aq, dtype=np.float64),
            pre=np.array(b.pre, dtype=np.uint8), depth=np.array(b.depth, dtype=np.uint8),
            clock=np.asarray(clock, dtype=np.int64), counts=counts)


class SymbolIds:
    """A reader's symbol ids: each symbol numbered in the order the file first names it (a record's symbol column).

    The reader's ``__init__`` sets ``symbols`` (the names, by id) and ``_index`` (name -> id) to empty."""

    symbols: list[str]
    _index: dict[str, int]

    def _sym(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.symbols)
            self.symbols.append(s)
        return i
