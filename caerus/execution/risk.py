"""Pre-trade risk checks for the execution engine, on preallocated state (no allocation per order).

Checks, in order (the first failing one is the order's RiskReject): kill switch, max order size, max position,
max orders per second, target-venue book present/valid/fresh, limit price within a band around that book's mid.

Position is *projected*: every accepted order counts as filled in full the moment it is sent (the safe side for
a limit); when a result reports less (IOC not filled, partial, venue reject, send failure) ``on_result`` takes the
unfilled part back out. The rate limit is a sliding one-second window kept in a ring of the last N accept times:
an order is refused when the N-th most recent accept is less than a second old.
"""

from __future__ import annotations

from caerus.execution.books import V_ASK, V_BID, V_T_RECV, LatestBooks, book_ok
from caerus.execution.config import RiskConfig
from caerus.execution.transports.base import O_PX, O_QTY, O_SIDE, O_VENUE
from caerus.wire import RiskReject

_NONE = int(RiskReject.NONE)
_KILL = int(RiskReject.KILL_SWITCH)
_SIZE = int(RiskReject.MAX_ORDER_SIZE)
_POSITION = int(RiskReject.MAX_POSITION)
_RATE = int(RiskReject.MAX_ORDER_RATE)
_BAND = int(RiskReject.PRICE_BAND)
_NO_BOOK = int(RiskReject.NO_BOOK)
_EPS = 1e-12
_SECOND = 1_000_000_000


class RiskChecker:
    __slots__ = (
        "_band",
        "_books",
        "_max_age",
        "_max_pos",
        "_max_qty",
        "_rate_i",
        "_rate_n",
        "_require_book",
        "_times",
        "kill",
        "position",
        "rejects",
    )

    def __init__(self, cfg: RiskConfig, books: LatestBooks) -> None:
        self._max_qty = cfg.max_order_qty
        self._max_pos = cfg.max_position
        self._rate_n = cfg.max_orders_per_s
        self._times = [-(1 << 62)] * cfg.max_orders_per_s
        self._rate_i = 0
        self._band = cfg.price_band_bps * 1e-4
        self._require_book = cfg.require_book
        self._max_age = int(cfg.max_book_age_ms * 1e6)
        self._books = books.latest
        self.kill = False
        self.position = 0.0  # projected, BTC
        self.rejects = [0] * (max(RiskReject) + 1)  # by RiskReject code

    def check(self, order: tuple, now: int) -> int:
        """RiskReject code for ``order`` at ``now`` (0 = pass). Does not change state; see ``accepted``."""
        reject = self._check(order, now)
        if reject:
            self.rejects[reject] += 1
        return reject

    def _check(self, order: tuple, now: int) -> int:
        if self.kill:
            return _KILL
        qty = order[O_QTY]
        if not 0.0 < qty <= self._max_qty + _EPS:  # also refuses NaN and non-positive sizes
            return _SIZE
        new_pos = self.position + order[O_SIDE] * qty
        if new_pos > self._max_pos + _EPS or new_pos < -self._max_pos - _EPS:
            return _POSITION
        if now - self._times[self._rate_i] < _SECOND:
            return _RATE
        venue = order[O_VENUE]
        book = self._books[venue] if 0 < venue < len(self._books) else None
        if not book_ok(book) or now - book[V_T_RECV] > self._max_age:
            return _NO_BOOK if self._require_book else _NONE
        mid = (book[V_BID] + book[V_ASK]) * 0.5
        px = order[O_PX]
        if not abs(px - mid) <= mid * self._band:  # `not <=` also refuses a NaN price
            return _BAND
        return _NONE

    def accepted(self, order: tuple, now: int) -> None:
        """The order passed and is being sent: count it against position and rate."""
        self.position += order[O_SIDE] * order[O_QTY]
        self._times[self._rate_i] = now
        self._rate_i = (self._rate_i + 1) % self._rate_n

    def on_result(self, order: tuple, fill_qty: float) -> None:
        """A final result for an accepted order: take the unfilled part back out of the projected position."""
        unfilled = order[O_QTY] - fill_qty
        if unfilled > _EPS:
            self.position -= order[O_SIDE] * unfilled
