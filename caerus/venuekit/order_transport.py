"""The ``send_msg`` seam every execution transport implements (null, paper, and each venue's live one).

The engine picks an order off the MPSC ring as an unpacked ``wire.ORDER`` tuple and hands it to
``transport.send_msg(order)``. ``send_msg`` must return without waiting a venue round trip: a live transport
writes the signed frame to its socket and returns ``Outcome.SENT``; the venue's answer arrives later and is
delivered as a :class:`VenueReply` to the ``on_reply`` callback given at construction (called from the
transport's reader thread, so it must be cheap and thread-safe, e.g. ``queue.SimpleQueue.put``). Simulated
transports (null, paper) may decide the outcome at once and return it directly.

This module is a contract shared by several owners: keep it small and stable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from caerus import wire


@dataclass(frozen=True, slots=True)
class SendResult:
    """What ``send_msg`` did with one order (goes into the EXEC record)."""

    outcome: wire.Outcome
    fill_px: float = 0.0
    fill_qty: float = 0.0
    venue_code: int = 0  # venue error code on rejection, else 0
    t_sent: int = 0  # time.time_ns() when the frame left (or the simulated decision was made)


@dataclass(frozen=True, slots=True)
class VenueReply:
    """A venue's later answer to an order a live transport already reported as SENT."""

    order_id: int
    outcome: wire.Outcome  # FILLED | PARTIAL | NOT_FILLED | VENUE_REJECTED | SEND_FAILED
    fill_px: float
    fill_qty: float
    venue_code: int  # venue error code on rejection, else 0
    t_recv: int  # time.time_ns() when the reply was read
    message: str = ""  # venue's error text (never contains credentials)
    by_query: bool = False  # the answer to a status query (``query_status``), not to the order itself


ReplyCallback = Callable[[VenueReply], None]


@runtime_checkable
class Transport(Protocol):
    """One order-entry path. ``start()`` before the first ``send_msg``; ``close()`` is idempotent."""

    name: str

    def start(self) -> None: ...

    def send_msg(self, order: tuple) -> SendResult: ...

    def close(self) -> None: ...


@runtime_checkable
class Rehearses(Protocol):
    """A transport that can do everything ``send_msg`` does to an order short of sending it: build the venue's
    frame, serialise and sign it, then drop it (shadow orders, wire.OrderFlags.SHADOW). No state a real order
    depends on may change, except what the venue tolerates (a Hyperliquid nonce skipped)."""

    def rehearse(self, order: tuple) -> None: ...


@dataclass(frozen=True, slots=True)
class VenueState:
    """What the venue says the account holds on each traded instrument (by instrument id, the session's order)."""

    positions: tuple[float, ...]  # signed size held, per instrument id
    resting_by: tuple[float, ...]  # signed size of open (resting) orders, per instrument id; 0.0 where the
    # venue's order API cannot list them
    #: our open orders at the venue by instrument id (the venue's order ids, sorted); None where the venue's order
    #: API cannot list them (Binance futures' WebSocket API)
    open_orders: tuple[tuple[int, ...], ...] | None = None

    @property
    def position(self) -> float:
        """The first instrument's position (BTC in a default session)."""
        return self.positions[0]

    @property
    def resting(self) -> float:
        """The first instrument's resting size."""
        return self.resting_by[0]


@runtime_checkable
class Reconciles(Protocol):
    """A live transport that can read the account's state at start-up (``venue_state``, blocking, bounded by
    ``timeout_s``; raises naming what failed), for every instrument it trades. The engine trades only from that
    state."""

    def venue_state(self, timeout_s: float) -> VenueState: ...


@runtime_checkable
class StatusQuery(Protocol):
    """A live transport that can ask the venue what became of an order (Binance ``order.status``, Hyperliquid
    ``orderStatus``). The engine calls ``query_status`` for an order past its reply deadline or lost in a
    disconnect; the answer comes back through the reply callback as a VenueReply with ``by_query`` set. A query
    never resends the order. False when the query could not be sent (asked again later)."""

    def query_status(self, order_id: int) -> bool: ...


@runtime_checkable
class Unwinds(Protocol):
    """A live transport that can take its orders and positions off the venue, blocking and bounded by
    ``timeout_s`` (shutdown and halt, never the hot path; caerus.execution.unwind). ``cancel``: True when the venue
    cancelled the order, False when it was no longer open there (filled or gone); raises RuntimeError naming what
    failed. ``reduce_position``: a reduce-only order taking ``size`` (signed, the position held) off instrument
    ``instrument`` at once (IOC or market; ``px`` the reference price an IOC limit needs); the size it filled."""

    def cancel(self, order_id: int, instrument: int, timeout_s: float) -> bool: ...

    def reduce_position(self, instrument: int, size: float, px: float, timeout_s: float) -> float: ...


#: What a venue reply says once it parsed: (outcome, fill price, filled quantity, venue error code, text,
#: reply-counter key). A venue's reply parser returns None instead when the reply cannot be read: the order stays
#: tracked until a reply that parses, a status query or a disconnect resolves it.
ParsedReply = tuple[wire.Outcome, float, float, int, str, str]


def reply_number(value: object) -> float | None:
    """A finite, non-negative number from a reply's JSON value (venues send decimals as strings), else None."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) and x >= 0.0 else None
