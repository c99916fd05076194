"""Fixed-size little-endian record layouts shared by every Caerus process, and the codes they carry.

This module is the single definition of what crosses a shared-memory ring. Each layout is declared once as a
list of (field, struct code) pairs; the precompiled ``struct.Struct`` (hot path) and the numpy dtype (bulk reads
off the hot path) are both derived from that list, so they cannot drift apart. ``LAYOUT_VERSION`` must be bumped
whenever any layout or code table below changes: segment headers carry it and attach refuses a mismatch.

All timestamps are CLOCK_REALTIME nanoseconds (``time.time_ns()``), chrony-disciplined on a tuned host.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum, IntFlag

import numpy as np

LAYOUT_VERSION = 8  # 2: ExecFlags.REPLY; 3: ORDER.seq, RiskReject record checks, Outcome CANCELLED/UNKNOWN;
#                    4: BOOK.reason + BookFlags.REJECTED (a refused update is published, not VALID);
#                    5: BOOK.t_wire, ORDER.trigger_t_wire (the kernel's receive stamp, 0 when there is none);
#                    6: OrderFlags.SHADOW (a rehearsal of the fire path, never sent)
#                    7: ORDER.symbol (the instrument id, as in BOOK.symbol: many instruments per session)
#                    8: OrderFlags.MODEL (the order was decided by the trained model, not the naive rule)

_NUMPY_CODES = {"B": "u1", "b": "i1", "H": "u2", "h": "i2", "I": "u4", "i": "i4", "q": "i8", "Q": "u8", "d": "f8"}


@dataclass(frozen=True)
class Layout:
    """One record layout: field names, the compiled struct and the equivalent numpy dtype."""

    name: str
    fields: tuple[tuple[str, str], ...]

    @property
    def struct(self) -> struct.Struct:
        return struct.Struct("<" + "".join(code for _, code in self.fields))

    @property
    def size(self) -> int:
        return self.struct.size

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.fields)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype([(name, "<" + _NUMPY_CODES[code]) for name, code in self.fields])

    def index(self, field: str) -> int:
        """Position of ``field`` in an unpacked tuple (for hot loops that index tuples)."""
        return self.names.index(field)


class Venue(IntEnum):
    BINANCE = 1
    HYPERLIQUID = 2


class BookFlags(IntFlag):
    """Bits of BookRecord.flags."""

    VALID = 1  # passed every validation rule; a record without it must never be traded on
    STALE = 2  # the feed lost its connection: this venue's book is not live until the next VALID record
    DEPTH = 4  # built from a depth snapshot (Binance depth5 / Hyperliquid l2Book) rather than bookTicker/bbo
    REPLAY = 8  # produced from replayed frames, not a live or emulated market
    ROTATED = 16  # first record from a new connection after make-before-break rotation
    # the venue sent an update for this book that failed validation (withdrawn side, crossed, unreadable...): the
    # previous quote is no longer the venue's, so readers stop trading this venue until the next VALID record.
    # ``BookRecord.reason`` carries the RejectReason; the prices are what the venue sent (NaN where absent).
    REJECTED = 32


class RejectReason(IntEnum):
    """Why a feed refused a book update (counted per reason, never published as valid)."""

    CROSSED = 1
    LOCKED = 2
    NONPOSITIVE_PRICE = 3
    NONPOSITIVE_SIZE = 4
    NOT_FINITE = 5
    NULL_SIDE = 6
    TIME_BACKWARDS = 7
    SEQ_NOT_INCREASING = 8
    DUPLICATE = 9
    MALFORMED = 10
    WRONG_INSTRUMENT = 11  # a data frame for another symbol/coin than the one subscribed
    NOT_SNAPSHOT = 12  # a depth frame that cannot be a top-N snapshot (a diff: zero-size or out-of-order levels)


class FailureClass(IntEnum):
    """How a venue connection ended (the failure taxonomy)."""

    DNS = 1
    REFUSED = 2
    CONNECT_TIMEOUT = 3
    TLS = 4
    HANDSHAKE_HTTP = 5
    PROTOCOL = 6
    CLOSED_BY_PEER = 7
    STALE = 8
    SUBSCRIPTION_REJECTED = 9
    PARSE_ERROR = 10
    RATE_LIMITED = 11
    ROTATION = 12  # planned close after a make-before-break rotation (not a fault)
    SHUTDOWN = 13  # our own clean stop
    OTHER = 14


class EventKind(IntEnum):
    """Kinds of EventRecord written by feeds (and anything else with off-path events to report)."""

    CONNECTING = 1
    CONNECTED = 2
    SUBSCRIBED = 3
    DISCONNECTED = 4  # code = FailureClass, value = close code or HTTP status when known
    ROTATION_STARTED = 5
    ROTATION_DONE = 6
    STALE = 7
    BOOK_REJECTED = 8  # code = RejectReason
    FRAME_DROPPED = 9  # malformed / unclassifiable frame, counted and dropped


class Side(IntEnum):
    BUY = 1
    SELL = -1


class Tif(IntEnum):
    IOC = 1
    GTC = 2
    ALO = 3


class OrderReason(IntEnum):
    """Why the strategy fired an order."""

    ENTRY = 1
    EXIT_THRESHOLD = 2
    EXIT_REVERSAL = 3
    EXIT_MAX_HOLD = 4
    FLATTEN = 5  # kill switch / shutdown flatten
    BENCH = 6  # synthetic order from a benchmark


class Outcome(IntEnum):
    """What the execution engine did with an order."""

    SENT = 1
    FILLED = 2
    PARTIAL = 3
    NOT_FILLED = 4  # IOC found no liquidity at its price
    RISK_REJECTED = 5
    VENUE_REJECTED = 6
    SEND_FAILED = 7
    CANCELLED = 8  # a resting (GTC/ALO) order's remainder was cancelled; fill_qty = what filled before
    UNKNOWN = 9  # no reply by the order's deadline or the connection dropped: may have filled (worst case counts)


class OrderFlags(IntFlag):
    """Bits the strategy sets in ORDER.flags (EXEC records add ExecFlags in the same byte, from the top)."""

    # A shadow order: the strategy's fire path run for real (decision, order ring) to keep it warm when real fires
    # are rare. Execution takes it through pickup, the risk checks and the transport's serialisation and signing,
    # then discards it before the socket: never sent, no EXEC record, no position, no rate-limit slot.
    SHADOW = 0x01
    # The order was decided by the trained model (StrategyConfig.signal "model", or a model window of the
    # in-session A/B, signal "ab"); without it, by the naive rule. Execution's paper markouts and the capture's
    # orders table split by it.
    MODEL = 0x02


class ExecFlags(IntFlag):
    """Bits an EXEC record adds to the order's ``flags`` field."""

    # The record reports a venue's later reply for an order already published as SENT (same order_id). Count
    # orders, fires and tick-to-decision over records *without* this bit; take the final outcome from it.
    REPLY = 0x80


