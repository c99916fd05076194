"""Top-of-book validation rules."""

from __future__ import annotations

import pytest

from caerus.venuekit.book_rules import OK, check_levels, reject_counter
from caerus.wire import RejectReason

NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize(
    ("levels", "reason"),
    [
        ((100.0, 1.0, 100.1, 2.0), OK),
        ((100.2, 1.0, 100.1, 2.0), RejectReason.CROSSED),
        ((100.1, 1.0, 100.1, 2.0), RejectReason.LOCKED),
        ((0.0, 1.0, 100.1, 2.0), RejectReason.NONPOSITIVE_PRICE),
        ((100.0, 1.0, -1.0, 2.0), RejectReason.NONPOSITIVE_PRICE),
        ((100.0, 0.0, 100.1, 2.0), RejectReason.NONPOSITIVE_SIZE),
        ((100.0, 1.0, 100.1, -2.0), RejectReason.NONPOSITIVE_SIZE),
        ((NAN, 1.0, 100.1, 2.0), RejectReason.NOT_FINITE),
        ((100.0, INF, 100.1, 2.0), RejectReason.NOT_FINITE),
        ((100.0, 1.0, -INF, 2.0), RejectReason.NOT_FINITE),
        ((100.0, 1.0, 100.1, NAN), RejectReason.NOT_FINITE),
    ],
)
def test_check_levels(levels: tuple[float, float, float, float], reason: int) -> None:
    assert check_levels(*levels) == reason


def test_reject_counter_names() -> None:
    assert reject_counter(RejectReason.SEQ_NOT_INCREASING) == "reject.seq_not_increasing"
