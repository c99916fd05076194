"""Stopping a child process the fleet, a benchmark or a test started (Prometheus, the session's exporter, an
emulator): ask, then insist."""

from __future__ import annotations

import subprocess


def stop_child(proc: subprocess.Popen, timeout_s: float, kill_timeout_s: float | None = None) -> None:
    """SIGTERM ``proc`` and wait up to ``timeout_s``; if it is still running, SIGKILL it and wait again (up to
    ``kill_timeout_s``, default ``timeout_s``). A process that has already exited is left alone."""
    proc.terminate()  # a no-op once the process has been reaped
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s if kill_timeout_s is None else kill_timeout_s)
