"""Pre-trade risk checks for the execution engine, on preallocated state (no allocation per order).

Checks, in order (the first failing one is the order's RiskReject). First the record itself, which a forged,
corrupted or re-delivered slot fails: sequence (duplicate / out of order, per strategy_id), known venue / tif /
reason codes, side +-1, finite positive price and size, age of t_decision (``max_order_age_ms``). Then the limits:
kill switch, max order size, max order notional, max position, max orders per second, target-venue book
present/valid/fresh, limit price within a band around that venue's mid. The limits cannot exceed the hard
ceilings in caerus.execution.config (checked here too, for a RiskConfig built in code). The band applies whenever
the target venue has a book -- with ``require_book = false`` too, against a stale one -- and live transports
always require a valid fresh book.

A record refused by the sequence check does not move the sequence; any other record does (its number was used).

Position is *projected*: every accepted order counts as filled in full the moment it is sent (the safe side for
a limit); when a *final* result reports less (IOC not filled or partial, venue reject, cancel) ``on_result`` takes
the unfilled part back out. A resting order (GTC/ALO acknowledged, or partly filled and resting) is not final: it
keeps counting in full until it is filled or cancelled.

The rate limit is a sliding one-second window kept in a ring of the last N accept times: an order is refused when
the N-th most recent accept is less than a second old.
"""

from __future__ import annotations

import math

from caerus.execution.books import LatestBooks, book_ok
from caerus.execution.config import RiskConfig, check_ceilings
from caerus.instruments import DEFAULT, InstrumentSet
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX, BOOK_T_RECV
from caerus.records.order import (
    ORDER_PX,
    ORDER_QTY,
    ORDER_REASON,
    ORDER_SEQ,
    ORDER_SIDE,
    ORDER_STRATEGY_ID,
    ORDER_SYMBOL,
    ORDER_T_DECISION,
    ORDER_TIF,
    ORDER_VENUE,
)
from caerus.wire import OrderReason, RiskReject, Tif, Venue

_NONE = int(RiskReject.NONE)
_KILL = int(RiskReject.KILL_SWITCH)
_SIZE = int(RiskReject.MAX_ORDER_SIZE)
_POSITION = int(RiskReject.MAX_POSITION)
_RATE = int(RiskReject.MAX_ORDER_RATE)
_BAND = int(RiskReject.PRICE_BAND)
_NO_BOOK = int(RiskReject.NO_BOOK)
_DUPLICATE = int(RiskReject.DUPLICATE)
_OUT_OF_ORDER = int(RiskReject.OUT_OF_ORDER)
_STALE_ORDER = int(RiskReject.STALE_ORDER)
_BAD_SIDE = int(RiskReject.BAD_SIDE)
_BAD_PRICE = int(RiskReject.BAD_PRICE)
_BAD_SIZE = int(RiskReject.BAD_SIZE)
_OUT_OF_RANGE = int(RiskReject.OUT_OF_RANGE)
_NOTIONAL = int(RiskReject.MAX_NOTIONAL)
_POS_NOTIONAL = int(RiskReject.MAX_POSITION_NOTIONAL)
_TOTAL_NOTIONAL = int(RiskReject.MAX_TOTAL_NOTIONAL)
_UNKNOWN_INSTRUMENT = int(RiskReject.UNKNOWN_INSTRUMENT)
_VENUES = frozenset(int(v) for v in Venue)
_TIFS = frozenset(int(t) for t in Tif)
_REASONS = frozenset(int(r) for r in OrderReason)
_INF = math.inf
_EPS = 1e-12
_SECOND = 1_000_000_000