class RiskReject(IntEnum):
    NONE = 0
    MAX_ORDER_SIZE = 1
    MAX_POSITION = 2
    MAX_ORDER_RATE = 3
    PRICE_BAND = 4
    KILL_SWITCH = 5
    NO_BOOK = 6
    # The record itself is wrong (forged, corrupted or re-delivered): refused before any limit is looked at.
    DUPLICATE = 7  # seq equal to the last one seen from this strategy_id
    OUT_OF_ORDER = 8  # seq below the last one seen from this strategy_id
    STALE_ORDER = 9  # t_decision older than max_order_age_ms (or in the future by more than that)
    BAD_SIDE = 10  # side not +1 / -1
    BAD_PRICE = 11  # px not finite or <= 0
    BAD_SIZE = 12  # qty not finite or <= 0
    OUT_OF_RANGE = 13  # venue, tif or reason not a known code
    MAX_NOTIONAL = 14  # px * qty above max_order_notional
    MAX_POSITION_NOTIONAL = 15  # the instrument's |projected position| * px above max_position_notional
    MAX_TOTAL_NOTIONAL = 16  # every instrument's projected notional together above max_total_notional
    UNKNOWN_INSTRUMENT = 17  # symbol not in the session's instrument list


# --- layouts ----------------------------------------------------------------------------------------------

BOOK = Layout(
    "book",
    (
        ("venue", "B"),
        ("flags", "B"),
        # the instrument id: its index in the session's instrument list (caerus.instruments; 0 = the first, BTC by
        # default). The same id on both venues' records: the strategy pairs books by it.
        ("symbol", "H"),
        ("conn", "H"),  # connection number within the feed's life (changes on reconnect/rotation)
        ("reason", "B"),  # RejectReason on a REJECTED record, else 0
        ("_pad", "B"),
        ("seq", "q"),  # Binance `u`; Hyperliquid: a local counter (the venue has none)
        ("t_exchange", "q"),
        ("t_recv", "q"),
        ("t_publish", "q"),
        ("bid_px", "d"),
        ("bid_qty", "d"),
        ("ask_px", "d"),
        ("ask_qty", "d"),
        # kernel software receive stamp of the bytes that completed the message (the busy client's recvmsg with
        # SO_TIMESTAMPING); 0 when there is none (websockets' asyncio client, or a kernel that gave no stamp)
        ("t_wire", "q"),
    ),
)

