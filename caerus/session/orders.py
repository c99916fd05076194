"""Orders by final state and the paper PnL of confirmed fills, from the EXEC records a session read.

Off the hot path (the session's progress poller feeds it every EXEC record). Per order (by order_id) it keeps the
latest outcome and the cumulative confirmed fill; a fill counts only when a record reports it (``fill_qty`` is
the order's cumulative fill, so only the increase is booked). Final states: filled, partial, not_filled,
rejected (risk, venue, or a send that failed before anything went out), unknown_resolved (an order that was
UNKNOWN and later got a final result), and -- for orders with no final result when the session ended --
unknown (the engine said UNKNOWN) or sent_no_result (SENT only: the null transport, or a session cut short).

PnL: a :class:`caerus.execution.paper_account.PaperAccount` per venue booked with the confirmed fills only (average
cost, each venue's taker fee as the paper transport charges it: ``PaperConfig.taker_bps``, or one fixed
``fee_bps``). The open position is marked at the last confirmed fill price of its venue (the
session reads no books), so ``pnl`` = realized - fees, and ``open_position`` says what is left unmarked.
"""

from __future__ import annotations

from typing import Any

from caerus.execution.config import PaperConfig
from caerus.execution.paper_account import PaperAccount
from caerus.records.exec import (
    EXEC_FILL_PX,
    EXEC_FILL_QTY,
    EXEC_FLAGS,
    EXEC_ORDER_ID,
    EXEC_OUTCOME,
    EXEC_QTY,
    EXEC_SIDE,
    EXEC_VENUE,
)
from caerus.wire import ExecFlags, Outcome, Venue

_REPLY = int(ExecFlags.REPLY)
_SENT = int(Outcome.SENT)
_UNKNOWN = int(Outcome.UNKNOWN)
_FILLED = int(Outcome.FILLED)
_PARTIAL = int(Outcome.PARTIAL)
_NOT_FILLED = int(Outcome.NOT_FILLED)
_CANCELLED = int(Outcome.CANCELLED)
_SEND_FAILED = int(Outcome.SEND_FAILED)
_REJECTED = frozenset((int(Outcome.RISK_REJECTED), int(Outcome.VENUE_REJECTED)))
FINAL_STATES = ("filled", "partial", "not_filled", "rejected", "unknown_resolved", "unknown", "sent_no_result")
_EPS = 1e-12


class ConfirmedOrders:
    def __init__(self, fee_bps: float | None = None) -> None:
        self.fee_bps = fee_bps  # None: each venue's taker fee of the paper transport's default tier
        self._paper = PaperConfig(fee_bps=fee_bps)
        # order_id -> [qty, latest outcome, cumulative fill, was_unknown]
        self.orders: dict[int, list[Any]] = {}
        self.accounts: dict[int, PaperAccount] = {}
        self.last_px: dict[int, float] = {}

    def add(self, rec: tuple) -> None:
        oid = rec[EXEC_ORDER_ID]
        outcome = rec[EXEC_OUTCOME]
        st = self.orders.get(oid)
        if st is None:
            if rec[EXEC_FLAGS] & _REPLY:
                return  # a reply for an order this reader never saw (ring lost it): no state to build on
            st = self.orders[oid] = [rec[EXEC_QTY], outcome, 0.0, False]
        elif outcome == _SENT:
            return  # a resting acknowledgement: the order is still open
        if outcome == _UNKNOWN or (outcome == _SEND_FAILED and rec[EXEC_FLAGS] & _REPLY):
            st[1] = _UNKNOWN
            st[3] = True
            return
        st[1] = outcome
        fill = rec[EXEC_FILL_QTY]
        if outcome in (_FILLED, _PARTIAL, _NOT_FILLED, _CANCELLED) and fill > st[2] + _EPS:
            venue = rec[EXEC_VENUE]
            px = rec[EXEC_FILL_PX]
            acct = self.accounts.get(venue)
            if acct is None:
                # a plugin venue (no schedule in caerus.fees) pays Hyperliquid's base taker rate, as every venue
                # did before fees were per venue
                name = Venue(venue).name.lower() if venue in Venue._value2member_map_ else "hyperliquid"
                acct = self.accounts[venue] = PaperAccount(self._paper.taker_bps(name), ())
            acct.fill(rec[EXEC_SIDE], px, fill - st[2], 0)
            st[2] = fill
            self.last_px[venue] = px

    def _state(self, st: list[Any]) -> str:
        qty, outcome, fill, was_unknown = st
        if outcome == _UNKNOWN:
            return "unknown"
        if outcome == _SENT:
            return "sent_no_result"
        if was_unknown:
            return "unknown_resolved"
        if outcome in _REJECTED or outcome == _SEND_FAILED:
            return "rejected"
        if fill >= qty - _EPS and fill > 0.0:
            return "filled"
        return "partial" if fill > _EPS else "not_filled"

    def summary(self) -> dict[str, Any]:
        by_state = dict.fromkeys(FINAL_STATES, 0)
        for st in self.orders.values():
            by_state[self._state(st)] += 1
        realized = fees = 0.0
        venues: dict[str, Any] = {}
        for v, acct in self.accounts.items():
            realized += acct.realized
            fees += acct.fees
            venues[Venue(v).name.lower() if v in Venue._value2member_map_ else f"venue_{v}"] = {
                "fills": acct.fills, "volume": acct.volume, "position": acct.position, "avg_px": acct.avg_px,
                "realized": acct.realized, "fees": acct.fees, "last_fill_px": self.last_px.get(v),
            }
        return {
            "orders_by_final_state": {k: n for k, n in by_state.items() if n},
            "pnl": realized - fees, "realized": realized, "fees": fees, "fee_bps": self.fee_bps,
            "taker_fee_bps": {n: self._paper.taker_bps(n) for n in ("binance", "hyperliquid")},
            "open_position": {k: d["position"] for k, d in venues.items() if abs(d["position"]) > _EPS},
            "venues": venues,
        }
