"""One single-use TLS WebSocket session: connect, subscribe, deliver every complete message, end classified.

A session is never reused: it connects once, sends its subscribe frames, then hands each complete message to
the feed's ``on_message(raw, t_recv, session)`` with ``t_recv = time.time_ns()`` taken the moment ``websockets``
returned it. ``on_message`` returns True for a market-data message (that is what feeds the data watchdog). The
session ends exactly once, with a :class:`~caerus.net.failures.Failure`: the classified exception, or the reason
given to :meth:`WsSession.end` (stale watchdog, rotation, shutdown). Reconnecting is the supervisor's job.

Receive loop: ``recv(decode=False)`` returns text frames as bytes (msgspec decodes bytes directly, skipping a
UTF-8 decode into str). Compression is off (per-message deflate costs CPU on every frame). The library's own
ping timer is off: keepalive is per venue (the supervisor sends Hyperliquid's application ping; the library
answers Binance's protocol pings by itself) and liveness is the data watchdog's job.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Sequence

from websockets.asyncio.client import ClientConnection, connect

from caerus.net.failures import Failure, SessionEnded, classify
from caerus.wire import FailureClass

MessageHandler = Callable[[bytes, int, "WsSession"], bool]
#: called with a frame whose handler raised (anything but SessionEnded): count and drop it, or raise to end
FrameErrorHandler = Callable[[bytes, "WsSession", Exception], None]


def client_ssl_context(ca_file: str | None = None) -> ssl.SSLContext:
    """Certificate-verifying client context; ``ca_file`` adds a private CA (the emulator's), else system CAs."""
    ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class WsSession:
    """A single-use WebSocket connection delivering messages to ``on_message``."""

    def __init__(
        self,
        url: str,
        conn_id: int,
        on_message: MessageHandler,
        subscribe: Sequence[bytes | str] = (),
        *,
        ssl_context: ssl.SSLContext | None = None,
        open_timeout_s: float = 10.0,
        close_timeout_s: float = 2.0,
        max_size: int = 1 << 20,
        on_error: FrameErrorHandler | None = None,
    ) -> None:
        self.url = url
        self.conn_id = conn_id
        self.on_message = on_message
        self.on_error = on_error
        self.subscribe_frames = list(subscribe)
        self.ssl_context = ssl_context
        self.open_timeout_s = open_timeout_s
        self.close_timeout_s = close_timeout_s
        self.max_size = max_size
        self.ws: ClientConnection | None = None
        self.created_ns = time.time_ns()
        self.opened_ns = 0  # WebSocket open (0 until then)
        self.last_data_ns = 0  # t_recv of the newest data message (the watchdog reads it)
        self.data_count = 0
        self.msg_count = 0
        # kernel receive stamp of the bytes that completed the newest message; this client never sees the socket,
        # so always 0 here (caerus.net.busy sets it per message). Feeds copy it into the book record.
        self.t_wire = 0
        self.last_seq = 0  # venue order key of the newest data message (Binance u / Hyperliquid time)
        self.subscribed = False  # the venue acknowledged the subscription
        self.bad_frames = 0  # unparseable frames on this connection (the feed decides when that is too many)
        self.failure: Failure | None = None
        self._end_reason: SessionEnded | None = None
        self._close_task: asyncio.Task | None = None  # kept referenced until done

    @property
    def done(self) -> bool:
        return self.failure is not None

    @property
    def ending(self) -> bool:
        """An end was requested (or happened): the supervisor must not act on this session again."""
        return self._end_reason is not None or self.failure is not None

    async def serve(self) -> Failure:
        """Connect, subscribe and deliver until the session ends; returns (and keeps) how it ended."""
        connecting = True
        try:
            self.ws = await connect(
                self.url,
                ssl=self.ssl_context if self.url.startswith("wss:") else None,
                open_timeout=self.open_timeout_s,
                close_timeout=self.close_timeout_s,
                ping_interval=None,
                ping_timeout=None,
                compression=None,
                max_size=self.max_size,
                proxy=None,
                user_agent_header="caerus-feed",
            )
            connecting = False
            self._opened()
            for frame in self.subscribe_frames:
                await self.ws.send(frame, text=True)  # venues expect JSON in text frames, even from bytes
            await self._receive(self.ws)
            raise SessionEnded(FailureClass.OTHER, "receive loop returned")  # unreachable: recv raises on close
        except asyncio.CancelledError:
            await self._on_cancelled()
            raise
        except Exception as exc:  # every end is classified, none escapes unrecorded
            return await self._on_end(exc, connecting)

    def _opened(self) -> None:
        """The connection is open: start the watchdog's clock; an end requested while opening happens now."""
        self.opened_ns = time.time_ns()
        self.last_data_ns = self.opened_ns  # the watchdog's clock starts at open
        if self._end_reason is not None:
            raise self._end_reason

    async def _on_cancelled(self) -> None:
        """The session was cancelled (our own stop): SHUTDOWN, and the connection closed."""
        self.failure = Failure(FailureClass.SHUTDOWN, 0, "cancelled")
        await self._close()

    async def _on_end(self, exc: Exception, connecting: bool) -> Failure:
        """The session ended: classify why (the reason :meth:`end` recorded, else ``exc``), close, return it."""
        reason = self._end_reason
        self.failure = classify(reason if reason is not None else exc, connecting=connecting)
        await self._close()
        return self.failure

    async def _receive(self, ws: ClientConnection) -> None:
        # The hot loop: nothing between recv returning and on_message but the timestamp.
        recv = ws.recv
        on_message = self.on_message
        time_ns = time.time_ns
        on_error = self.on_error
        while True:
            raw = await recv(decode=False)
            t_recv = time_ns()
            # BusyWsSession._deliver_events holds a deliberate copy of this delivery (kept in step by
            # tests/unit/net/test_net_delivery_in_step.py)
            self.msg_count += 1
            try:  # free in 3.11 unless it raises
                if on_message(raw, t_recv, self):
                    self.last_data_ns = t_recv
                    self.data_count += 1
            except SessionEnded:
                raise
            except Exception as exc:  # one frame nothing anticipated must not cost the connection
                if on_error is None:
                    raise
                on_error(raw, self, exc)

    async def send(self, frame: bytes | str) -> None:
        """Send one frame (keepalive pings); a failure here shows up in the receive loop as the close."""
        ws = self.ws
        if ws is not None and self.failure is None:
            try:
                await ws.send(frame, text=True)
            except Exception:  # the receive side classifies the end
                pass

    def end(self, failure: FailureClass, detail: str = "", value: int = 0) -> None:
        """Ask the session to end with this reason (watchdog, rotation, shutdown). Returns at once.

        A STALE connection is aborted (a dead path would make the close handshake wait ``close_timeout_s``
        before the replacement can start); planned ends close with a proper close handshake.
        """
        if self._end_reason is None and self.failure is None:
            self._end_reason = SessionEnded(failure, detail, value)
            ws = self.ws
            if ws is None:
                return  # still connecting: serve() raises the reason as soon as the handshake returns
            if failure is FailureClass.STALE:
                ws.transport.abort()  # the pending recv raises ConnectionClosed at once
            else:
                # Closing makes the pending recv raise ConnectionClosed; serve() then reports our reason.
                self._close_task = asyncio.get_running_loop().create_task(ws.close())

    async def _close(self) -> None:
        ws = self.ws
        if ws is not None:
            try:
                await asyncio.wait_for(ws.close(), self.close_timeout_s + 1.0)
            except Exception:  # best effort on a connection that already ended
                pass
