"""Latest top-of-book per venue for the execution engine (price band, paper fills), read in latest-value mode.

Polled in the engine's idle time and right before each risk check (after t_pickup, so off the measured
interval). Listeners (the paper transport) see every record this process observes, in arrival order, *before*
it replaces the venue's latest book, so they can settle anything due before the new book's receipt time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from caerus.ipc.swmr import SwmrReader
from caerus.wire import BOOK_I, is_tradeable

if TYPE_CHECKING:  # mypy's bundled typing_extensions; nothing to import at run time (annotations are strings)
    from typing_extensions import TypeIs

# Positions from the one table (wire.BOOK_I), bound to globals for the per-order path. The public V_* names are
# what execution/transports/paper.py imports today; new code should read wire.BOOK_I directly.
V_VENUE = BOOK_I.VENUE
V_T_RECV = BOOK_I.T_RECV
V_BID = BOOK_I.BID_PX
V_BID_QTY = BOOK_I.BID_QTY
V_ASK = BOOK_I.ASK_PX
V_ASK_QTY = BOOK_I.ASK_QTY
_FLAGS = BOOK_I.FLAGS

BookListener = Callable[[tuple], None]


def book_ok(book: tuple | None) -> TypeIs[tuple]:
    """A record that may be traded against: VALID and not STALE."""
    return book is not None and is_tradeable(book[_FLAGS])


class LatestBooks:
    def __init__(self, readers: list[SwmrReader] | None = None) -> None:
        self.readers = list(readers or [])
        self.latest: list[tuple | None] = [None, None, None]  # by Venue code (index 0 unused)
        self.listeners: list[BookListener] = []
        self.seen = 0

    def poll(self) -> int:
        """Read the newest record of every ring; returns how many were new."""
        n = 0
        for r in self.readers:
            rec = r.read_latest()
            if rec is not None:
                self.put(rec)
                n += 1
        return n

    def put(self, rec: tuple) -> None:
        """Take one record (also the entry point for tests and in-process feeds)."""
        venue = rec[V_VENUE]
        if not 0 < venue < len(self.latest):
            return
        for listener in self.listeners:
            listener(rec)
        self.latest[venue] = rec
        self.seen += 1

    def refresh(self) -> int:
        """Re-attach readers whose writer restarted (off the hot path); returns how many did."""
        return sum(1 for r in self.readers if r.refresh())

    def close(self) -> None:
        for r in self.readers:
            r.close()
