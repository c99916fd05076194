"""The execution engine's per-order path: order ring -> t_pickup -> risk -> send_msg -> EXEC record.

``step()`` is the hot path: poll the MPSC order ring, stamp t_pickup, sample queue_transit (t_pickup -
t_decision) into a preallocated buffer; then (off the measured interval) refresh the latest books, run the risk
checks and call ``transport.send_msg``, and publish one EXEC record with the outcome. Transports whose results
come later (paper with latency, live venues) deliver VenueReply objects to ``on_reply``; ``idle_work`` drains them
and publishes a second EXEC record per order with the final outcome and fill. So the EXEC ring carries, per order:
one record (RISK_REJECTED, or the final outcome of an immediate transport, or SENT for null), or two records
(SENT at send, then FILLED / PARTIAL / NOT_FILLED / VENUE_REJECTED / SEND_FAILED when the reply arrives); both
share order_id, t_pickup and t_sent, and the second has ``EXEC_FLAG_REPLY`` (0x80) set in ``flags``: readers
that count orders, fires or tick-to-decision samples skip records with that bit.
"""

from __future__ import annotations

import collections
import queue
import time

from caerus.execution.books import LatestBooks
from caerus.execution.risk import RiskChecker
from caerus.ipc.mpsc import MpscConsumer
from caerus.ipc.swmr import SwmrWriter
from caerus.metrics.hdr import SampleBuffer
from caerus.records.order import ORDER_FLAGS, ORDER_ORDER_ID, ORDER_T_DECISION, ORDER_TIF, ORDER_TRIGGER_T_WIRE
from caerus.venuekit.order_transport import SendResult, Transport, VenueReply
from caerus.wire import ExecFlags, OrderFlags, Outcome, RiskReject, Tif

_IOC = int(Tif.IOC)
_PARTIAL = int(Outcome.PARTIAL)
EXEC_FLAG_REPLY = int(ExecFlags.REPLY)
_SHADOW = int(OrderFlags.SHADOW)
# A real order picked up within this long of a shadow one counts as warmed (queue_transit_warmed); the strategy
# sends shadows every few hundred ms at most, so a longer gap means warming is off.
WARMED_WITHIN_NS = 1_000_000_000
# How long a sent order waits for its kernel transmit stamp (microseconds normally; a dropped connection never).
TX_STAMP_WAIT_NS = 1_000_000_000
_SENT = int(Outcome.SENT)
_RISK_REJECTED = int(Outcome.RISK_REJECTED)
_SEND_FAILED = int(Outcome.SEND_FAILED)
_UNKNOWN = int(Outcome.UNKNOWN)
_N_OUTCOMES = max(Outcome) + 1


