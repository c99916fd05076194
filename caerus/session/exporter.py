"""The session's ``caerus exporter`` (issue 31): started beside the fleet when asked, stopped after collection.

It is not a fleet process: it only reads what the fleet publishes (counter blocks, .hlog files), so it is not
supervised or restarted, and it exits by itself when the session runner does (``--until-pid``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from caerus.runtime.children import stop_child

READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0  # above the exporter's --linger (it waits for one last scrape)


def start_exporter(session_dir: Path, port: int) -> tuple[subprocess.Popen[bytes], int]:
    """Start it on loopback ``port`` (0: any); returns the process and the port it listens on."""
    ready = session_dir / "exporter.ready.json"
    log = open(session_dir / "logs" / "exporter.log", "ab")  # noqa: SIM115 -- the child holds it
    proc = subprocess.Popen([sys.executable, "-m", "caerus", "exporter", str(session_dir), "--port", str(port),
                             "--ready-file", str(ready), "--until-pid", str(os.getpid())],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready.exists():
            return proc, int(json.loads(ready.read_text())["port"])
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    stop_exporter(proc)
    tail = (session_dir / "logs" / "exporter.log").read_text(errors="replace").strip().splitlines()
    raise RuntimeError(f"caerus exporter did not become ready: {tail[-1] if tail else 'no output'}")


def stop_exporter(proc: subprocess.Popen[bytes]) -> None:
    stop_child(proc, STOP_TIMEOUT_S)
