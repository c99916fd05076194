"""`invoke monitor --host NAME`: an SSH tunnel to the host's caerus exporter (127.0.0.1:9465 there) and a real
Prometheus on the operator's machine scraping through it. Nothing is installed on the host and its security group
is unchanged; the host key is pinned as for every other connection (infra.remote.connect).

The Prometheus data stays on the operator's machine (``<out>/<host>-monitor/prometheus``). While the laptop is
away nothing is scraped; the host's session folder still keeps every 1 s latency interval (.hlog) and the final
counts, which ``invoke collect`` brings back (docs/monitoring.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from caerus.monitoring import prometheus
from caerus.monitoring.local_monitor import free_port
from infra.deploy import EXPORTER_PORT
from infra.hosts import HostRecord
from infra.remote import connect


def monitor_host(record: HostRecord, known_hosts: Path, data_dir: Path, prometheus_port: int,
                 until: Callable[[int, int], None], remote_port: int = EXPORTER_PORT, host_key: str = "",
                 say: Callable[[str], None] = print, lifecycle: bool = False) -> None:
    """Tunnel local -> host 127.0.0.1:remote_port, Prometheus scraping the local end; ``until(prometheus_port,
    tunnel_port)`` runs while both are up (the task waits for Ctrl-C, the test queries). ``lifecycle``:
    Prometheus's unauthenticated quit/reload API on (off by default)."""
    conn = connect(record, known_hosts, say, host_key=host_key)
    try:
        tunnel_port = free_port()
        with conn.forward_local(local_port=tunnel_port, remote_port=remote_port, remote_host="127.0.0.1",
                                local_host="127.0.0.1"):
            proc = prometheus.start(data_dir, [f"127.0.0.1:{tunnel_port}"], prometheus_port, lifecycle=lifecycle)
            try:
                say(f"prometheus: http://127.0.0.1:{prometheus_port}/ scraping {record.name}'s exporter through "
                    f"127.0.0.1:{tunnel_port} (data: {data_dir})")
                until(prometheus_port, tunnel_port)
            finally:
                prometheus.stop(proc)
    finally:
        conn.close()
