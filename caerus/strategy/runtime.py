"""Process plumbing shared by the trading processes (strategy, execution): common CLI flags, counters, attach.

Kept apart from the decision and engine code so those stay free of argparse, signals and segment waiting.
"""

from __future__ import annotations

import argparse
import array
import sys
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from caerus.ipc import segment
from caerus.ipc.counters import CounterBlock
from caerus.ipc.wait import POLICIES
from caerus.plan import parse_cpu_list, pin_current_process

T = TypeVar("T")


def add_process_args(parser: argparse.ArgumentParser) -> None:
    """The flags every fleet process takes."""
    parser.add_argument("--stats-segment", metavar="NAME", help="live counter block segment (S.stats.<process>)")
    parser.add_argument("--metrics-dir", metavar="DIR", help="write <process>.hlog here (default: no metrics)")
    parser.add_argument("--wait-policy", choices=POLICIES, default="hybrid", help="what to do when idle")
    parser.add_argument("--cpus", metavar="LIST", help="pin to these CPUs (kernel list syntax, e.g. 1 or 0-1)")
    parser.add_argument(
        "--attach-timeout", type=float, default=None, metavar="S",
        help="give up (exit 1) when a segment to read has not appeared after S seconds (default: wait forever)",
    )  # fmt: skip


def fail_config(message: str) -> int:
    """Print a configuration error and return the exit code for it (2)."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def parse_cpus(text: str | None) -> tuple[int, ...]:
    """Parse --cpus; ValueError naming the flag on bad input."""
    if not text:
        return ()
    try:
        cpus = parse_cpu_list(text)
    except ValueError:
        raise ValueError(f"--cpus {text!r} is not a CPU list like 1 or 0-1,3") from None
    return cpus


def pin(cpus: Sequence[int]) -> None:
    try:
        pin_current_process(cpus)
    except OSError as exc:
        raise ValueError(f"--cpus {','.join(map(str, cpus))}: cannot pin: {exc.strerror}") from None


class LocalCounters:
    """Same surface as CounterBlock (ints / floats arrays, snapshot) for runs without --stats-segment."""

    def __init__(self, ints: Sequence[str], floats: Sequence[str]) -> None:
        self.int_names = list(ints)
        self.float_names = list(floats)
        self.ints = array.array("q", [0] * len(self.int_names))
        self.floats = array.array("d", [0.0] * len(self.float_names))

    def int_index(self, name: str) -> int:
        return self.int_names.index(name)

    def float_index(self, name: str) -> int:
        return self.float_names.index(name)

    def snapshot(self) -> dict[str, int | float]:
        out: dict[str, int | float] = dict(zip(self.int_names, self.ints, strict=True))
        out.update(zip(self.float_names, self.floats, strict=True))
        return out

    def beat(self) -> None:
        pass

    def close(self, unlink: bool = False) -> None:
        pass


def open_counters(name: str | None, ints: Sequence[str], floats: Sequence[str]) -> CounterBlock | LocalCounters:
    if not name:
        return LocalCounters(ints, floats)
    return CounterBlock.create(name, ints=ints, floats=floats)


def attach_until(
    attach: Callable[[float], T], what: str, stopping: Callable[[], bool], timeout: float | None,
    on_wait: Callable[[], None] | None = None,
) -> T | None:
    """Retry-attach in short slices so SIGTERM still stops a process waiting for its peers.

    Returns None when a stop was requested; raises AttachTimeout after ``timeout`` seconds (None = forever).
    ``on_wait`` runs between attempts (every ~0.2 s).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while not stopping():
        try:
            return attach(0.2)
        except segment.AttachTimeout:
            if on_wait is not None:
                on_wait()  # e.g. keep our own counter block's heartbeat fresh while we wait
            if deadline is not None and time.monotonic() >= deadline:
                raise segment.AttachTimeout(f"{what} did not appear within {timeout:g} s") from None
    return None
