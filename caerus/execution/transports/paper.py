"""The paper transport: IOC orders filled against the target venue's book after a simulated latency.

Fill rule: an order sent at ``t_sent`` is matched against the book *prevailing* at ``t_sent + latency`` (the
newest book of its venue received at or before then). A buy fills at the ask when its limit >= ask, a sell at the
bid when its limit <= bid, for at most the top-of-book size when ``limit_to_top_size`` (the rest of the IOC is
cancelled: PARTIAL); otherwise NOT_FILLED. No valid book -> NOT_FILLED. Every fill pays its venue's taker fee
(``PaperConfig.taker_bps``: the tier of caerus.fees' schedule, as the emulator and the backtest charge it).

With ``latency_ms == 0`` the fill is decided inside ``send_msg`` against the latest book the engine has polled.
Otherwise ``send_msg`` returns SENT and the result is delivered later as a VenueReply through ``on_reply``, when
a newer book shows the order's due time has passed (``on_book``, registered as a LatestBooks listener) or when
the engine calls ``pump(now)`` in its idle time. Fills go into one :class:`PaperAccount` per venue.
"""

from __future__ import annotations

import collections
import time

from caerus.execution.books import (
    LatestBooks,
    book_ok,
)
from caerus.execution.config import PaperConfig
from caerus.execution.paper_account import PaperAccount
from caerus.records.book import (
    BOOK_ASK_PX,
    BOOK_ASK_QTY,
    BOOK_BID_PX,
    BOOK_BID_QTY,
    BOOK_SYMBOL,
    BOOK_T_RECV,
    BOOK_VENUE,
)
from caerus.records.order import ORDER_FLAGS, ORDER_ORDER_ID, ORDER_PX, ORDER_QTY, ORDER_SIDE, ORDER_SYMBOL, ORDER_VENUE
from caerus.venuekit.order_transport import (
    ReplyCallback,
    SendResult,
    VenueReply,
)
from caerus.wire import OrderFlags, Outcome, Venue

_FILLED = Outcome.FILLED
_PARTIAL = Outcome.PARTIAL
_NOT_FILLED = Outcome.NOT_FILLED
_EPS = 1e-12
_MODEL = int(OrderFlags.MODEL)


