"""`invoke bench --monitor` and `invoke monitor --session`: a real Prometheus on loopback beside a local session.

During the run Prometheus stores its data in a staging folder under the sessions folder (the session folder does
not exist before the session starts); afterwards that folder moves into the session folder as ``prometheus/``, so
the metrics stay with the session. ``serve_saved`` opens a session's kept metrics again.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from caerus.monitoring import prometheus

DEFAULT_PROMETHEUS_PORT = 9090


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sessions(out: Path) -> set[Path]:
    return {p.parent for p in out.glob("*/config.toml")} if out.is_dir() else set()


@contextmanager
def monitored(out: Path, prometheus_port: int = 0, lifecycle: bool = False) -> Iterator[int]:
    """Prometheus scraping the exporter port this yields (give it to the session); afterwards its data is moved
    into the session folder the run created. Raises PrometheusError (one line) when Prometheus cannot start.
    ``lifecycle``: Prometheus's unauthenticated quit/reload API on (off by default)."""
    exporter_port = free_port()
    port = prometheus_port or free_port()
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".prometheus-{os.getpid()}"
    before = _sessions(out)
    proc = prometheus.start(staging, [f"127.0.0.1:{exporter_port}"], port, lifecycle=lifecycle)
    print(f"prometheus: http://127.0.0.1:{port}/graph?g0.expr=caerus_latency_window_seconds"
          f"%7Bmetric%3D%22tick_to_decision%22%7D (exporter on 127.0.0.1:{exporter_port})", flush=True)
    try:
        yield exporter_port
    finally:
        prometheus.stop(proc)
        new = sorted(_sessions(out) - before)
        if len(new) == 1:
            dest = new[0] / "prometheus"
            shutil.move(str(staging), dest)
            print(f"prometheus data: {dest} (invoke monitor --session {new[0]} serves it again)")
        else:
            print(f"prometheus data: {staging} (no single new session folder to move it into)")


def serve_saved(session_dir: Path, port: int = DEFAULT_PROMETHEUS_PORT, lifecycle: bool = False) -> None:
    """A Prometheus over a session's kept metrics (no scraping), until Ctrl-C (``lifecycle``: as for monitored)."""
    data = session_dir / "prometheus"
    if not (data / "prometheus").is_dir():
        raise prometheus.PrometheusError(f"{session_dir} has no kept metrics (run it with invoke bench --monitor)")
    proc = prometheus.start(data, [], port, lifecycle=lifecycle)
    print(f"prometheus: http://127.0.0.1:{port}/ over {data} (Ctrl-C stops it)", flush=True)
    try:
        proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        prometheus.stop(proc)
