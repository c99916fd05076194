"""Kill switch and error budget of a fleet process: what halts trading, what stops the process, and its state.

* Kill switch: SIGUSR1, or a kill file appearing (checked off the hot path by ``check_kill_file``), halts the
  process: it keeps running and reading (so its counters stay live) but sends no more orders. Halting is final
  for the life of the process.
* Error budget: ``record_error`` counts loop exceptions; ``max_errors`` within ``error_window_s`` halts.
* SIGTERM / SIGINT request a clean stop (the loop exits, the process returns 0).
Signal handlers only set attributes (the hot loop reads ``stopping`` and the halt callback flips a flag the
decision code already checks), so nothing heavy runs inside a handler.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import Protocol


class State(IntEnum):
    """Exposed as the ``state`` counter."""

    STARTING = 0
    RUNNING = 1
    HALTED = 2
    STOPPING = 3


class HaltCause(IntEnum):
    """Exposed as the ``halt_cause`` counter."""

    NONE = 0
    SIGNAL = 1
    KILL_FILE = 2
    ERRORS = 3
    VENUE_MISMATCH = 4  # the venue's position or account stream contradicts the engine (execution)


class ProcessPolicy(Protocol):
    """What a trading process's config says about halting (strategy and execution configs both carry it)."""

    @property
    def kill_file(self) -> str | None: ...
    @property
    def max_errors(self) -> int: ...
    @property
    def error_window_s(self) -> float: ...


class Supervisor:
    @classmethod
    def for_process(cls, cfg: ProcessPolicy, kill_file: str | None,
                    on_halt: Callable[[HaltCause], None]) -> Supervisor:
        """The supervisor of a trading process, signals installed: ``kill_file`` (the command line) overrides the
        config's; ``on_halt`` flips whatever the process's decision code checks."""
        sup = cls(kill_file=kill_file if kill_file is not None else cfg.kill_file, max_errors=cfg.max_errors,
                  error_window_s=cfg.error_window_s, on_halt=on_halt)
        sup.install_signals()
        return sup

    def __init__(
        self,
        *,
        kill_file: str | Path | None = None,
        max_errors: int = 10,
        error_window_s: float = 60.0,
        on_halt: Callable[[HaltCause], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kill_file = Path(kill_file) if kill_file else None
        self.max_errors = max_errors
        self.error_window_s = error_window_s
        self.on_halt = on_halt
        self._clock = clock
        self.state = State.STARTING
        self.halt_cause = HaltCause.NONE
        self.stopping = False
        self.errors = 0
        self.last_error = ""
        self._recent: collections.deque[float] = collections.deque(maxlen=max_errors)

    @property
    def halted(self) -> bool:
        return self.halt_cause != HaltCause.NONE

    def install_signals(self) -> None:
        """SIGTERM/SIGINT -> stop; SIGUSR1 -> kill switch. Main thread only."""
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGUSR1, self._on_kill_signal)

    def _on_stop_signal(self, signum: int, frame: object) -> None:
        self.stop()

    def _on_kill_signal(self, signum: int, frame: object) -> None:
        self.halt(HaltCause.SIGNAL)

    def running(self) -> None:
        if self.state == State.STARTING:
            self.state = State.RUNNING

    def stop(self) -> None:
        self.stopping = True
        self.state = State.STOPPING

    def halt(self, cause: HaltCause) -> None:
        """Stop sending orders for good (first cause wins)."""
        if self.halt_cause != HaltCause.NONE:
            return
        self.halt_cause = cause
        if self.state != State.STOPPING:
            self.state = State.HALTED
        if self.on_halt is not None:
            self.on_halt(cause)

    def check_kill_file(self) -> bool:
        """Off the hot path (one stat): halt when the kill file exists. True when halted by it now."""
        if self.kill_file is not None and not self.halted and os.path.exists(self.kill_file):
            self.halt(HaltCause.KILL_FILE)
            return True
        return False

    def record_error(self, exc: BaseException) -> bool:
        """Count a loop error; halt (and return True) once ``max_errors`` fell within ``error_window_s``."""
        self.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        now = self._clock()
        self._recent.append(now)
        if len(self._recent) >= self.max_errors and now - self._recent[0] <= self.error_window_s:
            self.halt(HaltCause.ERRORS)
            return True
        return False
