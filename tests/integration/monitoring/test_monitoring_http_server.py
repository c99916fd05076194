"""The exporter's HTTP server counts a response as in flight until its last byte is written, so the exporter's
stop can wait for the scrape that carries a session's final counts."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from caerus.monitoring.http_server import serve

pytestmark = pytest.mark.integration

WAIT_S = 30.0


class HeldCollector(Collector):
    """Blocks each scrape until released, so the test sees a response in flight."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def collect(self) -> Iterator[Metric]:
        self.entered.set()
        assert self.release.wait(WAIT_S)
        g = GaugeMetricFamily("caerus_test_value", "a value")
        g.add_metric([], 42.0)
        yield g


def _until(cond, timeout: float = WAIT_S) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_a_response_is_in_flight_until_written() -> None:
    registry = CollectorRegistry()
    held = HeldCollector()
    registry.register(held)
    server, thread, responses = serve(registry, "127.0.0.1", 0)
    body: list[bytes] = []
    try:
        port = server.server_port
        client = threading.Thread(target=lambda: body.append(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT_S).read()), daemon=True)
        client.start()
        assert held.entered.wait(WAIT_S)
        assert responses.open == 1 and responses.written == 0
        held.release.set()
        client.join(WAIT_S)
        assert body and b"caerus_test_value 42.0" in body[0]
        assert _until(lambda: responses.open == 0)
        assert responses.written == 1
    finally:
        held.release.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT_S)
    assert not thread.is_alive()


def test_it_binds_loopback_v6_when_asked() -> None:
    registry = CollectorRegistry()
    server, thread, _ = serve(registry, "::1", 0)
    try:
        out = urllib.request.urlopen(f"http://[::1]:{server.server_port}/metrics", timeout=WAIT_S).read()
        assert b"# HELP" in out or out == b""
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT_S)
