"""Start-up REST calls bound what a hostile or broken venue can do to them (issue 26): a server that drips its
answer one byte at a time meets a deadline for the whole answer, and an answer nested a million levels deep is
refused as "not JSON" instead of overflowing the stack. Real HTTP servers on loopback, one thread each."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from caerus.net.rest import RestError, request_json


class _RawHttpServer:
    """Answers every connection with ``respond(conn)``; stops when the test ends (bounded joins)."""

    def __init__(self, respond: Callable[[socket.socket, threading.Event], None]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self._respond = respond
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                conn.recv(65536)
                try:
                    self._respond(conn, self.stop)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture
def http_server() -> Iterator[Callable[[Callable[[socket.socket, threading.Event], None]], _RawHttpServer]]:
    servers: list[_RawHttpServer] = []

    def start(respond: Callable[[socket.socket, threading.Event], None]) -> _RawHttpServer:
        servers.append(_RawHttpServer(respond))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _drip(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
    for _ in range(100_000):  # one byte at a time, each well inside the per-read timeout
        if stop.is_set():
            return
        conn.sendall(b" ")
        time.sleep(0.05)


def _deep(conn: socket.socket, stop: threading.Event) -> None:
    body = b"[" * (1 << 20)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    conn.sendall(body)


def _ok(conn: socket.socket, stop: threading.Event) -> None:
    body = b'{"symbols":[{"symbol":"BTCUSDT","filters":[{"tickSize":"0.10"}]}]}'
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    conn.sendall(body)


def test_a_dripping_answer_meets_the_deadline_for_the_whole_answer(http_server) -> None:
    srv = http_server(_drip)
    with pytest.raises(RestError, match=r"no complete answer within 1 s"):
        request_json(f"http://127.0.0.1:{srv.port}/fapi/v1/exchangeInfo", timeout_s=1.0)


def test_a_deeply_nested_answer_is_refused_as_not_json(http_server) -> None:
    srv = http_server(_deep)
    with pytest.raises(RestError, match=r"not JSON \(JSON nested 1048576 levels deep"):
        request_json(f"http://127.0.0.1:{srv.port}/info", timeout_s=10.0)


def test_an_ordinary_answer_decodes(http_server) -> None:
    srv = http_server(_ok)
    assert request_json(f"http://127.0.0.1:{srv.port}/x") == {
        "symbols": [{"symbol": "BTCUSDT", "filters": [{"tickSize": "0.10"}]}]}
