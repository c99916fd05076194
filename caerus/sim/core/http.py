"""Plain HTTP on a venue's WebSocket port: one TLS host serves REST and WebSocket, as the real venues do.

The Hyperliquid SDK derives both ``POST /info`` and ``wss://.../ws`` from one base URL, and Binance serves its
REST snapshot next to the streams, so the emulator answers both on one port. ``websockets`` only accepts the
upgrade request (it refuses any request body), so :func:`connection_class` gives it a connection type that looks
at the request head first: an ``Upgrade: websocket`` request goes to websockets untouched (after the head is
seen, every byte goes straight through, so streaming pays one attribute test per read); any other request is
answered by the venue's :data:`HttpHandler` and the connection is closed (``Connection: close``: no keep-alive,
so an idle HTTP connection never outlives websockets' opening-handshake timeout).

Bounded: a head over 16 KiB or a body over 1 MiB is answered 431 / 413 and closed; a chunked body is answered 411.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection

if TYPE_CHECKING:
    from websockets.http11 import Response

    from caerus.sim.core.config import SharedState

log = logging.getLogger("caerus.sim")

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 1 << 20


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: dict[str, str]  # first value of each query parameter
    headers: http.client.HTTPMessage
    body: bytes
    raw_query: str = ""  # the query string as sent (Binance signs it byte for byte)

    def json(self) -> Any:
        """The body as JSON (raises ValueError when it is not)."""
        return json.loads(self.body or b"null")

    def form(self) -> dict[str, str]:
        """Query parameters merged with an ``application/x-www-form-urlencoded`` body (Binance's POST style)."""
        merged = dict(self.query)
        if self.body and "json" not in (self.headers.get("Content-Type") or ""):
            merged.update({k: v[0] for k, v in parse_qs(self.body.decode("utf-8", "replace")).items()})
        return merged


@dataclass(frozen=True)
class HttpReply:
    status: int
    body: Any  # JSON-encoded unless it is already str / bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = field(default=())

    def encode(self) -> bytes:
        if isinstance(self.body, bytes):
            payload = self.body
        elif isinstance(self.body, str):
            payload = self.body.encode()
        else:
            payload = json.dumps(self.body, separators=(",", ":")).encode()
        reason = HTTPStatus(self.status).phrase if self.status in HTTPStatus._value2member_map_ else "Unknown"
        lines = [f"HTTP/1.1 {self.status} {reason}", f"Content-Type: {self.content_type}",
                 f"Content-Length: {len(payload)}", "Connection: close",
                 *(f"{k}: {v}" for k, v in self.headers)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


#: a venue's REST surface: one request in, one reply out (pure; no I/O)
HttpHandler = Callable[[HttpRequest], HttpReply]


class VenueServer:
    """What each emulated venue's server shares: the emulator's state, the venue's counters and its REST surface,
    which answers the plain HTTP requests on the venue's port (each counted)."""

    venue: str

    def __init__(self, state: SharedState, rest: HttpHandler) -> None:
        self.state = state
        self.counters = state.counters[self.venue]
        self.rest = rest

    def http(self, request: HttpRequest) -> HttpReply:
        """A plain HTTP request on this port (REST)."""
        self.counters.http_requests += 1
        return self.rest(request)

    def scenario_refusal(self, conn: ServerConnection) -> Response | None:
        """The ``http-429`` / ``http-503`` scenarios' answer to a WebSocket handshake while their fault budget lasts
        (counted as rejected, with ``Retry-After: 1``); None otherwise."""
        scenario = self.state.config.scenario
        if scenario.name not in ("http-429", "http-503") or not self.state.budget.claim(self.venue):
            return None
        self.counters.rejected += 1
        status = 429 if scenario.name == "http-429" else 503
        log.info("%s handshake rejected with HTTP %d (scenario)", self.venue, status)
        resp = conn.respond(status, "Too Many Requests\n" if status == 429 else "Service Unavailable\n")
        resp.headers["Retry-After"] = "1"
        return resp


def _error(status: int, text: str) -> HttpReply:
    return HttpReply(status, text + "\n", "text/plain")


def parse_head(head: bytes) -> tuple[str, str, http.client.HTTPMessage]:
    """(method, target, headers) of an HTTP/1.x request head (without the blank line); ValueError if malformed."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3 or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise ValueError(f"invalid HTTP request line: {line[:100]!r}")
    headers = http.client.parse_headers(io.BytesIO(rest + b"\r\n\r\n"))
    return parts[0].decode("ascii", "replace"), parts[1].decode("ascii", "replace"), headers


def connection_class(handler: HttpHandler, on_request: Callable[[HttpRequest, HttpReply], None] | None = None,
                     ) -> type[ServerConnection]:
    """A ServerConnection subclass that answers plain HTTP requests with ``handler`` (pass as ``create_connection``)."""

    class HttpOrWebSocket(ServerConnection):
        _through = False  # a WebSocket upgrade: every byte goes to websockets
        _done = False  # a plain HTTP request was answered: the connection is closing
        _buf = b""

        def data_received(self, data: bytes) -> None:
            if self._done:
                return
            if self._through:
                super().data_received(data)
                return
            buf = self._buf + data
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    self._answer(_error(431, "request head too large"))
                else:
                    self._buf = buf
                return
            try:
                method, target, headers = parse_head(buf[:end])
            except ValueError as exc:
                self._answer(_error(400, str(exc)))
                return
            if (headers.get("Upgrade") or "").lower() == "websocket":
                self._through, self._buf = True, b""
                super().data_received(buf)
                return
            if headers.get("Transfer-Encoding"):
                self._answer(_error(411, "a Content-Length is required"))
                return
            try:
                length = int(headers.get("Content-Length") or 0)
            except ValueError:
                self._answer(_error(400, "invalid Content-Length"))
                return
            if not 0 <= length <= MAX_BODY_BYTES:
                self._answer(_error(413, "request body too large"))
                return
            if len(buf) < end + 4 + length:
                self._buf = buf
                return
            url = urlsplit(target)
            request = HttpRequest(method, url.path, {k: v[0] for k, v in parse_qs(url.query).items()}, headers,
                                  buf[end + 4 : end + 4 + length], url.query)
            try:
                reply = handler(request)
            except Exception as exc:  # a bug in one route answers 500, it does not take the server down
                log.exception("HTTP %s %s failed", method, url.path)
                reply = HttpReply(500, {"code": -1000, "msg": f"emulator HTTP handler failed: {exc!r}"})
            if on_request is not None:
                on_request(request, reply)
            self._answer(reply)

        def _answer(self, reply: HttpReply) -> None:
            self._buf = b""
            self._done = True  # anything after the answer is discarded with the connection
            self.transport.write(reply.encode())
            self.transport.close()

    return HttpOrWebSocket
