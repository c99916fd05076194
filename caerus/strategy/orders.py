"""The strategy's per-order state: what it sent, what the engine confirmed, and the position that follows.

The strategy learns what happened to its orders from the EXEC ring the execution engine writes (one record per
order at pickup, a second with ``ExecFlags.REPLY`` when a venue answers later). This table keeps, per order it
pushed, a state: IN_FLIGHT (pushed, no final result yet) -> FILLED / PARTIAL / NOT_FILLED / REJECTED (final), or
UNKNOWN (no final result by ``order_timeout_ms``, or the engine reported the order UNKNOWN: it may have filled).
An UNKNOWN order that later gets a final result is resolved (counted ``unknown_resolved``) and its fill applied.

The position is the sum of *confirmed* fills only (``fill_qty`` in a final record is the order's cumulative fill).
While an order is in flight the strategy sends nothing else; an UNKNOWN order counts at its worst case for the
position limit (``unknown_long`` / ``unknown_short``) and an exit never re-closes what an unknown exit may have
closed already.

Preallocated: one slot per order, ``slot = seq & (capacity - 1)`` in parallel lists; nothing is allocated per
order. A slot still IN_FLIGHT or UNKNOWN is never reused (``free`` is False: the strategy holds the order back).
"""

from __future__ import annotations

from caerus.records.exec import (
    EXEC_FILL_QTY,
    EXEC_FLAGS,
    EXEC_ORDER_ID,
    EXEC_OUTCOME,
    EXEC_RISK,
    EXEC_SEQ,
    EXEC_STRATEGY_ID,
)
from caerus.wire import ExecFlags, Outcome, RiskReject

# States (values of OrderTable.state[slot]).
FREE, IN_FLIGHT, FILLED, PARTIAL, NOT_FILLED, REJECTED, UNKNOWN = range(7)
STATE_NAMES = ("free", "in_flight", "filled", "partial", "not_filled", "rejected", "unknown")
FINAL_NAMES = ("filled", "partial", "not_filled", "rejected", "unknown_resolved")

_REPLY = int(ExecFlags.REPLY)
_SENT = int(Outcome.SENT)
_FILLED = int(Outcome.FILLED)
_PARTIAL = int(Outcome.PARTIAL)
_NOT_FILLED = int(Outcome.NOT_FILLED)
_CANCELLED = int(Outcome.CANCELLED)
_RISK_REJECTED = int(Outcome.RISK_REJECTED)
_VENUE_REJECTED = int(Outcome.VENUE_REJECTED)
_SEND_FAILED = int(Outcome.SEND_FAILED)
_UNKNOWN = int(Outcome.UNKNOWN)
_WITH_FILL = frozenset((_FILLED, _PARTIAL, _NOT_FILLED, _CANCELLED))
_REJECTS = frozenset((_RISK_REJECTED, _VENUE_REJECTED, _SEND_FAILED))
# A refusal for a re-delivered copy of the record says nothing about the order itself (the first copy counts).
_COPY_REFUSALS = (int(RiskReject.DUPLICATE), int(RiskReject.OUT_OF_ORDER))
_EPS = 1e-12


