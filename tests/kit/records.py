"""Record builders for every wire layout, by field name, so a test never spells a record as a positional tuple.

``record(layout, **fields)`` fills every field the test does not name with a neutral default (0, 0.0), in the
layout's own field order, and refuses a name the layout does not have. A layout change (a field added, moved or
renamed) therefore breaks only the tests that name that field, not every tuple in the suite.
"""

from __future__ import annotations

import itertools
from typing import Any

from caerus.wire import BOOK, EVENT, EXEC, ORDER, BookFlags, Layout, OrderReason, Outcome, Side, Tif, Venue

_FLOAT_CODES = frozenset("d")
_SEQ = itertools.count(1)


def record(layout: Layout, **fields: Any) -> tuple:
    """A record of ``layout`` as a ring returns it; unnamed fields are 0 / 0.0."""
    unknown = set(fields) - set(layout.names)
    if unknown:
        raise TypeError(f"{layout.name} record has no field(s) {sorted(unknown)}; fields: {', '.join(layout.names)}")
    out = []
    for name, code in layout.fields:
        value = fields.get(name, 0.0 if code in _FLOAT_CODES else 0)
        out.append(float(value) if code in _FLOAT_CODES else int(value))
    return tuple(out)


def book(venue: Venue | int = Venue.BINANCE, bid: float = 100_000.0, ask: float = 100_000.1, t_recv: int = 0, *,
         flags: int = int(BookFlags.VALID), bid_qty: float = 1.0, ask_qty: float = 1.0, seq: int | None = None,
         t_exchange: int | None = None, t_publish: int | None = None, **more: Any) -> tuple:
    """A BOOK record; ``seq`` defaults to a process-wide increasing counter, times default to ``t_recv``."""
    return record(BOOK, venue=venue, flags=flags, conn=more.pop("conn", 1),
                  seq=next(_SEQ) if seq is None else seq,
                  t_exchange=t_recv if t_exchange is None else t_exchange, t_recv=t_recv,
                  t_publish=t_recv if t_publish is None else t_publish,
                  bid_px=bid, bid_qty=bid_qty, ask_px=ask, ask_qty=ask_qty, **more)


def order(order_id: int, *, venue: Venue | int = Venue.HYPERLIQUID, side: Side | int = Side.BUY,
          px: float = 100_000.0, qty: float = 0.001, tif: Tif | int = Tif.IOC,
          reason: OrderReason | int = OrderReason.BENCH, **more: Any) -> tuple:
    """An ORDER record with the usual strategy defaults (IOC buy on Hyperliquid)."""
    more.setdefault("strategy_id", 1)
    more.setdefault("trigger_venue", int(Venue.BINANCE))
    return record(ORDER, order_id=order_id, venue=venue, side=side, px=px, qty=qty, tif=tif, reason=reason, **more)


def exec_record(order_id: int, *, outcome: Outcome | int = Outcome.FILLED, fill_px: float = 0.0,
                fill_qty: float = 0.0, **more: Any) -> tuple:
    """An EXEC record (an order plus what execution did with it)."""
    more.setdefault("strategy_id", 1)
    more.setdefault("venue", int(Venue.HYPERLIQUID))
    more.setdefault("side", int(Side.BUY))
    more.setdefault("tif", int(Tif.IOC))
    more.setdefault("reason", int(OrderReason.BENCH))
    return record(EXEC, order_id=order_id, outcome=outcome, fill_px=fill_px, fill_qty=fill_qty, **more)


def event(**fields: Any) -> tuple:
    """An EVENT record."""
    return record(EVENT, **fields)
