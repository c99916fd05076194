"""Wait policies: what a polling loop does when it found nothing (spin | hybrid | sleep), chosen per process.

Measured on a 2-core VM (DESIGN.md): ``os.sched_yield()`` costs ~0.25 us, ``time.sleep(0)`` ~90 us, and a spinner
that shares its core with another process costs that process milliseconds. So:
- spin: return at once; only for a process that has a core to itself.
- hybrid: spin ``spins`` empty polls, then ``sched_yield`` on every further empty poll (lets a co-scheduled
  process run, but wakes within a scheduler slice).
- sleep: ``time.sleep(sleep_s)``; lowest CPU, highest wake-up latency. The kernel may fire a sleeping thread's
  timer up to its timer slack late (50 us by default) to batch wake-ups, which made a 50 us sleep take ~120 us here;
  a sleep-policy waiter sets its thread's slack to 1 ns (:func:`set_timer_slack`), and the sleep takes ~70 us.
Every session records which policy each process ran with.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from enum import StrEnum


class WaitPolicy(StrEnum):
    """The one definition of the wait policy names (a StrEnum: compares equal to its plain string)."""

    SPIN = "spin"
    HYBRID = "hybrid"
    SLEEP = "sleep"

    @classmethod
    def parse(cls, value: str | WaitPolicy) -> WaitPolicy:
        """``value`` as a WaitPolicy; ValueError naming the allowed names otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"wait policy {value!r} is not one of {', '.join(POLICIES)}") from None


POLICIES: tuple[str, ...] = tuple(p.value for p in WaitPolicy)
PR_SET_TIMERSLACK = 29  # linux/prctl.h
PR_GET_TIMERSLACK = 30
SLEEP_TIMER_SLACK_NS = 1  # the least the kernel takes (0 would mean "back to the default")


def set_timer_slack(ns: int) -> None:
    """Set the calling thread's timer slack (``prctl(PR_SET_TIMERSLACK)``; threads it starts later inherit it): how
    late the kernel may fire its timers, so a ``time.sleep`` or ``clock_nanosleep`` wakes within ``ns`` of when it
    asked. OSError names the failure."""
    if ns < 1:
        raise ValueError(f"timer slack must be >= 1 ns (0 resets it to the default), got {ns}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_TIMERSLACK, {ns}): {os.strerror(err)}")


def timer_slack() -> int:
    """The calling thread's timer slack in ns (``prctl(PR_GET_TIMERSLACK)``)."""
    return int(ctypes.CDLL(None, use_errno=True).prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0))


@dataclass
class Waiter:
    policy: WaitPolicy | str
    spins: int = 2000
    sleep_s: float = 50e-6
    _empty: int = 0

    def __post_init__(self) -> None:
        self.policy = WaitPolicy.parse(self.policy)
        # Bind the policy once: the loop calls self.idle() with no per-call branching on the policy name.
        self.idle = {WaitPolicy.SPIN: self._spin, WaitPolicy.HYBRID: self._hybrid,
                     WaitPolicy.SLEEP: self._sleep}[self.policy]
        if self.policy is WaitPolicy.SLEEP:
            # Sleep what was asked, not up to 50 us more: set on the thread that makes the waiter (the one that
            # loops with it), once.
            set_timer_slack(SLEEP_TIMER_SLACK_NS)

    def reset(self) -> None:
        """Call after useful work: the hybrid policy spins again before yielding."""
        self._empty = 0

    def _spin(self) -> None:
        return None

    def _hybrid(self) -> None:
        if self._empty < self.spins:
            self._empty += 1
        else:
            os.sched_yield()

    def _sleep(self) -> None:
        time.sleep(self.sleep_s)


def make_waiter(policy: WaitPolicy | str, spins: int = 2000, sleep_s: float = 50e-6) -> Waiter:
    return Waiter(policy, spins, sleep_s)
