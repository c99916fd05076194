"""The exporter's HTTP server: prometheus_client's WSGI app on loopback, knowing which responses are still being
written.

prometheus_client's own ``start_http_server`` serves from daemon threads and says nothing about a response in
flight, so an exporter that exits right after a scrape has been *collected* can cut that scrape off before
Prometheus has read it -- the last, final counts of a session are the ones lost. Here every response counts as in
flight until the WSGI server has written it and closed it (PEP 3333: the server calls the body's ``close()``
after the last byte), and the exporter waits for none to be in flight before it shuts down.

Any local user can connect to a loopback port, so the server is bounded (issue 44): prometheus_client's
``ThreadingWSGIServer`` started a thread per connection and never timed one out (300 half-sent requests took it
from 3 to 303 threads, each counted against the fleet user's process limit). Here a fixed pool of ``WORKERS``
threads serves connections; a connection arriving while every worker is busy is answered 503 (naming the limit) and
closed at once, and counted. Each connection is served -- request read, response written -- within
``CONNECTION_TIMEOUT_S`` of its start, whatever the client sends or reads (every socket call waits at most what is
left of that deadline), then closed, and counted. Both counts are served as metrics.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from caerus.monitoring import names

# Connections served at once. Prometheus scrapes over one connection at a time (one per Prometheus: the local
# `invoke monitor`, a tunnel's, a curl by hand); 8 leaves room for all of them and bounds the exporter's threads.
WORKERS = 8
# Each connection is served within this many seconds of its start (request read, response written), or closed.
# Prometheus's own scrape timeout is at most its interval (1-2 s here; 10 s is its default): a scrape never needs
# longer, and a client that sends or reads nothing frees its worker after this.
CONNECTION_TIMEOUT_S = 10.0
# Connections the kernel completes before the server accepts them (socketserver's default is 5): a burst beyond it
# has its handshakes dropped and retried a second later, where a refusal costs the accepting thread microseconds.
BACKLOG = 128
_DRAIN_BYTES = 4096  # read (and dropped) from a refused connection first, so its close is a FIN, not a reset


class _DeadlineSocket(io.RawIOBase):
    """A connection's socket as the handler's input (and its writer's output): every read and write ends by the
    connection's deadline."""

    def __init__(self, sock: socket.socket, server: BoundedWSGIServer) -> None:
        self.sock = sock
        self.server = server
        self.deadline = time.monotonic() + server.connection_timeout_s
        self.timed_out = False

    def readable(self) -> bool:
        return True

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._expired()
        self.sock.settimeout(left)

    def _expired(self) -> NoReturn:
        if not self.timed_out:
            self.timed_out = True
            self.server.count_timeout()
        raise TimeoutError(f"connection not served within {self.server.connection_timeout_s} s "
                           f"(CONNECTION_TIMEOUT_S)")

    def readinto(self, buffer: Any) -> int:
        self._arm()
        try:
            return self.sock.recv_into(buffer)
        except TimeoutError:
            self._expired()

    def sendall(self, data: Any) -> None:
        self._arm()
        try:
            self.sock.sendall(data)
        except TimeoutError:
            self._expired()


class _DeadlineWriter(io.BufferedIOBase):
    """The handler's unbuffered output (as socketserver's own) through a :class:`_DeadlineSocket`."""

    def __init__(self, raw: _DeadlineSocket) -> None:
        self.raw_socket = raw

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.raw_socket.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class _QuietHandler(WSGIRequestHandler):
    server: BoundedWSGIServer

    def setup(self) -> None:
        """The request's files over a :class:`_DeadlineSocket` (not socketserver's makefile, which would wait as
        long as the client likes)."""
        self.connection = self.request
        raw = _DeadlineSocket(self.connection, self.server)
        self.rfile = io.BufferedReader(raw)
        self.wfile = _DeadlineWriter(raw)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: a scrape every second would flood the session's exporter.log."""


class BoundedWSGIServer(WSGIServer):
    """wsgiref's WSGI server with a fixed pool of ``workers`` threads; a connection beyond it is refused (503) and
    counted, and each connection is served within ``connection_timeout_s`` (see the module docstring)."""

    workers = WORKERS
    connection_timeout_s = CONNECTION_TIMEOUT_S
    request_queue_size = BACKLOG

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused = 0  # connections refused: every worker was busy
        self.timed_out = 0  # connections closed at their deadline
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.workers)  # a slot per worker: nothing queues behind them
        self._active: set[socket.socket] = set()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="exporter-http")

    def count_timeout(self) -> None:
        with self._lock:
            self.timed_out += 1

    def process_request(self, request: Any, client_address: Any) -> None:
        """On the accepting thread: hand the connection to a free worker, or refuse it at once."""
        if not self._slots.acquire(blocking=False):
            self._refuse(request)
            return
        with self._lock:
            self._active.add(request)
        try:
            self._pool.submit(self._serve, request, client_address)
        except RuntimeError:  # the pool is shut down: the server is closing
            self._done(request)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:
            pass  # timed out (counted where it happened) or the client went away: nothing to answer
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._done(request)

    def _done(self, request: socket.socket) -> None:
        with self._lock:
            self._active.discard(request)
        self.shutdown_request(request)
        self._slots.release()

    def _refuse(self, request: socket.socket) -> None:
        self.refused += 1  # only the accepting thread writes it
        body = (f"caerus exporter: all {self.workers} connection workers are busy (WORKERS): connection refused\n"
                .encode())
        head = (f"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        try:  # never waits: what does not fit at once is not sent
            request.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                request.recv(_DRAIN_BYTES)
            request.send(head + body)
        except OSError:
            pass
        self.shutdown_request(request)

    def server_close(self) -> None:
        """Close the listener, end every connection still served (its worker returns at once), stop the pool."""
        super().server_close()
        with self._lock:
            active = list(self._active)
        for request in active:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)
        self._pool.shutdown(wait=False, cancel_futures=True)


