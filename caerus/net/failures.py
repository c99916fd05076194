"""The failure taxonomy: how a venue connection ended, as a ``wire.FailureClass`` plus a numeric detail.

Every way a session can end goes through :func:`classify`: an exception raised while connecting, subscribing or
receiving (DNS, refused, connect timeout, TLS, HTTP status on the upgrade, protocol error, close code), or a
:class:`SessionEnded` our own code raised (stale data watchdog, subscription rejected, too many parse errors,
planned rotation, shutdown). The result is counted (``fail.<class>`` in the feed's counter block), logged as one
structured JSON line and written as a DISCONNECTED event by the supervisor; this module only decides the class.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass

from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidMessage,
    InvalidStatus,
    InvalidURI,
    PayloadTooBig,
    ProtocolError,
)

from caerus.wire import FailureClass

#: HTTP statuses a venue uses to say "you connect too often" (Binance answers 418 after ignoring 429s)
RATE_LIMIT_STATUSES = frozenset({418, 429})
#: close codes that mean the peer (or our library) saw a protocol violation rather than a plain close
PROTOCOL_CLOSE_CODES = frozenset({1002, 1003, 1007, 1009, 1010})


class SessionEnded(Exception):  # an outcome, not an error
    """Raised by our own code to end a session for a reason no library exception expresses."""

    def __init__(self, failure: FailureClass, detail: str = "", value: int = 0) -> None:
        super().__init__(f"{failure.name}: {detail}" if detail else failure.name)
        self.failure = failure
        self.detail = detail
        self.value = value


@dataclass(frozen=True)
class Failure:
    """A classified end of a connection: class, numeric value (HTTP status / close code / 0) and a short text."""

    cls: FailureClass
    value: int
    detail: str

    @property
    def counter(self) -> str:
        return counter_name(self.cls)

    @property
    def is_fault(self) -> bool:
        """False for planned ends (rotation, shutdown) that must not trigger back-off."""
        return self.cls not in (FailureClass.ROTATION, FailureClass.SHUTDOWN)


def counter_name(cls: FailureClass) -> str:
    """The counter-block name for a failure class, e.g. ``fail.connect_timeout``."""
    return f"fail.{cls.name.lower()}"


def _close_code(exc: ConnectionClosed) -> int:
    frame = exc.rcvd if exc.rcvd is not None else exc.sent
    return int(frame.code) if frame is not None else 1006


def classify(exc: BaseException, *, connecting: bool = False) -> Failure:
    """Map an exception to a Failure. ``connecting``: raised before the WebSocket was open (connect phase)."""
    if isinstance(exc, SessionEnded):
        return Failure(exc.failure, exc.value, exc.detail)
    if isinstance(exc, InvalidStatus):
        status = int(exc.response.status_code)
        cls = FailureClass.RATE_LIMITED if status in RATE_LIMIT_STATUSES else FailureClass.HANDSHAKE_HTTP
        return Failure(cls, status, f"HTTP {status} on the WebSocket upgrade")
    if isinstance(exc, ConnectionClosed):
        code = _close_code(exc)
        if isinstance(exc.__cause__, PayloadTooBig) or code in PROTOCOL_CLOSE_CODES:
            return Failure(FailureClass.PROTOCOL, code, f"closed with protocol error {code}: {exc}")
        return Failure(FailureClass.CLOSED_BY_PEER, code, f"closed with code {code}: {exc}")
    if isinstance(exc, socket.gaierror):
        return Failure(FailureClass.DNS, exc.errno or 0, f"name resolution failed: {exc}")
    if isinstance(exc, ConnectionRefusedError):
        return Failure(FailureClass.REFUSED, exc.errno or 0, "connection refused")
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return Failure(FailureClass.TLS, 0, f"TLS: {exc}")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        if connecting:
            return Failure(FailureClass.CONNECT_TIMEOUT, 0, "connect/handshake timed out")
        return Failure(FailureClass.STALE, 0, f"timed out: {exc}")
    if isinstance(exc, InvalidMessage | ProtocolError | InvalidHandshake | PayloadTooBig):
        # InvalidMessage: the peer closed or sent garbage during the HTTP upgrade (e.g. an early close).
        if isinstance(exc.__cause__, ssl.SSLError):
            return Failure(FailureClass.TLS, 0, f"TLS: {exc.__cause__}")
        return Failure(FailureClass.PROTOCOL, 0, f"protocol: {type(exc).__name__}: {exc}")
    if isinstance(exc, ConnectionResetError | BrokenPipeError | EOFError | ConnectionAbortedError):
        return Failure(FailureClass.CLOSED_BY_PEER, 1006, f"connection reset: {exc}")
    if isinstance(exc, InvalidURI):
        return Failure(FailureClass.OTHER, 0, f"bad URI: {exc}")
    if isinstance(exc, OSError):
        return Failure(FailureClass.OTHER, exc.errno or 0, f"{type(exc).__name__}: {exc}")
    return Failure(FailureClass.OTHER, 0, f"{type(exc).__name__}: {exc}")
