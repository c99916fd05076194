"""A call that may block on a planted FIFO, run with a bound: the tests of safe segment opening (ipc, capture) use it
so a regression fails in seconds instead of hanging the suite."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

JOIN_S = 10.0


def bounded_call(fn: Callable[[], Any], fifo: Path | None = None) -> BaseException | None:
    """Run ``fn`` in a thread; the exception it raised (None when it returned). Fails the test when it does not
    finish within ``JOIN_S``, after writing into ``fifo`` (if given) so the stuck open/read can end."""
    box: dict[str, BaseException | None] = {"exc": None}

    def body() -> None:
        try:
            fn()
        except BaseException as exc:  # handed back to the test
            box["exc"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(JOIN_S)
    if t.is_alive():
        if fifo is not None:  # release the stuck open/read so the thread can end
            fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
            os.write(fd, b"\0" * 4096)
            os.close(fd)
            t.join(JOIN_S)
        pytest.fail(f"call did not return within {JOIN_S:g} s (blocked on a planted FIFO?)")
    return box["exc"]