class RiskChecker:
    __slots__ = (
        "_band",
        "_books",
        "_max_age",
        "_max_notional",
        "_max_order_age",
        "_max_pos",
        "_max_pos_notional",
        "_max_qty",
        "_max_total",
        "_n",
        "_notional",
        "_rate_i",
        "_rate_n",
        "_require_book",
        "_times",
        "kill",
        "last_seq",
        "positions",
        "rejects",
        "total_notional",
    )

    def __init__(self, cfg: RiskConfig, books: LatestBooks, *, live: bool = False,
                 instruments: InstrumentSet = DEFAULT) -> None:
        check_ceilings(cfg)  # a RiskConfig built in code skipped load_config's check
        unknown = sorted(set(cfg.instruments) - set(instruments.names))
        if unknown:
            raise ValueError(f"risk.instruments names {', '.join(unknown)}, which the session does not trade")
        self._max_notional = cfg.max_order_notional
        n = self._n = len(instruments)
        # size limits per instrument id: the first instrument's are the top-level ones, others' their own entry,
        # else none (the notional limits bound them)
        own = [cfg.instruments.get(i.name) for i in instruments]
        self._max_qty = [o.max_order_qty if o else cfg.max_order_qty if k == 0 else _INF for k, o in enumerate(own)]
        self._max_pos = [o.max_position if o else cfg.max_position if k == 0 else _INF for k, o in enumerate(own)]
        self._max_pos_notional = cfg.max_position_notional
        self._max_total = cfg.max_total_notional
        self.positions = [0.0] * n  # projected, per instrument, in its units
        self._notional = [0.0] * n  # |projected position| * the price of the order that last moved it
        self.total_notional = 0.0
        self._rate_n = cfg.max_orders_per_s
        self._times = [-(1 << 62)] * cfg.max_orders_per_s
        self._rate_i = 0
        self._band = cfg.price_band_bps * 1e-4
        self._require_book = cfg.require_book or live  # live orders never go out without a book to band against
        self._max_age = int(cfg.max_book_age_ms * 1e6)
        self._books = books.by_venue
        self._max_order_age = int(cfg.max_order_age_ms * 1e6)
        self.last_seq = [0] * 65_536  # by strategy_id (u16): the newest sequence number seen
        self.kill = False
        self.rejects = [0] * (max(RiskReject) + 1)  # by RiskReject code

    def check(self, order: tuple, now: int) -> int:
        """RiskReject code for ``order`` at ``now`` (0 = pass). Only the sequence state changes; see ``accepted``."""
        reject = self._check(order, now)
        if reject:
            self.rejects[reject] += 1
        return reject

    def rehearse(self, order: tuple, now: int) -> int:
        """The checks of ``check`` for a shadow order (wire.OrderFlags.SHADOW): the same code, but a reject is not
        counted among real orders' rejects, and nothing else changes (the sequence advances: it was taken)."""
        return self._check(order, now)

    def _check(self, order: tuple, now: int) -> int:
        # -- the record itself --------------------------------------------------------------------------------
        sid = order[ORDER_STRATEGY_ID]
        seq = order[ORDER_SEQ]
        last = self.last_seq[sid]
        if seq <= last:
            return _DUPLICATE if seq == last else _OUT_OF_ORDER
        self.last_seq[sid] = seq
        if order[ORDER_VENUE] not in _VENUES or order[ORDER_TIF] not in _TIFS or order[ORDER_REASON] not in _REASONS:
            return _OUT_OF_RANGE
        side = order[ORDER_SIDE]
        if side != 1 and side != -1:
            return _BAD_SIDE
        px = order[ORDER_PX]
        if not 0.0 < px < _INF:  # `not` also refuses NaN
            return _BAD_PRICE
        qty = order[ORDER_QTY]
        if not 0.0 < qty < _INF:
            return _BAD_SIZE
        age = now - order[ORDER_T_DECISION]
        if age > self._max_order_age or age < -self._max_order_age:
            return _STALE_ORDER
        sym = order[ORDER_SYMBOL]
        if sym >= self._n:
            return _UNKNOWN_INSTRUMENT
        # -- the limits ---------------------------------------------------------------------------------------
        if self.kill:
            return _KILL
        if qty > self._max_qty[sym] + _EPS:
            return _SIZE
        if px * qty > self._max_notional:
            return _NOTIONAL
        new_pos = self.positions[sym] + side * qty
        limit = self._max_pos[sym]
        if new_pos > limit + _EPS or new_pos < -limit - _EPS:
            return _POSITION
        notional = (new_pos if new_pos > 0.0 else -new_pos) * px
        if notional > self._max_pos_notional:
            return _POS_NOTIONAL
        if self.total_notional - self._notional[sym] + notional > self._max_total:
            return _TOTAL_NOTIONAL
        if now - self._times[self._rate_i] < _SECOND:
            return _RATE
        venue = order[ORDER_VENUE]
        book = self._books[venue][sym] if 0 < venue < len(self._books) else None
        if not book_ok(book) or now - book[BOOK_T_RECV] > self._max_age:
            if self._require_book:
                return _NO_BOOK
            if book is None:
                return _NONE  # no book at all and none required: nothing to band against
            # A stale or invalid book still bands the price (a non-finite mid refuses: `not <=` below).
        mid = (book[BOOK_BID_PX] + book[BOOK_ASK_PX]) * 0.5
        if not abs(px - mid) <= mid * self._band:  # `not <=` also refuses a NaN price
            return _BAND
        return _NONE

    def accepted(self, order: tuple, now: int) -> None:
        """The order passed and is being sent: count it against position, notional and rate."""
        sym = order[ORDER_SYMBOL]
        self._move(sym, self.positions[sym] + order[ORDER_SIDE] * order[ORDER_QTY], order[ORDER_PX])
        self._times[self._rate_i] = now
        self._rate_i = (self._rate_i + 1) % self._rate_n

    def on_result(self, order: tuple, fill_qty: float) -> None:
        """A final result for an accepted order: take the unfilled part back out of the projected position."""
        unfilled = order[ORDER_QTY] - fill_qty
        if unfilled > _EPS:
            sym = order[ORDER_SYMBOL]
            self._move(sym, self.positions[sym] - order[ORDER_SIDE] * unfilled, order[ORDER_PX])

    def on_unwind(self, sym: int, signed_qty: float, px: float) -> None:
        """A fill of an order sent outside the order ring (flatten_on_halt's reduce-only order, caerus.execution
        .unwind): the projected position moves by it, so it keeps agreeing with the venue's."""
        self._move(sym, self.positions[sym] + signed_qty, px)

    def _move(self, sym: int, position: float, px: float) -> None:
        self.positions[sym] = position
        notional = (position if position > 0.0 else -position) * px
        self.total_notional += notional - self._notional[sym]
        self._notional[sym] = notional

    @property
    def instruments(self) -> int:
        return self._n

    @property
    def position(self) -> float:
        """The first instrument's projected position (BTC in a default session)."""
        return self.positions[0]

    @position.setter
    def position(self, value: float) -> None:
        # start-up reconciliation sets the first instrument's position from the venue (no price: no notional)
        self.positions[0] = value
