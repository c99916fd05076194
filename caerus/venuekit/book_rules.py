"""Top-of-book validation rules shared by every venue (pure functions over floats; no state, no allocation).

A book update is valid when all four numbers are finite, both prices and sizes are positive, and the bid is
strictly below the ask. Ordering rules (exchange time going backwards, Binance update id not increasing) need the
feed's state and live in the feed loop, which uses the reason codes defined here. Reason codes are plain ints
(``wire.RejectReason`` values) because IntEnum attribute access costs more than an int compare on the hot path.
"""

from __future__ import annotations

import numpy as np

from caerus.wire import RejectReason

OK = 0
CROSSED = int(RejectReason.CROSSED)
LOCKED = int(RejectReason.LOCKED)
NONPOSITIVE_PRICE = int(RejectReason.NONPOSITIVE_PRICE)
NONPOSITIVE_SIZE = int(RejectReason.NONPOSITIVE_SIZE)
NOT_FINITE = int(RejectReason.NOT_FINITE)
NULL_SIDE = int(RejectReason.NULL_SIDE)
TIME_BACKWARDS = int(RejectReason.TIME_BACKWARDS)
SEQ_NOT_INCREASING = int(RejectReason.SEQ_NOT_INCREASING)
DUPLICATE = int(RejectReason.DUPLICATE)
MALFORMED = int(RejectReason.MALFORMED)
WRONG_INSTRUMENT = int(RejectReason.WRONG_INSTRUMENT)
NOT_SNAPSHOT = int(RejectReason.NOT_SNAPSHOT)

#: Reasons that mean the venue's current quote is not usable (published as a REJECTED record, the book stops being
#: tradeable). The others (DUPLICATE, SEQ_NOT_INCREASING, TIME_BACKWARDS, WRONG_INSTRUMENT) refuse an update that
#: says nothing about the current book: counted, and the latest record stands.
WITHDRAWS_QUOTE = frozenset({CROSSED, LOCKED, NONPOSITIVE_PRICE, NONPOSITIVE_SIZE, NOT_FINITE, NULL_SIDE, MALFORMED,
                             NOT_SNAPSHOT})


def check_levels(bid_px: float, bid_qty: float, ask_px: float, ask_qty: float) -> int:
    """0 when the top of book is usable, else the RejectReason value of the first rule it breaks."""
    # x - x is 0.0 for every finite float and NaN for NaN/inf: one subtraction instead of a math.isfinite call.
    if bid_px - bid_px != 0.0 or bid_qty - bid_qty != 0.0 or ask_px - ask_px != 0.0 or ask_qty - ask_qty != 0.0:
        return NOT_FINITE
    if bid_px <= 0.0 or ask_px <= 0.0:
        return NONPOSITIVE_PRICE
    if bid_qty <= 0.0 or ask_qty <= 0.0:
        return NONPOSITIVE_SIZE
    if bid_px > ask_px:
        return CROSSED
    if bid_px == ask_px:
        return LOCKED
    return OK


def check_levels_many(bid_px: np.ndarray, bid_qty: np.ndarray, ask_px: np.ndarray, ask_qty: np.ndarray) -> np.ndarray:
    """:func:`check_levels` over whole columns (``caerus data import``): the reason of each row, the same rules in
    the same order (the first rule a row breaks wins). Off the hot path: the live feed calls the scalar function;
    tests/unit/venues check both agree on every combination of the edge values."""
    out = np.zeros(len(bid_px), dtype=np.uint8)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN on purpose, as in check_levels
        rules = (
            (NOT_FINITE, ~(np.isfinite(bid_px) & np.isfinite(bid_qty) & np.isfinite(ask_px) & np.isfinite(ask_qty))),
            (NONPOSITIVE_PRICE, (bid_px <= 0.0) | (ask_px <= 0.0)),
            (NONPOSITIVE_SIZE, (bid_qty <= 0.0) | (ask_qty <= 0.0)),
            (CROSSED, bid_px > ask_px),
            (LOCKED, bid_px == ask_px),
        )
    for reason, broken in rules:
        out[(out == 0) & broken] = reason
    return out


def reject_counter(reason: int) -> str:
    """Counter-block name for a reject reason, e.g. ``reject.crossed``."""
    return f"reject.{RejectReason(reason).name.lower()}"