class Engine:
    def __init__(
        self,
        consumer: MpscConsumer,
        transport: Transport,
        risk: RiskChecker,
        books: LatestBooks,
        exec_writer: SwmrWriter | None = None,
        *,
        max_pending: int = 65_536,
        transit: SampleBuffer | None = None,
        reply_timeout_ms: float = 5_000.0,
    ) -> None:
        self.consumer = consumer
        self.transport = transport
        self.risk = risk
        self.books = books
        self.exec_writer = exec_writer
        self.transit = transit or SampleBuffer(1 << 16)
        # decision_to_wire: t_sent (send_msg returned: a live transport's send syscall) - t_decision, per order sent
        self.to_wire = SampleBuffer(1 << 16)
        # pickup_to_sent: t_sent - t_pickup (risk, serialisation, signing, the send), per order sent
        self.to_sent = SampleBuffer(1 << 16)
        # -- shadow orders (wire.OrderFlags.SHADOW): the fire path rehearsed, never sent ---------------------------
        self.shadow_transit = SampleBuffer(1 << 14)  # t_pickup - t_decision of shadows
        self.shadow_to_done = SampleBuffer(1 << 14)  # t_pickup -> risk + serialisation + signing done
        # real orders' queue_transit split by whether shadows were flowing (only once a shadow has been seen)
        self.transit_warmed = SampleBuffer(1 << 14)
        self.transit_unwarmed = SampleBuffer(1 << 14)
        self.shadows = 0
        self.shadow_risk_rejects = 0
        self._last_shadow = 0  # t_pickup of the last shadow (0: none seen)
        self._rehearse = getattr(transport, "rehearse", None)
        # -- kernel transmit stamps (live transports: caerus.net.stamps) ----------------------------------------
        # order_id -> (t_decision, trigger t_wire, t_pickup, t_sent) of sent orders whose t_wire_out has not come;
        # bounded: an order whose stamp never comes (the connection went) is dropped after TX_STAMP_WAIT_NS.
        self._tx = getattr(transport, "tx_stamps", None)
        self._awaiting_tx: collections.OrderedDict[int, tuple[int, int, int, int]] = collections.OrderedDict()
        # The software transmit stamp is taken inside the send syscall (when the packet reaches the device), so on
        # an uncongested connection t_wire_out comes *before* t_sent: the path is t_pickup -> t_wire_out -> t_sent.
        self.pickup_to_wire_out = SampleBuffer(1 << 14)  # risk, serialisation, signing, syscall entry -> bytes out
        self.sent_after_wire_out = SampleBuffer(1 << 14)  # t_sent - t_wire_out: the syscall's return to our code
        self.decision_to_wire_out = SampleBuffer(1 << 14)  # t_wire_out - t_decision
        self.wire_to_wire = SampleBuffer(1 << 14)  # t_wire_out - the trigger book's t_wire (both kernel stamps)
        self.tx_stamped = 0
        self.tx_missing = 0  # sent orders whose transmit stamp never arrived
        self.replies: queue.SimpleQueue[VenueReply] = queue.SimpleQueue()
        self._tracks_replies = bool(getattr(transport, "replies", True))
        self._pump = getattr(transport, "pump", None)
        # order_id -> (order, t_pickup, t_sent) for orders a later reply will settle; bounded (oldest evicted).
        self.pending: collections.OrderedDict[int, tuple[tuple, int, int]] = collections.OrderedDict()
        self.max_pending = max_pending
        self.orders = 0
        self.outcomes = [0] * _N_OUTCOMES  # by Outcome code, of final and SENT results as published
        self.replies_seen = 0
        self.unknown_replies = 0  # replies for orders not pending (evicted or never sent here)
        self.pending_evicted = 0
        self.exec_records = 0
        self.send_errors = 0  # send_msg raised (published as SEND_FAILED)
        # -- no order left in limbo ----------------------------------------------------------------------------
        # Each tracked order has a reply deadline (t_sent + reply_timeout); past it, or when the transport reports
        # SEND_FAILED for an order already out (a disconnect: it may have filled), the order becomes UNKNOWN: an
        # EXEC record says so, it keeps counting toward the position at its worst case (in full) and stays pending
        # until ``resolve`` (a status query's answer) or a late reply settles it. Nothing is resent.
        self.reply_timeout_ns = int(reply_timeout_ms * 1e6)
        self._deadlines: collections.deque[tuple[int, int]] = collections.deque()  # (deadline ns, order_id)
        self.unknown: set[int] = set()  # order ids in UNKNOWN state
        self._acked: set[int] = set()  # resting orders the venue acknowledged: no reply deadline any more
        self.orders_unknown = 0  # orders that became UNKNOWN (timed out or disconnected)
        self.orders_timed_out = 0  # ... of which by their reply deadline
        self.resolved_by_query = 0  # UNKNOWN orders settled by ``resolve`` (a status query)
        self.resolved_late = 0  # UNKNOWN orders settled by a late reply
        self.status_queries = 0  # status queries asked (an UNKNOWN order is asked again every reply timeout)
        self._ask_due: dict[int, int] = {}  # UNKNOWN order id -> when to ask the venue again
        # The transport's status query, when it has one: ``query_status(order_id)`` asks the venue and later
        # calls ``engine.resolve`` (through its reply path). Transports without one leave UNKNOWN orders to the
        # reconciliation of positions.
        self._query = getattr(transport, "query_status", None)

    def on_reply(self, reply: VenueReply) -> None:
        """ReplyCallback for transports: thread-safe, cheap."""
        self.replies.put(reply)

    def step(self) -> bool:
        """Handle one order if there is one; False when the ring was empty."""
        order = self.consumer.poll()
        if order is None:
            return False
        t_pickup = time.time_ns()
        if order[ORDER_FLAGS] & _SHADOW:
            self._shadow(order, t_pickup)
            return True
        buf = self.transit
        transit = t_pickup - order[ORDER_T_DECISION]
        if buf.n < buf.capacity:
            buf.arr[buf.n] = transit
            buf.n += 1
        else:
            buf.full += 1
        # -- off the measured interval from here on ------------------------------------------------------
        if self._last_shadow:
            split = self.transit_warmed if t_pickup - self._last_shadow < WARMED_WITHIN_NS else self.transit_unwarmed
            if split.n < split.capacity:  # inline: still before the send (the decision_to_wire interval)
                split.arr[split.n] = transit
                split.n += 1
            else:
                split.full += 1
        self.orders += 1
        self.books.poll()
        reject = self.risk.check(order, t_pickup)
        if reject:
            self._publish(order, t_pickup, 0, _RISK_REJECTED, reject, 0, 0.0, 0.0)
            return True
        self.risk.accepted(order, t_pickup)
        try:
            res: SendResult = self.transport.send_msg(order)
        except Exception:
            # Never lose an order silently: record it as SEND_FAILED, then let the supervisor count the error.
            self.send_errors += 1
            self.risk.on_result(order, 0.0)
            self._publish(order, t_pickup, time.time_ns(), _SEND_FAILED, 0, 0, 0.0, 0.0)
            raise
        t_sent = res.t_sent
        if t_sent:
            tw = self.to_wire
            if tw.n < tw.capacity:
                tw.arr[tw.n] = t_sent - order[ORDER_T_DECISION]
                tw.n += 1
            else:
                tw.full += 1
            ts = self.to_sent
            if ts.n < ts.capacity:
                ts.arr[ts.n] = t_sent - t_pickup
                ts.n += 1
            else:
                ts.full += 1
        outcome = int(res.outcome)
        if self._tx is not None and t_sent and outcome == _SENT:
            self._awaiting_tx[order[ORDER_ORDER_ID]] = (order[ORDER_T_DECISION], order[ORDER_TRIGGER_T_WIRE], t_pickup,
                                                        t_sent)
        if outcome == _SENT:
            if self._tracks_replies:
                self._track(order, t_pickup, res.t_sent)
        else:
            self.risk.on_result(order, res.fill_qty)
        self._publish(order, t_pickup, res.t_sent, outcome, 0, res.venue_code, res.fill_px, res.fill_qty)
        return True

    def _shadow(self, order: tuple, t_pickup: int) -> None:
        """A shadow order: the same pickup, book refresh, risk checks and (through the transport's ``rehearse``)
        serialisation and signing as a real one, then dropped. It changes nothing a real order depends on: no
        EXEC record, no position, no rate-limit slot, no risk-reject counter (its producer sequence is used, as
        the strategy took it)."""
        self.books.poll()
        if self.risk.rehearse(order, t_pickup):
            self.shadow_risk_rejects += 1
        elif self._rehearse is not None:
            self._rehearse(order)
        t_done = time.time_ns()
        self.shadows += 1
        self._last_shadow = t_pickup
        self.shadow_transit.add(t_pickup - order[ORDER_T_DECISION])
        self.shadow_to_done.add(t_done - t_pickup)

    def _track(self, order: tuple, t_pickup: int, t_sent: int) -> None:
        pending = self.pending
        pending[order[ORDER_ORDER_ID]] = (order, t_pickup, t_sent)
        self._deadlines.append((t_sent + self.reply_timeout_ns, order[ORDER_ORDER_ID]))
        if len(pending) > self.max_pending:
            pending.popitem(last=False)
            self.pending_evicted += 1

    def idle_work(self, now: int) -> None:
        """Between orders: refresh books, let the transport settle what is due, publish replies, read the order
        socket's transmit stamps."""
        self.books.poll()
        if self._pump is not None:
            self._pump(now)
        self.drain_replies()
        if self._deadlines and self._deadlines[0][0] <= now:
            self.check_deadlines(now)
        if self._tx is not None:
            # Every idle pass, orders awaiting or not (one non-blocking recvmsg when the queue is empty): every
            # send queues a stamp, and unread stamps of untagged sends (pings, queries, position checks: ~157 in
            # a default receive buffer) would make the kernel drop the next order's. Last, so the status queries
            # just sent above are read off in the same pass.
            self.collect_tx_stamps(now)

    def collect_tx_stamps(self, now: int) -> int:
        """Match the transport's kernel transmit stamps to sent orders and sample the path they close (the
        transport empties its error queue and discards, counting them, the stamps of sends that were no order);
        orders waiting longer than TX_STAMP_WAIT_NS are counted as missing. Returns the stamps matched."""
        assert self._tx is not None
        n = 0
        awaiting = self._awaiting_tx
        for oid, t_out in self._tx():
            entry = awaiting.pop(oid, None)
            if entry is None:
                continue
            t_decision, t_wire, t_pickup, t_sent = entry
            n += 1
            self.pickup_to_wire_out.add(t_out - t_pickup)
            self.sent_after_wire_out.add(t_sent - t_out)
            self.decision_to_wire_out.add(t_out - t_decision)
            if t_wire:  # the trigger book had no kernel receive stamp: no wire-to-wire (never substituted)
                self.wire_to_wire.add(t_out - t_wire)
        self.tx_stamped += n
        while awaiting:
            oid, (_, _, _, t_sent) = next(iter(awaiting.items()))
            if now - t_sent < TX_STAMP_WAIT_NS:
                break
            del awaiting[oid]
            self.tx_missing += 1
        return n

    def check_deadlines(self, now: int) -> int:
        """Orders past their reply deadline become UNKNOWN (and the transport is asked for their status)."""
        n = 0
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            _, oid = deadlines.popleft()
            if oid not in self.pending or oid in self._acked:
                continue
            if oid in self.unknown:  # still unresolved a reply timeout after its last query: ask again
                if self._ask_due.get(oid, 0) <= now:
                    self._ask(oid, now)
                continue
            self.orders_timed_out += 1
            self._to_unknown(oid, now)
            n += 1
        return n

    def _ask(self, oid: int, now: int) -> None:
        """A status query for an UNKNOWN order, repeated every reply timeout until it is resolved."""
        if self._query is None:
            return
        self.status_queries += 1
        self._query(oid)  # a status query, never a resend
        self._ask_due[oid] = due = now + self.reply_timeout_ns
        self._deadlines.append((due, oid))

    def _to_unknown(self, oid: int, now: int) -> None:
        order, t_pickup, t_sent = self.pending[oid]
        self.unknown.add(oid)
        self.orders_unknown += 1
        # No on_result: the whole order keeps counting toward the position (worst case) until resolved.
        self._publish_reply(order, t_pickup, t_sent, _UNKNOWN, 0, 0.0, 0.0)
        self._ask(oid, now)

    def resolve(self, order_id: int, outcome: Outcome | int, fill_px: float, fill_qty: float,
                venue_code: int = 0) -> bool:
        """Settle an order from a status query's answer (the seam the live transports call, on the engine's
        thread or through their reply queue). False when the order is not pending here."""
        if order_id not in self.pending:
            self.unknown_replies += 1
            return False
        outcome = int(outcome)
        if outcome in (_SEND_FAILED, _UNKNOWN):
            return False  # the query itself found nothing: the order stays UNKNOWN and is asked about again
        if order_id in self.unknown:
            self.resolved_by_query += 1
        self._settle(order_id, outcome, fill_px, fill_qty, venue_code, by_query=True)
        return True

    def drain_replies(self) -> int:
        n = 0
        replies = self.replies
        while not replies.empty():
            reply = replies.get_nowait()
            n += 1
            self.replies_seen += 1
            if reply.by_query:
                self.resolve(reply.order_id, reply.outcome, reply.fill_px, reply.fill_qty, reply.venue_code)
                continue
            if reply.order_id not in self.pending:
                self.unknown_replies += 1
                continue
            self._settle(reply.order_id, int(reply.outcome), reply.fill_px, reply.fill_qty, reply.venue_code)
        return n

    def _settle(self, oid: int, outcome: int, fill_px: float, fill_qty: float, venue_code: int,
                by_query: bool = False) -> None:
        order, t_pickup, t_sent = self.pending[oid]
        if outcome in (_SEND_FAILED, _UNKNOWN):
            # The transport lost the order after it went out (disconnect): it may have filled. UNKNOWN, worst case.
            if oid not in self.unknown:
                self._to_unknown(oid, time.time_ns())
            return
        if oid in self.unknown and not by_query:
            self.resolved_late += 1
        # A resting acknowledgement (SENT) or a partial fill of a GTC/ALO order is not final: the rest still
        # rests on the book and keeps counting toward the position until a fill or cancel settles it.
        if outcome != _SENT and not (outcome == _PARTIAL and order[ORDER_TIF] != _IOC):
            del self.pending[oid]
            self.unknown.discard(oid)
            self._acked.discard(oid)
            self._ask_due.pop(oid, None)
            self.risk.on_result(order, fill_qty)  # fill_qty: the order's cumulative fill
        else:
            self._acked.add(oid)
            self.unknown.discard(oid)  # known again: resting on the book (it still counts toward the position)
            self._ask_due.pop(oid, None)
        self._publish_reply(order, t_pickup, t_sent, outcome, venue_code, fill_px, fill_qty)

    def _publish_reply(self, order: tuple, t_pickup: int, t_sent: int, outcome: int, venue_code: int,
                       fill_px: float, fill_qty: float) -> None:
        # The follow-up record carries the REPLY bit in `flags` so readers counting orders skip it.
        order = (*order[:ORDER_FLAGS], order[ORDER_FLAGS] | EXEC_FLAG_REPLY, *order[ORDER_FLAGS + 1:])
        self._publish(order, t_pickup, t_sent, outcome, 0, venue_code, fill_px, fill_qty)

    def _publish(self, order: tuple, t_pickup: int, t_sent: int, outcome: int, risk: int, venue_code: int,
                 fill_px: float, fill_qty: float) -> None:
        self.outcomes[outcome] += 1
        if self.exec_writer is not None:
            self.exec_writer.publish(*order, t_pickup, t_sent, outcome, risk, 0, venue_code, fill_px, fill_qty)
            self.exec_records += 1

    @property
    def risk_rejects(self) -> list[int]:
        return self.risk.rejects


RISK_NAMES = tuple(r.name.lower() for r in RiskReject if r != RiskReject.NONE)
OUTCOME_NAMES = tuple(o.name.lower() for o in Outcome)
