"""A sleep-policy waiter sets its thread's timer slack to 1 ns (so a 50 us sleep is not fired up to 50 us late);
the other policies leave it alone; a slack below 1 ns is refused by name."""

from __future__ import annotations

import threading

import pytest

from caerus.ipc.wait import SLEEP_TIMER_SLACK_NS, make_waiter, set_timer_slack, timer_slack


def _in_a_thread(policy: str) -> tuple[int, int]:
    """(slack before, slack after) making a ``policy`` waiter on a new thread that starts at 50 us."""
    out: list[tuple[int, int]] = []

    def run() -> None:
        set_timer_slack(50_000)
        before = timer_slack()
        make_waiter(policy)
        out.append((before, timer_slack()))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10.0)
    assert not t.is_alive() and out, "the waiter thread did not finish"
    return out[0]


@pytest.mark.parametrize(("policy", "after"), [("sleep", SLEEP_TIMER_SLACK_NS), ("hybrid", 50_000),
                                               ("spin", 50_000)])
def test_only_the_sleep_policy_tightens_its_threads_timer_slack(policy: str, after: int) -> None:
    assert _in_a_thread(policy) == (50_000, after)


def test_a_slack_below_one_ns_is_refused() -> None:
    with pytest.raises(ValueError, match="timer slack must be >= 1 ns"):
        set_timer_slack(0)
