"""The lead-lag of two co-recorded markets with a block-bootstrap interval: a known 500 ms lag is found and covered,
the sign says who leads, and too little data gives no interval rather than a false one."""

from __future__ import annotations

import math

import pytest

from caerus.research.calibrate.leadlag import lead_lag
from caerus.research.verdict import placebos
from caerus.wire import Venue
from tests.unit.research.verdict.test_verdict_placebos import LAG_NS, _pair

BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)


def test_a_known_lag_is_found_inside_its_interval() -> None:
    ll = lead_lag(_pair(600.0), BN, HL)
    assert ll.lag_ms == pytest.approx(LAG_NS / 1e6, abs=20.0)
    assert ll.lo_ms <= LAG_NS / 1e6 <= ll.hi_ms
    assert ll.hi_ms - ll.lo_ms < 200.0 and ll.windows == 19
    assert ll.corr_peak > 2 * abs(ll.corr_zero)


def test_swapping_the_roles_flips_the_sign() -> None:
    ll = lead_lag(_pair(600.0), HL, BN)
    assert ll.lag_ms == pytest.approx(-LAG_NS / 1e6, abs=20.0)


def test_the_receive_clock_gives_the_same_lag_when_receipt_is_uniform() -> None:
    ll = lead_lag(_pair(600.0, recv_offset_ns=3_000_000), BN, HL, clock="recv")
    assert ll.lag_ms == pytest.approx(LAG_NS / 1e6, abs=20.0) and ll.clock == "recv"


def test_a_decoupled_follower_shows_no_lead() -> None:
    ll = lead_lag(placebos.decoupled(_pair(600.0)), BN, HL)
    assert abs(ll.corr_peak) < 0.1


def test_too_few_windows_give_no_interval_and_say_so() -> None:
    ll = lead_lag(_pair(120.0), BN, HL)
    assert ll.windows < 8 and math.isnan(ll.lo_ms) and math.isnan(ll.hi_ms)
    assert "no interval" in ll.text() and ll.describe()["lo_ms"] is None


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="clock must be exchange or recv"):
        lead_lag(_pair(60.0), BN, HL, clock="wall")
