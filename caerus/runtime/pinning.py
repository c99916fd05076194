"""CPU pinning for fleet processes, with errors that name the --cpus flag."""

from __future__ import annotations

import os
from collections.abc import Sequence

from caerus.plan import pin_current_process


def pin(cpus: Sequence[int]) -> None:
    """Pin this process (its calling thread and the threads it starts later) to ``cpus``; () = no-op."""
    try:
        pin_current_process(cpus)
    except OSError as exc:
        raise ValueError(f"--cpus {','.join(map(str, cpus))}: cannot pin: {exc.strerror}") from None


def pin_all_threads(cpus: Sequence[int]) -> None:
    """Pin every thread that already exists (library pools started before ``pin``) as well; () = no-op."""
    if not cpus:
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), set(cpus))
        except OSError:
            pass  # a thread that ended meanwhile
