"""One timing protocol for every contender a benchmark puts side by side (issue 49): benchmarks/peers (every
section) and benchmarks/backtest_speed time their contenders through :func:`interleaved`, so no contender is timed
cold, alone, or with another statistic than the one it is compared with.

The rules, the same for every contender:

- **Warm-up first, never timed with the rest.** Each contender's ``warm_up`` reaches every compiled or cached path
  its timed repetition uses: an interpreted contender runs one whole repetition (dropped); a numba peer calls every
  step of its timed region once, so every dispatcher the region calls has compiled its signature before timing
  starts (benchmarks/backtest_speed_peer checks it: a compilation inside a timed region is refused, never a sample).
  A contender measured in fresh processes each repetition warms up inside each one (``warm_up`` None, said in
  ``warm_up_what``). The warm-up's wall time is reported on a line of its own (:func:`warm_up_lines`).
- **The same number of interleaved repetitions.** Repetition i runs every contender once, the order rotated by i, so
  no contender always runs first (colder caches) or right after the same neighbour; every contender gets exactly
  ``repetitions`` results, and :func:`check` refuses a record where the counts differ.
- **One statistic for all.** Throughput: the median of the repetitions' seconds (:attr:`Timed.median_s`; min and max
  are kept beside it). Latency tables pool every repetition's per-message samples and read p50/p99 from them, for
  every contender alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

STATISTIC = "median of the repetitions"


class ProtocolError(RuntimeError):
    """A measurement that broke the timing protocol (unequal repetitions, compilation inside a timed region): the
    message says which contender and how."""


@dataclass
class Contender(Generic[T]):
    """One contender: ``run(i)`` is its repetition i (what it produced: samples, orders, its own timing);
    ``warm_up()`` what it runs first (None: it warms up inside every repetition, as ``warm_up_what`` says);
    ``seconds(result)`` the repetition's time when the contender measures it itself (a subprocess timing its own
    region, a loop timed without its setup); else the runner's wall time around ``run``."""

    name: str
    run: Callable[[int], T]
    warm_up: Callable[[], object] | None
    warm_up_what: str
    seconds: Callable[[T], float] | None = None


@dataclass
class Timed(Generic[T]):
    """What the runner recorded for one contender."""

    name: str
    warm_up_what: str
    warm_up_s: float | None  # None: warmed inside each repetition
    warm_up_result: object = None
    results: list[T] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def repetitions(self) -> int:
        return len(self.results)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)


def interleaved(contenders: Sequence[Contender[T]], repetitions: int) -> list[Timed[T]]:
    """Warm every contender up (each timed on its own), then ``repetitions`` rounds running every contender once,
    the order rotated each round; the records, in ``contenders`` order, checked by :func:`check`."""
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    names = [c.name for c in contenders]
    if len(set(names)) != len(names):
        raise ValueError(f"contender names must be unique: {names}")
    out = []
    for c in contenders:
        warm_s: float | None = None
        warm_result: object = None
        if c.warm_up is not None:
            t0 = time.perf_counter()
            warm_result = c.warm_up()
            warm_s = time.perf_counter() - t0
        out.append(Timed(c.name, c.warm_up_what, warm_s, warm_result))
    n = len(contenders)
    for i in range(repetitions):
        for k in range(n):
            j = (i + k) % n
            c = contenders[j]
            t0 = time.perf_counter()
            result = c.run(i)
            wall = time.perf_counter() - t0
            out[j].results.append(result)
            out[j].seconds.append(c.seconds(result) if c.seconds is not None else wall)
    check(out)
    return out


def check(timed: Sequence[Timed[object]]) -> None:
    """Every contender has the same number of repetitions (and at least one); ProtocolError naming them otherwise."""
    counts = {t.name: t.repetitions for t in timed}
    if not counts or len(set(counts.values())) != 1 or 0 in counts.values():
        raise ProtocolError(f"every contender must run the same number (>= 1) of repetitions: {counts}")
    if any(len(t.seconds) != t.repetitions for t in timed):
        raise ProtocolError(f"a contender has a result without its time: "
                            f"{ {t.name: (t.repetitions, len(t.seconds)) for t in timed} }")


def warm_up_lines(timed: Sequence[Timed[object]]) -> list[str]:
    """One line per contender: its warm-up (compile) time and what it ran, apart from every timed figure."""
    return [f"warm-up {t.name}: " + (f"{t.warm_up_s:.2f} s, " if t.warm_up_s is not None else "")
            + t.warm_up_what for t in timed]


def as_json(timed: Sequence[Timed[object]]) -> list[dict[str, object]]:
    """The protocol as recorded, per contender (what a test or a reader checks): warm-up, repetitions, statistic,
    the repetitions' seconds."""
    return [{"contender": t.name, "warm_up": t.warm_up_what, "warm_up_s": t.warm_up_s, "repetitions": t.repetitions,
             "statistic": STATISTIC, "seconds": t.seconds} for t in timed]
