"""The in-run reference for members without one of their own: a fixed pure-Python workload, timed.

Stored baselines hold ratios, not nanoseconds, so a faster or slower machine (or a busier moment) moves the
numerator and the denominator together. The workload mixes what the fleet's hot path does in CPython (struct
pack/unpack, attribute and dict access, small-int arithmetic); it runs in the runner's process right before
each head run, takes a few milliseconds, and reports the median of several timings.
"""

from __future__ import annotations

import statistics
import struct
import time

_REC = struct.Struct("<qqddddq")


def _workload(n: int) -> int:
    buf = bytearray(_REC.size)
    d = {"bid": 0.0, "ask": 0.0}
    acc = 0
    for i in range(n):
        _REC.pack_into(buf, 0, i, i + 1, 1.5, 2.5, 3.5, 4.5, i & 7)
        t = _REC.unpack_from(buf, 0)
        d["bid"] = t[2]
        d["ask"] = t[3]
        acc += t[0] ^ t[6]
    return acc


def calibration_ns(iterations: int = 5000, rounds: int = 7) -> float:
    """Median wall time in ns of ``rounds`` runs of the fixed workload (one warm-up round first)."""
    _workload(iterations)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        _workload(iterations)
        times.append(time.perf_counter_ns() - t0)
    return float(statistics.median(times))
