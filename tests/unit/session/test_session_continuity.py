"""The continuity proof of a session with restarts (caerus.session.continuity): orders fired are consumed once or
counted lost, and each restarted death gets its time to the first book and first order."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from caerus.session.continuity import GENERATION_GAP, OrderContinuity, RecoveryClock
from caerus.wire import ExecFlags
from tests.kit import records

pytestmark = pytest.mark.unit

BASE_1 = 1_780_000_000_000_000_000  # a strategy incarnation's sequence base: its start-up time in ns
BASE_2 = BASE_1 + 3_000_000_000  # restarted 3 s later


def _feed(c: OrderContinuity, seqs: list[int], reply_for: frozenset[int] = frozenset()) -> None:
    for seq in seqs:
        c.add(records.exec_record(seq & 0xFFFF_FFFF, seq=seq))
        if seq in reply_for:  # a later venue reply for the same order: never counted twice
            c.add(records.exec_record(seq & 0xFFFF_FFFF, seq=seq, flags=int(ExecFlags.REPLY)))


def test_orders_across_two_strategy_runs_and_an_engine_restart_are_accounted_for() -> None:
    c = OrderContinuity()
    # Run 1: 1..10 pushed; 5 and 6 were in the ring when the engine restarted (the strategy counted them lost).
    # Run 2: 1..4 pushed and consumed.
    _feed(c, [BASE_1 + i for i in (1, 2, 3, 4, 7, 8, 9, 10)], reply_for=frozenset({BASE_1 + 2}))
    _feed(c, [BASE_2 + i for i in (1, 2, 3, 4)])
    s = c.summary([{"orders": 10, "orders_lost_to_restart": 2}, {"orders": 4}], engine_deaths=1)
    assert (s["fired"], s["consumed"], s["gaps"], s["counted_lost"], s["strategy_runs"]) == (14, 12, 2, 2, 2)
    assert s["duplicates"] == 0 and s["unexplained"] == 0


def test_a_lost_order_nobody_counted_and_a_doubled_one_are_named() -> None:
    c = OrderContinuity()
    _feed(c, [BASE_1 + i for i in (1, 2, 3, 3, 6)])  # 3 consumed twice; 4 and 5 missing
    s = c.summary([{"orders": 6}], engine_deaths=1)  # one engine death may explain one missing order
    assert s["duplicates"] == 1 and s["gaps"] == 2 and s["unexplained"] == 1
    assert BASE_2 - BASE_1 > GENERATION_GAP > 10_000  # runs are told apart, a run's own gaps are not


def test_recovery_is_stamped_from_the_new_incarnation_only() -> None:
    death = {"at_s": 4.0, "pid": 100, "new_pid": 200}
    tracks = {"binance": SimpleNamespace(deaths=[death]),
              "execution": SimpleNamespace(deaths=[{"at_s": 5.0, "pid": 101}])}  # not restarted (yet)
    clock = RecoveryClock(session_start_mono=1000.0)
    # The counter block still belongs to the dead pid: its counts say nothing about the restart.
    clock.tick(tracks, {"binance": {"books": 50}}, {"binance": 100}, now=1004.5)
    assert "first_book_after_s" not in death
    clock.tick(tracks, {"binance": {"books": 0}}, {"binance": 200}, now=1004.75)  # new, nothing published yet
    assert "first_book_after_s" not in death
    clock.tick(tracks, {"binance": {"books": 3}}, {"binance": 200}, now=1005.0)
    clock.tick(tracks, {"binance": {"books": 9}}, {"binance": 200}, now=1006.0)  # stamped once, first time only
    assert death["first_book_after_s"] == 1.0 and "first_order_after_s" not in death
    assert "first_book_after_s" not in tracks["execution"].deaths[0]
