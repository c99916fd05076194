"""A/B windows inside one session: time cut into windows of equal length from a start time, the even ones arm A
and the odd ones arm B.

One definition for the strategy's two in-session comparisons: shadow orders on/off (``shadow_ab_window_s``, arm
A = shadows flowing) and the naive rule against the trained model (``signal = "ab"``, arm A = naive, arm B =
model). A window's arm is a pure function of the start, the length and a time, so a reader of the session (the
report, a test) puts any stamped event in its window with :func:`arm_at` and the session's start and length.
"""

from __future__ import annotations

from dataclasses import dataclass


def arm_at(t0: int, window_ns: int, t: int) -> int:
    """The arm (0 = A, 1 = B) of the window holding time ``t`` (ns), windows of ``window_ns`` from ``t0``."""
    return (t - t0) // window_ns % 2


@dataclass
class AbWindows:
    """Alternating windows from ``t0`` (ns): ``arm(t)`` and the time each arm has had up to a moment."""

    t0: int
    window_ns: int

    def arm(self, t: int) -> int:
        return arm_at(self.t0, self.window_ns, t)

    def next_edge(self, t: int) -> int:
        """The start of the window after the one holding ``t`` (when the arm turns next)."""
        return self.t0 + ((t - self.t0) // self.window_ns + 1) * self.window_ns

    def time_per_arm(self, t: int) -> tuple[int, int]:
        """(ns in arm A, ns in arm B) between ``t0`` and ``t``."""
        if t <= self.t0:
            return 0, 0
        w = self.window_ns
        full, rest = divmod(t - self.t0, w)
        a = (full + 1) // 2 * w
        b = full // 2 * w
        if full % 2:
            b += rest
        else:
            a += rest
        return a, b