class ServerCounts(Collector):
    """The server's refusals and timeouts as counters."""

    def __init__(self, server: BoundedWSGIServer) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        for name, value in (("caerus_exporter_connections_refused_total", self.server.refused),
                            ("caerus_exporter_connections_timed_out_total", self.server.timed_out)):
            base = name.removesuffix("_total")
            fam = CounterMetricFamily(base, names.COUNTERS[name])
            fam.add_metric([], float(value))
            yield fam


class InFlight:
    """Responses begun and not yet written, and responses written (a WSGI middleware)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.open = 0
        self.written = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self.lock:
            self.open += 1
        try:
            body = self.app(environ, start_response)
        except BaseException:
            self._done(written=False)
            raise
        return _Body(body, self)

    def _done(self, written: bool) -> None:
        with self.lock:
            self.open -= 1
            self.written += written


class _Body:
    def __init__(self, body: Iterable[bytes], owner: InFlight) -> None:
        self.body = body
        self.owner = owner

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        close = getattr(self.body, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self.owner._done(written=True)


def serve(registry: CollectorRegistry, addr: str, port: int, workers: int = WORKERS,
          connection_timeout_s: float = CONNECTION_TIMEOUT_S) -> tuple[BoundedWSGIServer, threading.Thread, InFlight]:
    """Serve ``registry`` on ``addr:port`` (0: any) from a daemon thread, connections on a pool of ``workers``
    each served within ``connection_timeout_s``; the server's refusals and timeouts join ``registry``. Raises
    OSError when it cannot bind."""
    if workers < 1 or not connection_timeout_s > 0:
        raise ValueError(f"the exporter needs workers >= 1 and a connection timeout > 0, got {workers} and "
                         f"{connection_timeout_s}")

    class Server(BoundedWSGIServer):
        address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    Server.workers = workers
    Server.connection_timeout_s = connection_timeout_s

    app = InFlight(make_wsgi_app(registry))
    httpd = make_server(addr, port, app, Server, handler_class=_QuietHandler)
    registry.register(ServerCounts(httpd))
    thread = threading.Thread(target=httpd.serve_forever, name="exporter-http", daemon=True)
    thread.start()
    return httpd, thread, app
