"""The run skeleton of a polling fleet process: GC policy around an error-counted loop, with housekeeping.

``serve`` runs after a process has validated its configuration, pinned itself, attached its segments and built
its state. It marks the supervisor running, does a first housekeeping pass, then -- with the collector frozen and
disabled -- calls ``loop()`` until a stop is requested. ``loop`` is the process's hot loop; it returns on stop or
raises. A raise is counted by the supervisor (repeated errors halt trading; the process keeps its counters live),
the first few are printed, housekeeping runs if due, and the loop is re-entered. The caller's ``finally`` does the
final housekeeping and the cleanup, which differs per process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from caerus.runtime.clock import HousekeepingClock
from caerus.runtime.gcpolicy import hot_gc
from caerus.runtime.memwatch import MemWatch
from caerus.runtime.supervisor import Supervisor

PRINTED_ERRORS = 3  # loop errors printed to stderr; the rest are only counted (the counter says how many)


def serve(
    process: str,
    sup: Supervisor,
    loop: Callable[[], None],
    housekeeping: Callable[[], None],
    clock: HousekeepingClock,
    memwatch: MemWatch | None = None,
) -> None:
    """Run ``loop`` until ``sup.stopping``; see the module docstring."""
    sup.running()
    housekeeping()
    clock.start(time.time_ns())
    if memwatch is not None:
        memwatch.start()
    with hot_gc():
        while not sup.stopping:
            try:
                loop()
            except Exception as exc:  # counted; repeated errors halt trading, the process keeps its counters live
                sup.record_error(exc)
                if sup.errors <= PRINTED_ERRORS:
                    print(f"{process}: loop error {sup.last_error}", file=sys.stderr)
                if clock.due(time.time_ns()):
                    housekeeping()
