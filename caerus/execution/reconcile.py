"""Reconciliation with the venue: before the first order, and during the session.

* **At start** (:func:`reconcile_at_start`): a live transport reads the account's position and open orders on
  every instrument it trades; each instrument's projected position starts there (so ``max_position`` counts what
  the venue already holds). A venue that cannot be read stops the process before it trades.
* **During the session** (:class:`PositionWatch`, from housekeeping): every ``reconcile_interval_s``, when no
  order is in flight, resting or unresolved, the venue's state is read again on a helper thread (never on the
  order loop) and compared with the engine's, instrument by instrument: the position, and (where the venue lists
  them) the open orders: while quiet the engine rests none of its own, so an open order that was not there at
  start is someone else's or one the engine thinks is over, and is named (one found at start that is gone was
  filled or cancelled: the position comparison covers its fill). A difference halts trading
  (``HaltCause.VENUE_MISMATCH``: every later order is refused by the kill switch) with a message naming the
  instrument and both sides, and so does an account-stream update or a venue fill that contradicts a reply (the
  ledger's ``mismatches``). A sample during which an order went out is discarded, never compared: the two sides
  would describe different moments.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from caerus.execution.risk import RiskChecker
from caerus.instruments import InstrumentSet
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.venuekit.order_transport import Reconciles, VenueState

#: positions closer than this are equal (well below the smallest lot of either venue: 0.001 / 0.00001 BTC)
POSITION_EPS = 1e-9


def _names(transport: object, n: int) -> tuple[str, ...]:
    insts = getattr(transport, "instruments", None)
    if isinstance(insts, InstrumentSet) and len(insts) == n:
        return insts.names
    return ("BTC",) if n == 1 else tuple(f"instrument {i}" for i in range(n))


def reconcile_at_start(transport: object, risk: RiskChecker, timeout_s: float,
                       process: str) -> VenueState | bool | None:
    """Read the venue's state before the first order and start each instrument's projected position there. The
    state read; False for transports with nothing to read (null, paper); None when the venue cannot be read (the
    caller refuses to trade)."""
    if not isinstance(transport, Reconciles):
        return False
    name = getattr(transport, "name", "venue")
    try:
        state = transport.venue_state(timeout_s)
    except RuntimeError as exc:
        print(f"error: {process}: cannot reconcile with the venue before trading, refusing to start: {exc}",
              file=sys.stderr)
        return None
    if len(state.positions) != risk.instruments:
        print(f"error: {process}: {name} reported {len(state.positions)} instruments, the session trades "
              f"{risk.instruments}; refusing to start", file=sys.stderr)
        return None
    for k, inst in enumerate(_names(transport, len(state.positions))):
        risk.positions[k] = state.positions[k] + state.resting_by[k]
        print(f"{process}: reconciled with {name}: venue position {state.positions[k]:+g} {inst}, resting orders "
              f"{state.resting_by[k]:+g} {inst}; trading starts from a projected position of "
              f"{risk.positions[k]:+g} {inst}", file=sys.stderr)
    return state


class PositionWatch:
    """Mid-session checks of the engine's position against the venue's, and of replies against the account
    stream; halts trading on a difference. ``tick`` runs in housekeeping (engine thread)."""

    def __init__(self, transport: object, engine: Any, sup: Supervisor, *, interval_s: float, timeout_s: float,
                 process: str) -> None:
        self.transport = transport
        self.engine = engine
        self.sup = sup
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.process = process
        self.enabled = interval_s > 0 and isinstance(transport, Reconciles)
        self._due = time.monotonic() + interval_s
        self._thread: threading.Thread | None = None
        self._answer: VenueState | BaseException | None = None
        self._orders_at_ask = 0
        self._mismatches_seen = 0
        # what the summary reports
        self.checks = 0  # comparisons made
        self.skipped = 0  # samples discarded: an order went out while the venue was asked
        self.failed = 0  # queries that failed (the venue did not answer in time, the connection was down)
        self.mismatch = ""  # the message trading halted with, if it did
        self.started_open: tuple[tuple[int, ...], ...] | None = None  # open orders at start (reconcile_at_start)

    def quiet(self) -> bool:
        """Nothing in flight, resting or unresolved: the engine's position is the venue's, if both are right."""
        return not self.engine.pending and not self.engine.unknown

    def tick(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._check_stream()
        if not self.enabled or self.sup.halted:
            return
        thread = self._thread
        if thread is not None:
            if not thread.is_alive():
                self._thread = None
                self._compare()
            return
        if now >= self._due and self.quiet():
            self._due = now + self.interval_s
            self._orders_at_ask = self.engine.orders
            self._answer = None
            self._thread = threading.Thread(target=self._ask, name=f"{self.process}-reconcile", daemon=True)
            self._thread.start()

    def _ask(self) -> None:
        try:
            self._answer = self.transport.venue_state(self.timeout_s)  # type: ignore[attr-defined]
        except BaseException as exc:  # handed to the engine thread, never raised on this one
            self._answer = exc

    def _compare(self) -> None:
        answer = self._answer
        if isinstance(answer, BaseException) or answer is None:
            self.failed += 1
            print(f"{self.process}: position check: the venue did not answer ({answer}); asked again later",
                  file=sys.stderr)
            return
        if self.engine.orders != self._orders_at_ask or not self.quiet():
            self.skipped += 1  # an order went out meanwhile: the two sides describe different moments
            return
        self.checks += 1
        name = getattr(self.transport, "name", "venue")
        positions = self.engine.risk.positions
        if len(answer.positions) != len(positions):
            self.halt(f"{name} reported {len(answer.positions)} instruments, the engine trades {len(positions)}")
            return
        names = _names(self.transport, len(positions))
        for k, inst in enumerate(names):
            venue = answer.positions[k] + answer.resting_by[k]
            ours = positions[k]
            if abs(venue - ours) > POSITION_EPS:
                self.halt(f"position mismatch with {name} on {inst}: the venue holds {answer.positions[k]:+g} "
                          f"{inst} (resting {answer.resting_by[k]:+g} {inst}), the engine's position from "
                          f"confirmed fills is {ours:+g} {inst}")
                return
        expected = self.started_open
        if answer.open_orders is None or expected is None or len(expected) != len(names):
            return
        for k, inst in enumerate(names):  # quiet: the engine rests nothing, so only what was there at start
            new = sorted(set(answer.open_orders[k]) - set(expected[k]))
            if new:
                self.halt(f"open orders mismatch with {name} on {inst}: the venue lists {len(new)} open order(s) "
                          f"the engine did not place and did not find at start (venue ids {new[:5]}); the engine "
                          f"rests none of its own")
                return
        # an order found at start that is gone filled or was cancelled: the position check above covers its fill
        self.started_open = answer.open_orders

    def _check_stream(self) -> None:
        ledger = getattr(self.transport, "ledger", None)
        n = getattr(ledger, "mismatches", None)
        if not isinstance(n, int):
            counts = getattr(self.transport, "reply_counts", None)
            n = counts.get("stream_mismatch", 0) if isinstance(counts, dict) else 0
        if n > self._mismatches_seen:
            self._mismatches_seen = n
            text = getattr(ledger, "last_mismatch", "") or "a reply and the account stream disagree"
            self.halt(f"account stream mismatch: {text}")

    def halt(self, message: str) -> None:
        if self.sup.halted:
            return
        self.mismatch = message
        print(f"error: {self.process}: {message}: trading halted (every later order is refused)", file=sys.stderr)
        self.sup.halt(HaltCause.VENUE_MISMATCH)

    def summary(self) -> dict[str, object]:
        return {"interval_s": self.interval_s if self.enabled else 0, "checks": self.checks,
                "skipped": self.skipped, "failed": self.failed, "mismatch": self.mismatch}

    def close(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(self.timeout_s + 1.0)  # bounded: venue_state is bounded by timeout_s
