"""The strategy's per-order table: confirmed fills only, every final state, UNKNOWN at worst case, no reuse."""

from __future__ import annotations

import pytest

from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import G_IN_FLIGHT, LatencyArb
from caerus.strategy.orders import FILLED, IN_FLIGHT, NOT_FILLED, PARTIAL, REJECTED, UNKNOWN, OrderTable
from caerus.wire import Outcome, RiskReject
from tests.fixtures.pipeline import make_exec

MS = 1_000_000


def test_final_states_and_confirmed_position() -> None:
    t = OrderTable(1, 8, timeout_ms=100)
    t.sent(11, 1, 1, 0.001, 0)
    assert t.state[1] == IN_FLIGHT and t.in_flight == 1 and t.position == 0.0  # in flight: not assumed filled
    t.on_exec(make_exec(11, 1, 1, 0.001, Outcome.SENT))  # the engine sent it: still in flight
    assert t.in_flight == 1
    assert t.on_exec(make_exec(11, 1, 1, 0.001, Outcome.PARTIAL, fill_qty=0.0004, reply=True)) == pytest.approx(
        0.0004)
    assert t.state[1] == PARTIAL and t.in_flight == 0 and t.position == pytest.approx(0.0004)
    t.sent(12, 2, -1, 0.0004, 0)
    t.on_exec(make_exec(12, 2, -1, 0.0004, Outcome.NOT_FILLED, reply=True))
    assert t.state[2] == NOT_FILLED and t.position == pytest.approx(0.0004)
    t.sent(13, 3, -1, 0.0004, 0)
    t.on_exec(make_exec(13, 3, -1, 0.0004, Outcome.RISK_REJECTED, risk=int(RiskReject.DUPLICATE)))
    assert t.state[3] == IN_FLIGHT  # a refused re-delivered copy says nothing about the order
    t.on_exec(make_exec(13, 3, -1, 0.0004, Outcome.VENUE_REJECTED, reply=True))
    assert t.state[3] == REJECTED and t.position == pytest.approx(0.0004)
    t.sent(14, 4, -1, 0.0004, 0)
    t.on_exec(make_exec(14, 4, -1, 0.0004, Outcome.FILLED, fill_qty=0.0004, reply=True))
    assert t.state[4] == FILLED and t.position == 0.0
    assert t.counts() == {"filled": 1, "partial": 1, "not_filled": 1, "rejected": 1, "unknown_resolved": 0,
                          "in_flight": 0, "unknown": 0}
    # Another strategy's record, or one for an order the table does not hold, changes nothing.
    assert t.on_exec(make_exec(14, 4, -1, 0.0004, Outcome.FILLED, fill_qty=0.0004, strategy_id=2)) == 0.0
    assert t.on_exec(make_exec(99, 4, -1, 0.0004, Outcome.FILLED, fill_qty=0.0004)) == 0.0
    assert t.unmatched == 1 and t.position == 0.0


def test_timeout_makes_unknown_at_worst_case_then_a_late_result_resolves_it() -> None:
    t = OrderTable(1, 8, timeout_ms=100)
    t.sent(21, 5, 1, 0.001, 0)
    assert t.expire(50 * MS) == 0
    assert t.expire(101 * MS) == 1
    assert t.state[5] == UNKNOWN and t.unknown == 1 and t.unknown_long == pytest.approx(0.001)
    assert not t.free(5) and not t.free(13)  # the slot is not reused while unknown
    t.on_exec(make_exec(21, 5, 1, 0.001, Outcome.FILLED, fill_qty=0.001, reply=True))
    assert t.state[5] == FILLED and t.unknown == 0 and t.unknown_long == 0.0
    assert t.position == pytest.approx(0.001) and t.counts()["unknown_resolved"] == 1


def test_engine_unknown_and_send_failed_after_send_are_unknown() -> None:
    t = OrderTable(1, 8)
    t.sent(31, 1, -1, 0.001, 0)
    t.on_exec(make_exec(31, 1, -1, 0.001, Outcome.SEND_FAILED, reply=True))  # disconnect with the order out
    assert t.state[1] == UNKNOWN and t.unknown_short == pytest.approx(0.001)
    t.sent(32, 2, 1, 0.001, 0)
    t.on_exec(make_exec(32, 2, 1, 0.001, Outcome.SEND_FAILED))  # send_msg raised: nothing went out
    assert t.state[2] == REJECTED


def test_strategy_waits_for_the_result_and_sizes_exits_to_what_filled() -> None:
    from tests.unit.strategy.test_strategy_latency_arb import jump, warm

    arb = LatencyArb(StrategyConfig(cooldown_ms=0))
    t = warm(arb)
    d = jump(arb, t, 10.0)
    assert d is not None
    arb.fired(d, t, 1 << 48 | 7, 7)
    assert arb.position == 0.0
    # In flight: a second entry signal proposes nothing until the result is in.
    assert jump(arb, t + MS, 12.0) is None and arb.guards[G_IN_FLIGHT] == 1
    arb.on_exec(make_exec(1 << 48 | 7, 7, 1, d[3], Outcome.PARTIAL, fill_qty=0.0003, reply=True))
    assert arb.position == pytest.approx(0.0003)
    e = jump(arb, t + 2 * MS, 0.0)
    assert e is not None and e[0] == -1 and e[3] == pytest.approx(0.0003)  # exit sized to the confirmed fill
