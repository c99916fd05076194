"""Leaving the venue clean (issue 33 item 6): the engine's resting orders cancelled at shutdown, and (when
``flatten_on_halt`` is set) every position brought to 0 once trading halts.

Both run on the engine's thread off the hot path (after the loop has ended; from housekeeping once halted), through
the live transport's own order connection (caerus.venuekit.order_transport.Unwinds), each bounded by one deadline
for the whole pass. Failures are counted and named, never raised: a shutdown must finish, and what was left on the
venue is in the report for an operator to see.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from caerus.execution.books import book_ok
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX
from caerus.records.order import ORDER_SYMBOL, ORDER_TIF
from caerus.venuekit.order_transport import Reconciles, Unwinds
from caerus.wire import Tif

_IOC = int(Tif.IOC)
#: how far through the touch a reduce-only IOC is priced (the venue fills it at the book, never worse than this)
FLATTEN_SLIPPAGE = 0.05


def cancel_resting(engine: Any, transport: object, timeout_s: float, process: str = "execution") -> dict[str, int]:
    """Cancel every order the engine still tracks that may rest on the book (pending and not IOC): counts of
    asked / canceled / gone (no longer open at the venue) / failed (no answer in time, or refused)."""
    report = {"asked": 0, "canceled": 0, "gone": 0, "failed": 0}
    if not isinstance(transport, Unwinds):
        return report
    deadline = time.monotonic() + timeout_s
    for oid, (order, _t_pickup, _t_sent) in list(engine.pending.items()):
        if order[ORDER_TIF] == _IOC:
            continue  # never rests: its reply settles it
        report["asked"] += 1
        left = deadline - time.monotonic()
        if left <= 0.0:
            report["failed"] += 1
            continue
        try:
            report["canceled" if transport.cancel(oid, order[ORDER_SYMBOL], left) else "gone"] += 1
        except RuntimeError as exc:
            report["failed"] += 1
            print(f"{process}: {exc}", file=sys.stderr)
    if report["failed"]:
        print(f"{process}: {report['failed']} of {report['asked']} resting orders could not be cancelled; they may "
              f"still rest on the venue", file=sys.stderr)
    return report


def flatten(engine: Any, transport: object, timeout_s: float, process: str = "execution") -> dict[str, Any]:
    """Cancel the resting orders, read the venue's positions and send one reduce-only order per instrument that
    holds one, priced ``FLATTEN_SLIPPAGE`` through the engine's latest book. The report: the cancels, per
    instrument id the position found and the size filled, and the failures (named in ``errors``)."""
    report: dict[str, Any] = {"cancels": cancel_resting(engine, transport, timeout_s, process), "positions": {},
                              "filled": {}, "failed": 0, "errors": []}
    if not isinstance(transport, Unwinds) or not isinstance(transport, Reconciles):
        return report
    deadline = time.monotonic() + timeout_s

    def failed(why: str) -> None:
        report["failed"] += 1
        report["errors"].append(why)
        print(f"{process}: flatten: {why}", file=sys.stderr)

    try:
        state = transport.venue_state(max(0.1, deadline - time.monotonic()))
    except RuntimeError as exc:
        failed(str(exc))
        return report
    venue = getattr(transport, "venue", 0)  # the live transport says its venue's wire code
    for k, size in enumerate(state.positions):
        if size == 0.0:
            continue
        report["positions"][k] = size
        book = engine.books.book(venue, k)
        if not book_ok(book):
            failed(f"instrument {k}: no book to price the reduce-only order")
            continue
        px = book[BOOK_BID_PX] * (1.0 - FLATTEN_SLIPPAGE) if size > 0 else book[BOOK_ASK_PX] * (1.0 + FLATTEN_SLIPPAGE)
        left = deadline - time.monotonic()
        if left <= 0.0:
            failed(f"instrument {k}: out of time")
            continue
        try:
            filled = report["filled"][k] = transport.reduce_position(k, size, px, left)
        except RuntimeError as exc:
            failed(str(exc))
            continue
        # the engine's projected position follows the venue's (the reconciliation watch compares the two)
        engine.risk.on_unwind(k, -filled if size > 0 else filled, px)
        if filled < abs(size) - 1e-9:
            failed(f"instrument {k}: the reduce-only order filled {filled:g} of {abs(size):g}")
    return report


class FlattenOnHalt:
    """``flatten_on_halt``: once the supervisor has halted trading, flatten once (housekeeping calls ``tick``, a
    flag check while nothing is due). ``report`` is None until it ran."""

    def __init__(self, enabled: bool, engine: Any, transport: object, sup: Any, timeout_s: float,
                 process: str = "execution") -> None:
        self.enabled = enabled
        self._engine, self._transport, self._sup = engine, transport, sup
        self._timeout_s = timeout_s
        self._process = process
        self.report: dict[str, Any] | None = None

    def tick(self) -> None:
        if self.enabled and self.report is None and self._sup.halted:
            print(f"{self._process}: trading halted: flattening (flatten_on_halt)", file=sys.stderr)
            self.report = flatten(self._engine, self._transport, self._timeout_s, self._process)