ORDER = Layout(
    "order",
    (
        ("order_id", "q"),
        ("strategy_id", "H"),
        ("venue", "B"),  # where the order goes
        ("side", "b"),  # Side
        ("tif", "B"),  # Tif
        ("reason", "B"),  # OrderReason
        ("trigger_venue", "B"),
        ("flags", "B"),
        ("px", "d"),
        ("qty", "d"),
        ("trigger_seq", "q"),
        ("trigger_t_recv", "q"),
        ("trigger_t_publish", "q"),
        ("t_seen", "q"),
        ("t_decision", "q"),
        # Producer sequence: strictly increasing per strategy_id, also across the strategy's restarts (it starts
        # at the producer's start-up time in ns and adds one per pushed order). The engine refuses a duplicate or
        # older one (RiskReject.DUPLICATE / OUT_OF_ORDER): a re-delivered slot never becomes a second order.
        ("seq", "q"),
        ("trigger_t_wire", "q"),  # the trigger book's t_wire (0: none)
        # the instrument id (as BOOK.symbol): what to trade. 32 bits with one spare word rather than 16 with two:
        # 19 fields keep the unpacked tuple within CPython's tuple free lists (sizes below 20), a 20-field tuple
        # is a fresh allocation per order (tests/unit/runtime/test_runtime_loops_memory.py saw the difference)
        ("symbol", "I"),
        ("_spare", "I"),  # keeps the record a multiple of 8 bytes
    ),
)

# Execution writes one of these per order to its SWMR "exec" ring *after* send_msg returned (off the measured
# interval), so capture and metrics can see every order, its pickup time and what happened to it.
EXEC = Layout(
    "exec",
    ORDER.fields
    + (
        ("t_pickup", "q"),
        ("t_sent", "q"),
        ("outcome", "B"),  # Outcome
        ("risk", "B"),  # RiskReject
        ("_pad", "H"),
        ("venue_code", "i"),  # venue error code on rejection, else 0
        ("fill_px", "d"),
        ("fill_qty", "d"),
    ),
)

EVENT = Layout(
    "event",
    (
        ("venue", "B"),
        ("kind", "B"),  # EventKind
        ("code", "H"),  # FailureClass or RejectReason, by kind
        ("conn", "I"),
        ("t_ns", "q"),
        ("value", "q"),  # close code, HTTP status, count... by kind
        ("aux", "q"),
    ),
)

LAYOUTS: dict[str, Layout] = {layout.name: layout for layout in (BOOK, ORDER, EXEC, EVENT)}


class FieldIndex:
    """Each field of a layout as an upper-case attribute holding its position in an unpacked tuple.

    The one table of field positions: ``BOOK_I.T_RECV`` instead of a module re-declaring ``BOOK.index("t_recv")``.
    Hot loops still bind the positions they use to locals (an attribute lookup per message is avoidable work).
    """

    def __init__(self, layout: Layout) -> None:
        object.__setattr__(self, "_layout", layout.name)
        for i, name in enumerate(layout.names):
            object.__setattr__(self, name.upper(), i)

    def __getattr__(self, name: str) -> int:  # only reached for a name that is not a field
        raise AttributeError(f"{self._layout} record has no field {name.lower()!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("field positions are fixed by the layout")


BOOK_I = FieldIndex(BOOK)
ORDER_I = FieldIndex(ORDER)
EXEC_I = FieldIndex(EXEC)
EVENT_I = FieldIndex(EVENT)

# The tradeable predicate, defined once: a book record may be traded on only when it is VALID and not STALE.
# Hot loops compare ``flags & TRADEABLE_MASK == TRADEABLE`` with both bound to locals; everything else calls
# :func:`is_tradeable`.
TRADEABLE_MASK = int(BookFlags.VALID | BookFlags.STALE)
TRADEABLE = int(BookFlags.VALID)


def is_tradeable(flags: int) -> bool:
    """A book record with these flags may be traded on (VALID and not STALE)."""
    return flags & TRADEABLE_MASK == TRADEABLE

# Precompiled structs for hot paths (attribute lookups on Layout would rebuild them).
BOOK_STRUCT = BOOK.struct
ORDER_STRUCT = ORDER.struct
EXEC_STRUCT = EXEC.struct
EVENT_STRUCT = EVENT.struct

for _layout in LAYOUTS.values():
    # Ring slots place records right after an 8-byte sequence word; 8-byte multiples keep every field aligned.
    assert _layout.size % 8 == 0, f"{_layout.name} record is {_layout.size} bytes, not a multiple of 8"
