"""The account stream checked against order replies: one ledger both live transports share.

A venue's account stream (Binance ``ORDER_TRADE_UPDATE`` on the user-data stream, Hyperliquid ``orderUpdates``)
is the venue's own record of every order. Each order is known here by the key it carries on the wire (Binance
client order id, Hyperliquid cloid) and is in one of three states:

* **awaiting** its reply: a terminal update settles it at once (``SETTLE``: a lost reply does not wait for the
  reply deadline); progress before the end (NEW, a partial fill of an IOC still matching) is ignored;
* **open** (a reply said it rests on the book, or a resting order part-filled): every update that fills more or
  ends it is the venue's truth about that resting order and is delivered (``SETTLE``);
* **final** (a reply settled it): its terminal update is compared with what the reply said (``CONFIRMED``, or
  ``MISMATCH`` naming both sides; ``last_mismatch`` keeps the text for the engine, which halts trading on it).

Anything else is ``UNMATCHED`` (another client's order on the account, or a key we forgot). ``awaiting`` and
``forget`` run on the engine thread (one dict operation each); the rest on reader threads (a transport may have two:
order replies and the account stream), serialised by one lock, never taken on the engine thread.
"""

from __future__ import annotations

import collections
import enum
import threading
from collections.abc import Callable

from caerus import wire

_KEPT = 4096  # settled orders remembered to check against the stream
_QTY_EPS = 1e-9


class Verdict(enum.Enum):
    IGNORE = "ignore"  # progress that settles nothing (NEW, a partial fill of an order still awaiting its reply)
    SETTLE = "settle"  # deliver the update as the order's reply
    CONFIRMED = "confirmed"
    MISMATCH = "mismatch"
    UNMATCHED = "unmatched"


class AccountStreamLedger:
    """Per order key: awaiting its reply, open on the book, or final; and what the account stream said of it."""

    def __init__(self, venue: str, kept: int = _KEPT) -> None:
        self.venue = venue
        self._kept = kept
        self._awaiting: dict[str, tuple[int, bool]] = {}  # key -> (request id, ioc)
        # key -> (order id, outcome, cumulative qty, open on the book, ioc)
        self._known: collections.OrderedDict[str, tuple[int, wire.Outcome, float, bool, bool]] = \
            collections.OrderedDict()
        self.last_mismatch = ""
        self._lock = threading.Lock()

    def awaiting(self, key: str, req_id: int, ioc: bool) -> None:
        """Engine thread, before the order's frame is sent: its reply is awaited."""
        self._awaiting[key] = (req_id, ioc)

    def forget(self, key: str) -> None:
        """The order never left (the send failed)."""
        self._awaiting.pop(key, None)

    def reset_awaiting(self) -> None:
        """A disconnect: orders awaiting replies are now the engine's UNKNOWN orders (resolved by status queries)."""
        self._awaiting.clear()

    def settled(self, key: str, order_id: int, outcome: wire.Outcome, qty: float) -> None:
        """A reply (or an update) settled the order as ``outcome`` with ``qty`` filled so far. It stays open on
        the book when resting (SENT) or part-filled without being IOC, as the engine keeps it."""
        with self._lock:
            self._settle_locked(key, order_id, outcome, qty)

    def _settle_locked(self, key: str, order_id: int, outcome: wire.Outcome, qty: float) -> None:
        entry = self._awaiting.pop(key, None)
        prior = self._known.get(key)
        ioc = entry[1] if entry is not None else (prior[4] if prior is not None else True)
        is_open = outcome == wire.Outcome.SENT or (outcome == wire.Outcome.PARTIAL and not ioc)
        self._known[key] = (order_id, outcome, qty, is_open, ioc)
        self._known.move_to_end(key)
        if len(self._known) > self._kept:
            self._known.popitem(last=False)

    def on_update(self, key: str, outcome: wire.Outcome, qty: float, terminal: bool,
                  take_pending: Callable[[int], int | None]) -> tuple[Verdict, int]:
        """An account-stream update of ``key``: its verdict and the order id it concerns (0 when unmatched).
        ``terminal``: the update ends the order (filled, expired, cancelled, rejected). For an order awaiting its
        reply, ``take_pending(request id)`` removes it from the transport's in-flight table and returns its order
        id (None when the reply got there first: then the update is counted unmatched, never settled twice)."""
        with self._lock:
            verdict, ref = self._classify(key, outcome, qty, terminal)
            if verdict is not Verdict.SETTLE:
                return verdict, ref
            if key in self._awaiting:
                order_id = take_pending(ref)
                if order_id is None:
                    return Verdict.UNMATCHED, 0
                ref = order_id
            self._settle_locked(key, ref, outcome, qty)
            return Verdict.SETTLE, ref

    def _classify(self, key: str, outcome: wire.Outcome, qty: float, terminal: bool) -> tuple[Verdict, int]:
        entry = self._awaiting.get(key)
        if entry is not None:
            return (Verdict.SETTLE, entry[0]) if terminal else (Verdict.IGNORE, 0)
        known = self._known.get(key)
        if known is None:
            return Verdict.UNMATCHED, 0
        order_id, said, said_qty, is_open, _ioc = known
        if is_open:
            if outcome == wire.Outcome.SENT and said == wire.Outcome.SENT:
                return Verdict.CONFIRMED, order_id  # the stream agrees: it rests on the book
            if outcome == wire.Outcome.SENT or (not terminal and qty <= said_qty + _QTY_EPS):
                return Verdict.IGNORE, 0
            return Verdict.SETTLE, order_id
        if not terminal:
            return Verdict.IGNORE, 0  # the steps before the end of an order a reply already settled
        if said == outcome and abs(said_qty - qty) <= _QTY_EPS:
            return Verdict.CONFIRMED, order_id
        self.last_mismatch = (f"{self.venue} order {order_id}: the reply said {said.name} {said_qty:g}, "
                              f"the account stream says {outcome.name} {qty:g}")
        return Verdict.MISMATCH, order_id
