"""Restart-on-failure for a local session's fleet processes, the way the host's systemd units do it.

On the host, systemd restarts a fleet process that died (``Restart=on-failure``). A local session does the same:
a process that exits on its own (a crash, ``kill -9``) is recorded as a death (when, exit code or signal, its
log tail) and started again after a delay from the one back-off (:class:`caerus.net.pacing.Backoff`, full
jitter). A process that then ran for ``stable_after_s`` resets its back-off; after ``max_restarts`` restarts
it stays down (systemd's start limit). Processes the session stops itself (``stop_requested``) are never
restarted, and neither is the venue emulator (it is the market, not the fleet).

Off the hot path: the session's watch loop calls :meth:`Restarter.tick` every ~0.25 s.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caerus.net.pacing import Backoff
from caerus.session import launch

NOT_RESTARTED = frozenset({"venue-sim"})


@dataclass
class _Track:
    backoff: Backoff
    restart_at: float | None = None
    deaths: list[dict[str, Any]] = field(default_factory=list)
    restarts: int = 0


class Restarter:
    def __init__(self, session_dir: Path, session_start_mono: float, *, base_s: float = 0.5, cap_s: float = 30.0,
                 stable_after_s: float = 10.0, max_restarts: int = 10,
                 on_event: Callable[[str], None] | None = None) -> None:
        self.session_dir = session_dir
        self.start_mono = session_start_mono
        self.base_s = base_s
        self.cap_s = cap_s
        self.stable_after_s = stable_after_s
        self.max_restarts = max_restarts
        self.on_event = on_event
        self.tracks: dict[str, _Track] = {}

    def _track(self, name: str) -> _Track:
        t = self.tracks.get(name)
        if t is None:
            t = self.tracks[name] = _Track(Backoff(self.base_s, self.cap_s))
        return t

    def tick(self, procs: Iterable[launch.Running], now: float | None = None) -> int:
        """Record new deaths, restart what is due; returns how many processes were restarted."""
        now = time.monotonic() if now is None else now
        n = 0
        for r in procs:
            name = r.spec.name
            if name in NOT_RESTARTED or r.stop_requested:
                continue
            r.poll(self.start_mono)
            if r.status != "died":
                continue
            t = self._track(name)
            if t.restart_at is None:
                self._record_death(r, t, now)
                if t.restarts >= self.max_restarts:
                    t.restart_at = math.inf  # start limit reached: stays down, reported as died
                    continue
                t.restart_at = now + t.backoff.next_delay()
            elif now >= t.restart_at:
                self._restart(r, t, now)
                n += 1
        return n

    def _record_death(self, r: launch.Running, t: _Track, now: float) -> None:
        code = r.proc.returncode
        uptime = (r.ended_mono or now) - r.started_mono
        if uptime >= self.stable_after_s:
            t.backoff.reset()  # it ran fine for a while: this failure starts the back-off afresh
        death: dict[str, Any] = {"at_s": round((r.ended_mono or now) - self.start_mono, 3), "pid": r.pid,
                                 "exit_code": code, "uptime_s": round(uptime, 3),
                                 "log_tail": launch.tail(r.log_path, 5)}
        if code is not None and code < 0 and -code in signal.Signals._value2member_map_:
            death["signal"] = signal.Signals(-code).name
        t.deaths.append(death)
        if self.on_event is not None:
            self.on_event(f"{r.spec.name} (pid {r.pid}) died with exit {code} after {uptime:.1f} s"
                          + ("" if t.restarts < self.max_restarts else "; start limit reached, not restarted"))

    def _restart(self, r: launch.Running, t: _Track, now: float) -> None:
        fresh = launch.start(r.spec, self.session_dir)
        old_pid = r.pid
        r.proc, r.log, r.started_mono = fresh.proc, fresh.log, fresh.started_mono
        r.ended_mono = None
        r.status = "running"
        r.notes.extend(fresh.notes)
        t.restarts += 1
        t.restart_at = None
        t.deaths[-1]["restarted_after_s"] = round(now - self.start_mono - t.deaths[-1]["at_s"], 3)
        t.deaths[-1]["new_pid"] = r.pid
        if self.on_event is not None:
            self.on_event(f"{r.spec.name} restarted (pid {old_pid} -> {r.pid}, restart {t.restarts})")

    def restarts(self) -> dict[str, int]:
        return {name: t.restarts for name, t in self.tracks.items() if t.restarts}

    def record(self, name: str) -> dict[str, Any]:
        """What summary.json keeps per process: restart count and every death."""
        t = self.tracks.get(name)
        if t is None:
            return {"restarts": 0}
        return {"restarts": t.restarts, "deaths": t.deaths}
