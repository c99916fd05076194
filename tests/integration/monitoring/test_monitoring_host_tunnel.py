"""invoke monitor --host: a real Prometheus on this machine scrapes a real caerus exporter through an SSH tunnel
opened by infra.monitor over the real loopback sshd fixture (the "host" is this machine), host key pinned."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from caerus.monitoring import prometheus
from infra.monitor import monitor_host
from tests.fixtures.common import free_port, require_binary, wait_for_port
from tests.fixtures.infra_sshd import InfraHost

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


def test_prometheus_scrapes_the_host_exporter_through_the_tunnel(infra_test_host: InfraHost, tmp_path: Path) -> None:
    require_binary("prometheus", "prometheus")
    exporter_port = free_port()
    expiry = tmp_path / "expiry"
    expiry.write_text("1800000000\n")
    (tmp_path / "sessions").mkdir()
    exporter = subprocess.Popen([sys.executable, "-m", "caerus", "exporter", "--latest-in", str(tmp_path / "sessions"),
                                 "--port", str(exporter_port), "--host-expiry-file", str(expiry)],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    seen: dict[str, float] = {}

    def query_until_scraped(prom_port: int, tunnel_port: int) -> None:
        assert tunnel_port != exporter_port
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            res = prometheus.query(prom_port, "caerus_host_expiry_timestamp_seconds")
            if res:
                seen["expiry"] = float(res[0]["value"][1])
                seen["up"] = float(prometheus.query(prom_port, 'up{job="caerus"}')[0]["value"][1])
                return
            time.sleep(0.5)

    try:
        wait_for_port(exporter_port, timeout=30, proc=exporter, what="caerus exporter")
        monitor_host(infra_test_host.record, infra_test_host.store.known_hosts, tmp_path / "prom", free_port(),
                     query_until_scraped, remote_port=exporter_port, host_key="tofu", say=lambda s: None)
    finally:
        exporter.terminate()
        exporter.wait(timeout=15)
    assert seen == {"expiry": 1800000000.0, "up": 1.0}
    assert (tmp_path / "prom" / "prometheus").is_dir()  # the data stays on the operator's machine
