"""Latest top-of-book per venue and instrument for the execution engine (price band, paper fills).

One instrument: each ring is read in latest-value mode. Many: the venue's ring carries every instrument, so it is
read in every-record mode (its newest record is not every instrument's newest).

Polled in the engine's idle time and right before each risk check (after t_pickup, so off the measured
interval). Listeners (the paper transport) see every record this process observes, in arrival order, *before*
it replaces the venue's latest book, so they can settle anything due before the new book's receipt time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from caerus.ipc.swmr import SwmrReader
from caerus.records.book import BOOK_FLAGS, BOOK_SYMBOL, BOOK_VENUE
from caerus.wire import is_tradeable

if TYPE_CHECKING:  # mypy's bundled typing_extensions; nothing to import at run time (annotations are strings)
    from typing_extensions import TypeIs

BookListener = Callable[[tuple], None]


def book_ok(book: tuple | None) -> TypeIs[tuple]:
    """A record that may be traded against: VALID and not STALE."""
    return book is not None and is_tradeable(book[BOOK_FLAGS])


class LatestBooks:
    def __init__(self, readers: list[SwmrReader] | None = None, instruments: int = 1) -> None:
        self.readers = list(readers or [])
        self.instruments = instruments
        # by Venue code (index 0 unused), then instrument id
        self.by_venue: list[list[tuple | None]] = [[None] * instruments for _ in range(3)]
        self.latest: list[tuple | None] = [None, None, None]  # by Venue code: the first instrument's
        self.listeners: list[BookListener] = []
        self.seen = 0
        self.other = 0  # records of an instrument id this process does not trade

    def poll(self) -> int:
        """Read what is new in every ring; returns how many records were taken."""
        n = 0
        many = self.instruments > 1
        for r in self.readers:
            if many:
                while (rec := r.read_next()) is not None:
                    self.put(rec)
                    n += 1
                continue
            rec = r.read_latest()
            if rec is not None:
                self.put(rec)
                n += 1
        return n

    def put(self, rec: tuple) -> None:
        """Take one record (also the entry point for tests and in-process feeds)."""
        venue = rec[BOOK_VENUE]
        sym = rec[BOOK_SYMBOL]
        if not 0 < venue < len(self.latest):
            return
        if sym >= self.instruments:
            self.other += 1
            return
        for listener in self.listeners:
            listener(rec)
        self.by_venue[venue][sym] = rec
        if sym == 0:
            self.latest[venue] = rec
        self.seen += 1

    def book(self, venue: int, sym: int) -> tuple | None:
        """The newest record of ``venue``'s book of instrument ``sym`` (None when none yet)."""
        return self.by_venue[venue][sym] if 0 < venue < 3 and 0 <= sym < self.instruments else None

    def refresh(self) -> int:
        """Re-attach readers whose writer restarted (off the hot path); returns how many did."""
        return sum(1 for r in self.readers if r.refresh())

    def close(self) -> None:
        for r in self.readers:
            r.close()
