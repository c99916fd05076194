"""Chaos for a local session (``invoke bench --chaos EVERY``): every EVERY seconds one random hot fleet process
(a feed, the strategy, the execution engine) is killed with SIGKILL, by PID, the way a crash or the OOM killer
would. The session's supervisor (caerus.session.supervise) then restarts it as the host's units would; the kills
and what followed them go into ``summary.json`` (``chaos``) and the report's deaths table.

Seeded (the session's seed), so a chaos run can be repeated. Only processes this session started are touched.
"""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable, Sequence
from typing import Any

from caerus.session.launch import Running


class ChaosMonkey:
    def __init__(self, every_s: float, targets: Sequence[str], seed: int, start_mono: float,
                 on_event: Callable[[str], None] | None = None) -> None:
        self.every_s = every_s
        self.targets = tuple(targets)
        self.start_mono = start_mono
        self._rng = random.Random(seed * 31 + 7)
        self._next = start_mono + every_s
        self._say = on_event or (lambda m: None)
        self.kills: list[dict[str, Any]] = []

    def tick(self, procs: Sequence[Running], now: float) -> dict[str, Any] | None:
        """Kill one running target when due; the kill record, or None."""
        if now < self._next:
            return None
        self._next = now + self.every_s
        running = [r for r in procs if r.spec.name in self.targets and r.status == "running"]
        if not running:
            return None
        victim = self._rng.choice(running)
        try:
            os.kill(victim.pid, signal.SIGKILL)
        except ProcessLookupError:  # it died on its own in between: the supervisor has it
            return None
        kill = {"at_s": round(now - self.start_mono, 3), "process": victim.spec.name, "pid": victim.pid}
        self.kills.append(kill)
        self._say(f"chaos: killed {victim.spec.name} (pid {victim.pid}) with SIGKILL")
        return kill
