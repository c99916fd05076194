"""caerus.data's three calls: ``books``, ``aligned``, ``sessions``, each returning one DataFrame.

``source`` is a session folder, a capture store (or its chdb folder) or a ClickHouse URL (source.py). Times are
the receive clock ``t_recv`` (one local clock for both venues), [start, end) in epoch ns, ISO 8601 text (naive =
UTC) or datetimes. Rows come in receive order per session, each once (``FINAL``), REJECTED/STALE and crossed
rows included with their ``flags``/``reason`` (filter with ``flags & 3 == 1`` for tradeable books: VALID and not
STALE, caerus.wire.TRADEABLE). ``frame`` picks the DataFrame library (pandas by default: docs/research.md says
why) or ``"arrow"`` for the pyarrow Table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import frames
from .read import (
    DEFAULT_SLICE_ROWS,
    SymbolsLike,
    TimeLike,
    inventory,
    plan_aligned,
    plan_books,
    select,
)
from .source import InstrumentsLike, SourceLike, open_source


def books(source: SourceLike, symbols: SymbolsLike = None, start: TimeLike = None, end: TimeLike = None, *,
          session: str | Sequence[str] | None = None, venues: Sequence[str] | None = None,
          instruments: InstrumentsLike = None, user: str | None = None, password_file: str | Path | None = None,
          frame: str = frames.DEFAULT_FRAME, slice_rows: int = DEFAULT_SLICE_ROWS) -> Any:
    """Captured books of both venues (or ``venues``) as one DataFrame.

    Columns: ``session``, ``venue``, ``symbol`` (categoricals), ``symbol_id``, ``flags``, ``reason``, ``conn``,
    ``seq``, ``t_exchange``, ``t_recv``, ``t_publish``, ``t_wire`` (Int64 ns, each followed by a ``*_ts``
    timestamp; ``t_wire_ts`` is null where there was no kernel stamp), ``bid_px``, ``bid_qty``, ``ask_px``,
    ``ask_qty``. DataError (a ValueError) names a missing session or symbol or a bad time.
    """
    with open_source(source, instruments, user, password_file) as src:
        sel = select(src, session, symbols, start, end, venues)
        plan = plan_books(src, sel, slice_rows)
        return frames.to_frame(frames.table(list(plan.batches()), plan.schema), frame)


def aligned(source: SourceLike, symbols: SymbolsLike = None, start: TimeLike = None, end: TimeLike = None, *,
            base: str = "binance", session: str | Sequence[str] | None = None, instruments: InstrumentsLike = None,
            user: str | None = None, password_file: str | Path | None = None, frame: str = frames.DEFAULT_FRAME,
            slice_rows: int = DEFAULT_SLICE_ROWS) -> Any:
    """Every ``base`` venue book in [start, end) with the other venue's book as of that instant.

    As of = the other venue's newest book of the same session and symbol with ``t_recv`` at or before the base
    book's (at an equal receive time the other book counts as known; among other books received at the same
    instant the highest ``seq``); its columns are ``other_*`` (``other_venue``, ``other_flags``, ...,
    ``other_bid_px``), all null while that venue had no book of the symbol yet. The match is made in the engine
    (sql.aligned), the same SQL on chDB and on a ClickHouse server. The book as of the start may predate it.
    """
    with open_source(source, instruments, user, password_file) as src:
        sel = select(src, session, symbols, start, end)
        plan = plan_aligned(src, sel, base, slice_rows)
        return frames.to_frame(frames.table(list(plan.batches()), plan.schema), frame, nullable_ints=True)


def sessions(source: SourceLike, *, instruments: InstrumentsLike = None, user: str | None = None,
             password_file: str | Path | None = None, frame: str = frames.DEFAULT_FRAME) -> Any:
    """What the source holds: one row per session, venue and symbol with ``rows``, ``rejected`` (rows with the
    REJECTED flag) and the receive-time range ``t_first``/``t_last`` (with ``*_ts`` timestamps)."""
    with open_source(source, instruments, user, password_file) as src:
        return frames.to_frame(inventory(src), frame)