class OrderTable:
    """Per-order state for one strategy (``strategy_id``) and the confirmed position."""

    __slots__ = ("_mask", "_timeout", "capacity", "filled", "finals", "in_flight", "oid", "position",
                 "qty", "records", "side", "state", "strategy_id", "t_sent", "unknown", "unknown_long",
                 "unknown_short", "unmatched")

    def __init__(self, strategy_id: int, capacity: int = 1024, timeout_ms: float = 5_000.0) -> None:
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f"order table capacity must be a power of two >= 2, got {capacity}")
        self.strategy_id = strategy_id
        self.capacity = capacity
        self._mask = capacity - 1
        self._timeout = int(timeout_ms * 1e6)
        self.oid = [0] * capacity
        self.side = [0] * capacity
        self.qty = [0.0] * capacity
        self.filled = [0.0] * capacity
        self.t_sent = [0] * capacity
        self.state = [FREE] * capacity
        self.position = 0.0  # BTC, confirmed fills only
        self.in_flight = 0
        self.unknown = 0
        self.unknown_long = 0.0  # qty of UNKNOWN buys (worst case: all filled)
        self.unknown_short = 0.0
        self.finals = [0] * len(FINAL_NAMES)  # orders by final state (index in FINAL_NAMES)
        self.records = 0  # EXEC records of this strategy seen
        self.unmatched = 0  # records of this strategy for an order the table does not hold (an old run, evicted)

    def free(self, seq: int) -> bool:
        """The slot for ``seq`` can take a new order (not IN_FLIGHT / UNKNOWN)."""
        st = self.state[seq & self._mask]
        return st != IN_FLIGHT and st != UNKNOWN

    def sent(self, oid: int, seq: int, side: int, qty: float, now: int) -> None:
        """The order was pushed into the order ring at ``now``: it is in flight."""
        i = seq & self._mask
        self.oid[i] = oid
        self.side[i] = side
        self.qty[i] = qty
        self.filled[i] = 0.0
        self.t_sent[i] = now
        self.state[i] = IN_FLIGHT
        self.in_flight += 1

    def on_exec(self, rec: tuple) -> float:
        """Apply one EXEC record; returns the signed confirmed fill it added to the position (0.0 if none)."""
        if rec[EXEC_STRATEGY_ID] != self.strategy_id:
            return 0.0
        self.records += 1
        i = rec[EXEC_SEQ] & self._mask
        st = self.state[i]
        if self.oid[i] != rec[EXEC_ORDER_ID] or (st != IN_FLIGHT and st != UNKNOWN):
            self.unmatched += 1
            return 0.0
        outcome = rec[EXEC_OUTCOME]
        if outcome == _SENT:
            return 0.0  # sent (or acknowledged resting): still in flight
        if outcome == _RISK_REJECTED and rec[EXEC_RISK] in _COPY_REFUSALS:
            return 0.0
        if outcome == _UNKNOWN or (outcome == _SEND_FAILED and rec[EXEC_FLAGS] & _REPLY):
            # The connection dropped with the order out: it may have filled. Worst case until resolved.
            if st == IN_FLIGHT:
                self._to_unknown(i)
            return 0.0
        fill = 0.0
        if outcome in _WITH_FILL:
            fill = rec[EXEC_FILL_QTY]
            fill = fill if fill > 0.0 else 0.0
        final = (REJECTED if outcome in _REJECTS
                 else FILLED if fill >= self.qty[i] - _EPS else PARTIAL if fill > _EPS else NOT_FILLED)
        delta = fill - self.filled[i]
        self.filled[i] = fill
        signed = self.side[i] * delta if delta > _EPS else 0.0
        pos = self.position + signed
        self.position = 0.0 if -_EPS < pos < _EPS else pos
        if st == UNKNOWN:
            self._leave_unknown(i)
            self.finals[4] += 1
        else:
            self.in_flight -= 1
        self.state[i] = final
        self.finals[final - FILLED] += 1
        return signed

    def expire(self, now: int) -> int:
        """Orders in flight longer than the timeout become UNKNOWN (off the hot path); returns how many."""
        if not self.in_flight:
            return 0
        n = 0
        limit = now - self._timeout
        state = self.state
        for i in range(self.capacity):
            if state[i] == IN_FLIGHT and self.t_sent[i] < limit:
                self._to_unknown(i)
                n += 1
        return n

    def _to_unknown(self, i: int) -> None:
        self.state[i] = UNKNOWN
        self.in_flight -= 1
        self.unknown += 1
        if self.side[i] > 0:
            self.unknown_long += self.qty[i]
        else:
            self.unknown_short += self.qty[i]

    def _leave_unknown(self, i: int) -> None:
        self.unknown -= 1
        if self.side[i] > 0:
            self.unknown_long = max(0.0, self.unknown_long - self.qty[i])
        else:
            self.unknown_short = max(0.0, self.unknown_short - self.qty[i])

    def counts(self) -> dict[str, int]:
        """Orders by final state, plus the ones still in flight or unknown (for counters and the report)."""
        out = dict(zip(FINAL_NAMES, self.finals, strict=True))
        out["in_flight"] = self.in_flight
        out["unknown"] = self.unknown
        return out
