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

Anything else is ``UNMATCHED`` (another client's order on the account, or a key we forgot).

Fills (Hyperliquid ``userFills``, ``fills=True``): the venue's fills of each order are summed by key. They settle
an order awaiting its reply once they reach its whole size, deliver the fills of a resting order, and are checked
against what the reply (or the order updates) said was filled: fills beyond it are a ``MISMATCH`` at once; fills
short of it are one once ``fills_grace_s`` has passed without them arriving (:meth:`overdue`, from idle work).
Every mismatch names the instrument and both sides, and counts in ``mismatches`` (the position watch halts on it).

``awaiting`` and
``forget`` run on the engine thread (one dict operation each); the rest on reader threads (a transport may have two:
order replies and the account stream), serialised by one lock, never taken on the engine thread.
"""

from __future__ import annotations

import collections
import enum
import threading
import time
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


class _Order:
    """What the ledger knows of one order (one object per order, off the hot path: reader threads)."""

    __slots__ = ("fill_px_qty", "fill_qty", "instrument", "ioc", "is_open", "order_id", "outcome", "qty", "req_id",
                 "short_since", "size")

    def __init__(self, req_id: int, ioc: bool, instrument: str, size: float) -> None:
        self.req_id = req_id
        self.ioc = ioc
        self.instrument = instrument
        self.size = size  # 0.0: unknown (never settled from fills alone)
        self.order_id = 0
        self.outcome: wire.Outcome | None = None  # None: awaiting its reply
        self.qty = 0.0  # filled, as the reply / the order updates said
        self.is_open = False
        self.fill_qty = 0.0  # filled, as the venue's fills say (userFills)
        self.fill_px_qty = 0.0  # sum of price * size of those fills
        self.short_since = 0.0  # time.monotonic() since when the fills are short of ``qty`` (0: they are not)


class AccountStreamLedger:
    """Per order key: awaiting its reply, open on the book, or final; what the account stream and (``fills``) the
    venue's fills said of it."""

    def __init__(self, venue: str, kept: int = _KEPT, *, fills: bool = False, fills_grace_s: float = 5.0) -> None:
        self.venue = venue
        self._kept = kept
        self._fills = fills
        self._grace = fills_grace_s
        self._awaiting: dict[str, _Order] = {}
        self._known: collections.OrderedDict[str, _Order] = collections.OrderedDict()
        self._early: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()  # fills of keys
        # not seen yet (a fill read before the engine thread registered its order: never, it registers first; or
        # another client's order)
        self.last_mismatch = ""
        self.mismatches = 0
        self._lock = threading.Lock()

    def awaiting(self, key: str, req_id: int, ioc: bool, instrument: str = "", size: float = 0.0) -> None:
        """Engine thread, before the order's frame is sent: its reply is awaited. ``instrument`` names it in a
        mismatch; ``size`` lets its fills settle it."""
        self._awaiting[key] = _Order(req_id, ioc, instrument, size)

    def forget(self, key: str) -> None:
        """The order never left (the send failed)."""
        self._awaiting.pop(key, None)

    def reset_awaiting(self) -> None:
        """A disconnect: orders awaiting replies are now the engine's UNKNOWN orders (resolved by status queries)."""
        for key, entry in list(self._awaiting.items()):
            if entry.fill_qty > 0.0:  # keep what the venue's fills said of it for the status query's answer
                self._early[key] = (entry.fill_qty, entry.fill_px_qty)
        self._awaiting.clear()

    def settled(self, key: str, order_id: int, outcome: wire.Outcome, qty: float) -> None:
        """A reply (or an update) settled the order as ``outcome`` with ``qty`` filled so far. It stays open on
        the book when resting (SENT) or part-filled without being IOC, as the engine keeps it."""
        with self._lock:
            self._settle_locked(key, order_id, outcome, qty)

    def _settle_locked(self, key: str, order_id: int, outcome: wire.Outcome, qty: float) -> None:
        entry = self._awaiting.pop(key, None) or self._known.get(key)
        if entry is None:
            entry = _Order(0, True, "", 0.0)
            early = self._early.pop(key, None)
            if early is not None:
                entry.fill_qty, entry.fill_px_qty = early
        entry.order_id, entry.outcome, entry.qty = order_id, outcome, qty
        entry.is_open = outcome == wire.Outcome.SENT or (outcome == wire.Outcome.PARTIAL and not entry.ioc)
        self._known[key] = entry
        self._known.move_to_end(key)
        if len(self._known) > self._kept:
            self._known.popitem(last=False)
        if self._fills:
            self._compare_fills(entry)

    def _compare_fills(self, entry: _Order) -> Verdict:
        """The venue's fills against what was said filled: MISMATCH when they exceed it (recorded), else
        CONFIRMED when equal, IGNORE while short (the clock for ``overdue`` runs)."""
        if entry.fill_qty > entry.qty + _QTY_EPS:
            self._mismatch(entry, f"{entry.outcome.name if entry.outcome else 'awaiting'} {entry.qty:g}",
                           f"userFills show {entry.fill_qty:g} filled")
            return Verdict.MISMATCH
        if entry.fill_qty < entry.qty - _QTY_EPS:
            if not entry.short_since:
                entry.short_since = time.monotonic()
            return Verdict.IGNORE
        entry.short_since = 0.0
        return Verdict.CONFIRMED

    def _mismatch(self, entry: _Order, said: str, stream: str) -> None:
        what = f"{self.venue} {entry.instrument} order" if entry.instrument else f"{self.venue} order"
        self.last_mismatch = f"{what} {entry.order_id}: the reply said {said}, the account stream says {stream}"
        self.mismatches += 1

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
            return (Verdict.SETTLE, entry.req_id) if terminal else (Verdict.IGNORE, 0)
        known = self._known.get(key)
        if known is None or known.outcome is None:
            return Verdict.UNMATCHED, 0
        order_id, said, said_qty = known.order_id, known.outcome, known.qty
        if known.is_open:
            if outcome == wire.Outcome.SENT and said == wire.Outcome.SENT:
                return Verdict.CONFIRMED, order_id  # the stream agrees: it rests on the book
            if outcome == wire.Outcome.SENT or (not terminal and qty <= said_qty + _QTY_EPS):
                return Verdict.IGNORE, 0
            return Verdict.SETTLE, order_id
        if not terminal:
            return Verdict.IGNORE, 0  # the steps before the end of an order a reply already settled
        if said == outcome and abs(said_qty - qty) <= _QTY_EPS:
            return Verdict.CONFIRMED, order_id
        self._mismatch(known, f"{said.name} {said_qty:g}", f"{outcome.name} {qty:g}")
        return Verdict.MISMATCH, order_id

    def on_fill(self, key: str, qty: float, px: float,
                take_pending: Callable[[int], int | None]) -> tuple[Verdict, int, wire.Outcome, float, float]:
        """One of the venue's fills of ``key`` (``userFills``): (verdict, order id, outcome, cumulative qty, average
        price). SETTLE: the fills complete an order awaiting its reply (FILLED), or fill more of a resting one
        (PARTIAL / FILLED) -- deliver it as the order's reply. CONFIRMED: the fills now equal what a reply said.
        MISMATCH: they exceed it (``last_mismatch`` names both sides). IGNORE: short of it so far."""
        with self._lock:
            entry = self._awaiting.get(key) or self._known.get(key)
            if entry is None:
                prior = self._early.pop(key, (0.0, 0.0))
                self._early[key] = (prior[0] + qty, prior[1] + qty * px)
                if len(self._early) > self._kept:
                    self._early.popitem(last=False)
                return Verdict.UNMATCHED, 0, wire.Outcome.SENT, 0.0, 0.0
            entry.fill_qty += qty
            entry.fill_px_qty += qty * px
            total, avg = entry.fill_qty, entry.fill_px_qty / entry.fill_qty
            full = entry.size > 0.0 and total >= entry.size - _QTY_EPS
            if entry.outcome is None:  # awaiting its reply
                if not full:
                    return Verdict.IGNORE, 0, wire.Outcome.SENT, total, avg
                order_id = take_pending(entry.req_id)
                if order_id is None:  # the reply got there first
                    return Verdict.IGNORE, 0, wire.Outcome.SENT, total, avg
                self._settle_locked(key, order_id, wire.Outcome.FILLED, total)
                return Verdict.SETTLE, order_id, wire.Outcome.FILLED, total, avg
            if entry.is_open and total > entry.qty + _QTY_EPS and (entry.size <= 0.0 or total <= entry.size
                                                                   + _QTY_EPS):
                outcome = wire.Outcome.FILLED if full else wire.Outcome.PARTIAL
                self._settle_locked(key, entry.order_id, outcome, total)
                return Verdict.SETTLE, entry.order_id, outcome, total, avg
            return self._compare_fills(entry), entry.order_id, entry.outcome, total, avg

    def overdue(self, now: float | None = None) -> int:
        """Mismatches for final orders whose fills have stayed short of what their reply said for longer than
        ``fills_grace_s`` (idle work calls this); how many were found (``last_mismatch`` names the last)."""
        if not self._fills:
            return 0
        now = time.monotonic() if now is None else now
        found = 0
        with self._lock:
            for entry in self._known.values():
                if entry.short_since and not entry.is_open and now - entry.short_since > self._grace:
                    entry.short_since = 0.0  # reported once
                    found += 1
                    self._mismatch(entry, f"{entry.outcome.name if entry.outcome else '?'} {entry.qty:g}",
                                   f"userFills show {entry.fill_qty:g} filled after {self._grace:g} s")
        return found
