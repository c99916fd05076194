"""A scripted HTTP endpoint on loopback for the tests of clients that ask a web service something (the caller's
address, the EC2 console, instance metadata): a quiet handler base and a server run in a thread for a block."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

JOIN_S = 10.0


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing (the test's output stays the test's) and answers in one call."""

    def reply(self, body: bytes, status: int = 200, content_type: str | None = None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) in a thread while the block runs; yields the base URL
    (``http://127.0.0.1:<port>``), then shuts the server down and joins the thread (bounded)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(JOIN_S)
