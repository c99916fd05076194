"""The exporter's HTTP server counts a response as in flight until its last byte is written, so the exporter's
stop can wait for the scrape that carries a session's final counts; local clients cannot grow its threads past its
pool or hold a worker past the connection deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from caerus.monitoring.http_server import WORKERS, serve

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


@contextlib.contextmanager
def _serving(registry: CollectorRegistry, host: str = "127.0.0.1", **kw: Any) -> Iterator[tuple[Any, Any]]:
    """The exporter's server for ``registry`` on ``host`` (a free port) while the block runs: (server, responses).
    After it the server is shut down and its thread must end within WAIT_S."""
    server, thread, responses = serve(registry, host, 0, **kw)
    try:
        yield server, responses
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT_S)
    assert not thread.is_alive()


def test_a_response_is_in_flight_until_written() -> None:
    registry = CollectorRegistry()
    held = HeldCollector()
    registry.register(held)
    body: list[bytes] = []
    with _serving(registry) as (server, responses):
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


def test_it_binds_loopback_v6_when_asked() -> None:
    with _serving(CollectorRegistry(), "::1") as (server, _):
        out = urllib.request.urlopen(f"http://[::1]:{server.server_port}/metrics", timeout=WAIT_S).read()
        assert b"# HELP" in out or out == b""


HALF_SENT = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the request never ends
TEST_TIMEOUT_S = 5.0  # the connection deadline here (the exporter's is CONNECTION_TIMEOUT_S)


def test_half_sent_requests_hold_at_most_the_pool_and_a_scrape_follows_their_deadline() -> None:
    """Issue 44: prometheus_client's server started a thread per connection and never timed one out. Here N
    half-sent requests (N > the pool) leave at most the pool's threads; the rest are refused with a 503 naming the
    limit, counted; at the deadline the held ones are closed, counted, and a normal scrape succeeds."""
    workers, n = 4, 40
    before = threading.active_count()
    clients: list[socket.socket] = []
    with _serving(CollectorRegistry(), workers=workers, connection_timeout_s=TEST_TIMEOUT_S) as (server, _), \
            contextlib.ExitStack() as opened:
        port = server.server_port
        for _ in range(n):
            c = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
            opened.callback(c.close)
            c.sendall(HALF_SENT)
            clients.append(c)
        assert _until(lambda: server.refused == n - workers), server.refused
        assert threading.active_count() - before <= workers + 1  # the pool and the accepting thread, no more
        answer = clients[-1].recv(4096)  # accepted in order: the first `workers` are held, the rest refused
        assert answer.startswith(b"HTTP/1.0 503 ") and b"WORKERS" in answer, answer
        # the held ones end at their deadline (the server closes them: EOF), and the pool serves again
        assert _until(lambda: server.timed_out == workers), server.timed_out
        for c in clients[:workers]:
            assert c.recv(4096) == b""
        out = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT_S).read()
        assert f"caerus_exporter_connections_refused_total {n - workers}.0".encode() in out
        assert f"caerus_exporter_connections_timed_out_total {workers}.0".encode() in out
        assert threading.active_count() - before <= workers + 1


def test_the_exporters_pool_is_bounded_by_default() -> None:
    with _serving(CollectorRegistry()) as (server, _):
        assert server.workers == WORKERS <= 16
        assert 0 < server.connection_timeout_s <= 30
