"""Reconciliation with the venue: before the first order, and during the session.

* **At start** (:func:`reconcile_at_start`): a live transport reads the account's position and open orders; the
  engine's projected position starts there (so ``max_position`` counts what the venue already holds). A venue
  that cannot be read stops the process before it trades.
* **During the session** (:class:`PositionWatch`, from housekeeping): every ``reconcile_interval_s``, when no
  order is in flight, resting or unresolved, the venue's position is read again on a helper thread (never on the
  order loop) and compared with the engine's. A difference halts trading (``HaltCause.VENUE_MISMATCH``: every
  later order is refused by the kill switch) with a message naming both sides, and so does an account-stream
  update that contradicts a reply (the transport's ``stream_mismatch``). A sample during which an order went out
  is discarded, never compared: the two sides would describe different moments.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from caerus.execution.risk import RiskChecker
from caerus.execution.transports.base import Reconciles, VenueState
from caerus.runtime.supervisor import HaltCause, Supervisor

#: positions closer than this are equal (well below the smallest lot of either venue: 0.001 / 0.00001 BTC)
POSITION_EPS = 1e-9


def reconcile_at_start(transport: object, risk: RiskChecker, timeout_s: float,
                       process: str) -> VenueState | bool | None:
    """Read the venue's state before the first order and start the projected position there. The state read;
    False for transports with nothing to read (null, paper); None when the venue cannot be read (the caller
    refuses to trade)."""
    if not isinstance(transport, Reconciles):
        return False
    name = getattr(transport, "name", "venue")
    try:
        state = transport.venue_state(timeout_s)
    except RuntimeError as exc:
        print(f"error: {process}: cannot reconcile with the venue before trading, refusing to start: {exc}",
              file=sys.stderr)
        return None
    risk.position = state.position + state.resting
    print(f"{process}: reconciled with {name}: venue position {state.position:+g} BTC, resting orders "
          f"{state.resting:+g} BTC; trading starts from a projected position of {risk.position:+g} BTC",
          file=sys.stderr)
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
        venue = answer.position + answer.resting
        ours = self.engine.risk.position
        if abs(venue - ours) > POSITION_EPS:
            name = getattr(self.transport, "name", "venue")
            self.halt(f"position mismatch with {name}: the venue holds {answer.position:+g} BTC (resting "
                      f"{answer.resting:+g} BTC), the engine's position from confirmed fills is {ours:+g} BTC")

    def _check_stream(self) -> None:
        counts = getattr(self.transport, "reply_counts", None)
        n = counts.get("stream_mismatch", 0) if isinstance(counts, dict) else 0
        if n > self._mismatches_seen:
            self._mismatches_seen = n
            ledger = getattr(self.transport, "ledger", None)
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
