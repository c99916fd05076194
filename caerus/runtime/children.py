"""Stopping a child process the fleet started (Prometheus, the session's exporter): ask, then insist."""

from __future__ import annotations

import subprocess


def stop_child(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM ``proc`` and wait up to ``timeout_s``; if it is still running, SIGKILL it and wait again."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
