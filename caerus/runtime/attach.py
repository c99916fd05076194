"""Retry-attach to a peer's segment in short slices, so a stop request still ends a process waiting for peers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from caerus.ipc import segment

T = TypeVar("T")


def attach_until(
    attach: Callable[[float], T], what: str, stopping: Callable[[], bool], timeout: float | None,
    on_wait: Callable[[], None] | None = None,
) -> T | None:
    """Call ``attach(slice_s)`` until it succeeds.

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
