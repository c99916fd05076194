"""The exporter's HTTP server: prometheus_client's WSGI app on loopback, knowing which responses are still being
written.

prometheus_client's own ``start_http_server`` serves from daemon threads and says nothing about a response in
flight, so an exporter that exits right after a scrape has been *collected* can cut that scrape off before
Prometheus has read it -- the last, final counts of a session are the ones lost. Here every response counts as in
flight until the WSGI server has written it and closed it (PEP 3333: the server calls the body's ``close()``
after the last byte), and the exporter waits for none to be in flight before it shuts down.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log: a scrape every second would flood the session's exporter.log."""


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


def serve(registry: CollectorRegistry, addr: str, port: int) -> tuple[WSGIServer, threading.Thread, InFlight]:
    """Serve ``registry`` on ``addr:port`` (0: any) from a daemon thread; raises OSError when it cannot bind."""

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    app = InFlight(make_wsgi_app(registry))
    httpd = make_server(addr, port, app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="exporter-http", daemon=True)
    thread.start()
    return httpd, thread, app
