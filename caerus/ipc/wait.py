"""Wait policies: what a polling loop does when it found nothing (spin | hybrid | sleep), chosen per process.

Measured on a 2-core VM (DESIGN.md): ``os.sched_yield()`` costs ~0.25 us, ``time.sleep(0)`` ~90 us, and a spinner
that shares its core with another process costs that process milliseconds. So:
- spin: return at once; only for a process that has a core to itself.
- hybrid: spin ``spins`` empty polls, then ``sched_yield`` on every further empty poll (lets a co-scheduled
  process run, but wakes within a scheduler slice).
- sleep: ``time.sleep(sleep_s)``; lowest CPU, highest wake-up latency.
Every session records which policy each process ran with.
"""

from __future__ import annotations

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