class PaperTransport:
    name = "paper"

    def __init__(self, cfg: PaperConfig, books: LatestBooks, on_reply: ReplyCallback | None = None) -> None:
        self.cfg = cfg
        self.books = books
        self.on_reply = on_reply
        self.latency_ns = int(cfg.latency_ms * 1e6)
        self.replies = self.latency_ns > 0  # results come later, through on_reply
        if self.replies and on_reply is None:
            raise ValueError("paper transport with latency_ms > 0 needs an on_reply callback")
        # one account per venue and instrument; ``accounts`` is the first instrument's (a default session's BTC)
        self.taker_bps = {int(v): cfg.taker_bps(v.name.lower()) for v in Venue}
        self.instrument_accounts = {(int(v), k): PaperAccount(self.taker_bps[int(v)], cfg.markout_ms) for v in Venue
                                    for k in range(books.instruments)}
        self.accounts = {int(v): self.instrument_accounts[(int(v), 0)] for v in Venue}
        self._pending: collections.deque[tuple[int, tuple]] = collections.deque()  # (due ns, order), due order
        self.outcomes = {o.name.lower(): 0 for o in (Outcome.SENT, _FILLED, _PARTIAL, _NOT_FILLED)}
        books.listeners.append(self.on_book)

    def start(self) -> None:
        pass

    def send_msg(self, order: tuple) -> SendResult:
        t_sent = time.time_ns()
        if not self.replies:
            outcome, px, qty = self._match(order, self.books.book(order[ORDER_VENUE], order[ORDER_SYMBOL]), t_sent)
            return SendResult(outcome, px, qty, 0, t_sent)
        self._pending.append((t_sent + self.latency_ns, order))
        self.outcomes["sent"] += 1
        return SendResult(Outcome.SENT, t_sent=t_sent)

    def rehearse(self, order: tuple) -> None:
        """A shadow order: read the book ``send_msg`` would match against; nothing is matched, filled or queued."""
        book_ok(self.books.book(order[ORDER_VENUE], order[ORDER_SYMBOL]))

    def on_book(self, rec: tuple) -> None:
        """LatestBooks listener, called before ``rec`` replaces its venue's latest book."""
        venue = rec[BOOK_VENUE]
        t_recv = rec[BOOK_T_RECV]
        pending = self._pending
        if pending and pending[0][0] < t_recv:
            self._settle(t_recv - 1, venue)
        if book_ok(rec):
            mid = (rec[BOOK_BID_PX] + rec[BOOK_ASK_PX]) * 0.5
            self.instrument_accounts[(venue, rec[BOOK_SYMBOL])].on_book(mid, t_recv)

    def pump(self, now: int) -> None:
        """Settle orders and markouts due at or before ``now`` against the latest books (engine idle time)."""
        if self._pending and self._pending[0][0] <= now:
            self._settle(now, None)
        for acct in self.instrument_accounts.values():
            acct.settle(now)

    def _settle(self, until: int, venue: int | None) -> None:
        # Orders of other venues that are due stay queued until their own venue's book or pump() settles them.
        keep: list[tuple[int, tuple]] = []
        pending = self._pending
        while pending and pending[0][0] <= until:
            due, order = pending.popleft()
            if venue is not None and order[ORDER_VENUE] != venue:
                keep.append((due, order))
                continue
            outcome, px, qty = self._match(order, self.books.book(order[ORDER_VENUE], order[ORDER_SYMBOL]), due)
            assert self.on_reply is not None  # checked at construction whenever replies are delayed
            self.on_reply(VenueReply(order[ORDER_ORDER_ID], outcome, px, qty, 0, time.time_ns()))
        pending.extendleft(reversed(keep))

    def _match(self, order: tuple, book: tuple | None, t_fill: int) -> tuple[Outcome, float, float]:
        qty = order[ORDER_QTY]
        outcome, px, filled = _NOT_FILLED, 0.0, 0.0
        if book_ok(book):
            side = order[ORDER_SIDE]
            if side > 0 and order[ORDER_PX] >= book[BOOK_ASK_PX]:
                px, top = book[BOOK_ASK_PX], book[BOOK_ASK_QTY]
            elif side < 0 and order[ORDER_PX] <= book[BOOK_BID_PX]:
                px, top = book[BOOK_BID_PX], book[BOOK_BID_QTY]
            else:
                top = 0.0
            if top > 0.0:
                filled = min(qty, top) if self.cfg.limit_to_top_size else qty
                outcome = _FILLED if filled >= qty - _EPS else _PARTIAL
                self.instrument_accounts[(order[ORDER_VENUE], order[ORDER_SYMBOL])].fill(
                    side, px, filled, t_fill, 1 if order[ORDER_FLAGS] & _MODEL else 0)
            else:
                px = 0.0
        self.outcomes[outcome.name.lower()] += 1
        return outcome, px, filled

    def close(self) -> None:
        pass

    def _by_instrument(self) -> dict[str, dict[str, object]]:
        out: dict[str, dict[str, object]] = {}
        for (v, k), a in self.instrument_accounts.items():
            if a.fills:
                out.setdefault(str(k), {})[Venue(v).name.lower()] = a.summary()
        return out

    def summary(self) -> dict[str, object]:
        """Final JSON-able summary (written to <metrics-dir>/paper.json by the execution process)."""
        return {
            "transport": self.name,
            "config": {"latency_ms": self.cfg.latency_ms, "fee_bps": self.cfg.fee_bps,
                       "taker_fee_bps": {Venue(v).name.lower(): bps for v, bps in self.taker_bps.items()},
                       "fee_tiers": {v.name.lower(): self.cfg.fee_tier(v.name.lower()) for v in Venue},
                       "limit_to_top_size": self.cfg.limit_to_top_size, "markout_ms": list(self.cfg.markout_ms)},
            "outcomes": dict(self.outcomes),
            "unsettled_orders": len(self._pending),
            "venues": {Venue(v).name.lower(): a.summary() for v, a in self.accounts.items() if a.fills},
            # every instrument's accounts by id (the first instrument's are ``venues`` too)
            "instruments": self._by_instrument(),
            "t_ns": time.time_ns(),
        }
