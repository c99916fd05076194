"""The local session's restart-on-failure, on real child processes: back-off, death records, start limit."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from caerus.session import launch
from caerus.session.supervise import Restarter


def _spec(name: str, code: str) -> launch.ProcessSpec:
    return launch.ProcessSpec(name, (sys.executable, "-c", code), (), "sleep")


def _until(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_killed_process_is_restarted_and_its_death_recorded(tmp_path: Path) -> None:
    start = time.monotonic()
    events: list[str] = []
    r = launch.start(_spec("strategy", "import time; time.sleep(60)"), tmp_path)
    sim = launch.start(_spec("venue-sim", "import sys; sys.exit(4)"), tmp_path)
    sup = Restarter(tmp_path, start, base_s=0.01, cap_s=0.05, on_event=events.append)
    try:
        first = r.pid
        os.kill(first, signal.SIGKILL)  # a process this test started
        r.proc.wait(10)
        sim.proc.wait(10)
        _until(lambda: sup.tick([r, sim]) == 1, "the restart")
        assert r.status == "running" and r.pid != first and r.proc.poll() is None
        rec = sup.record("strategy")
        assert rec["restarts"] == 1
        assert rec["deaths"][0]["pid"] == first and rec["deaths"][0]["signal"] == "SIGKILL"
        assert rec["deaths"][0]["new_pid"] == r.pid
        sim.poll(start)  # (the session's watch loop polls every process; the restarter skips the market)
        assert sim.status == "died" and sup.record("venue-sim") == {"restarts": 0}  # the market is not restarted
        assert any("died" in e for e in events) and any("restarted" in e for e in events)
        # A stop the session asked for is not a failure: never restarted.
        launch.stop([r], 10, start)
        assert r.status == "ok" and sup.tick([r]) == 0
    finally:
        launch.stop([r, sim], 5, start)


def test_start_limit_stops_restarting_a_process_that_keeps_dying(tmp_path: Path) -> None:
    start = time.monotonic()
    r = launch.start(_spec("execution", "import sys; sys.exit(3)"), tmp_path)
    sup = Restarter(tmp_path, start, base_s=0.01, cap_s=0.02, max_restarts=2)
    try:
        _until(lambda: (sup.tick([r]), sup.record("execution").get("restarts") == 2
                        and len(sup.record("execution")["deaths"]) == 3)[1], "two restarts and a third death")
        for _ in range(20):  # more ticks: it stays down (no restart after the limit), deaths not re-recorded
            sup.tick([r])
            time.sleep(0.01)
        rec = sup.record("execution")
        assert rec["restarts"] == 2 and len(rec["deaths"]) == 3 and r.status == "died"
        assert all(d["exit_code"] == 3 for d in rec["deaths"])
    finally:
        launch.stop([r], 5, start)
