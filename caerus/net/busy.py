"""The busy-polling WebSocket client: the socket read by our own code, with the kernel's receive stamp.

:class:`BusyWsSession` is a drop-in :class:`~caerus.net.ws.WsSession` (same supervisor, failure taxonomy,
keepalive, watchdog and rotation) whose receive path skips asyncio's streams and the ``websockets`` asyncio
layer: the loop calls ``_on_readable`` when the socket has bytes (on a busy-polling loop: on the next poll), which

1. reads them with ``recvmsg`` together with the kernel's software receive stamp (``SO_TIMESTAMPING``): ``t_wire``
   is the stamp of the read that completed the message, 0 when the platform gives none;
2. decrypts them through an ``ssl.SSLObject`` over memory BIOs (the same verifying ``SSLContext``: certificate and
   host name checked as before);
3. splits the plaintext into frames (:mod:`caerus.net.wsframes`): a complete unfragmented text (ASCII) or binary
   frame's payload goes straight to ``on_message`` with ``t_recv = time.time_ns()`` taken at that moment; every
   other frame, whole and in order, to the ``websockets`` sans-I/O client protocol (ping answers, fragments, the
   close handshake, UTF-8 and ``max_size`` errors), whose data frames are delivered the same way. The protocol
   also reads the upgrade response, and only it: the splitter starts at the first byte after the response head.

Opening (TCP connect, TLS handshake, HTTP upgrade) is bounded by ``open_timeout_s`` as a whole. Every end goes
through the same :func:`~caerus.net.failures.classify`: the sans-I/O layer raises the same exceptions as the
asyncio client (``InvalidStatus``, ``ConnectionClosed`` with its close frames), socket and TLS errors are the
same built-ins. ``stack`` samples (``t_recv - t_wire``) go into a preallocated buffer after ``on_message``
returned (after the record is published, never before).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from typing import Any, Protocol
from urllib.parse import urlsplit

from websockets.client import ClientProtocol
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedError,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidURI,
)
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import OK_CLOSE_CODES, State
from websockets.uri import parse_uri

from caerus.net.failures import Failure, SessionEnded
from caerus.net.stamps import RX_ANCILLARY_SIZE, enable_rx_timestamps, rx_stamp
from caerus.net.ws import FrameErrorHandler, MessageHandler, WsSession
from caerus.net.wsframes import FrameSplitter
from caerus.wire import FailureClass

READ_SIZE = 1 << 18
_MAX_HEAD = 1 << 16  # an upgrade response head longer than this is not waited for (the protocol refuses it)
_DATA = (Opcode.TEXT, Opcode.BINARY)


class OpeningIO(Protocol):
    """What the opening awaits: an asyncio loop's socket calls (or :meth:`BusyWsSession.open_now`'s peer)."""

    async def getaddrinfo(self, host: str, port: int, *, type: int) -> list[Any]: ...
    async def sock_connect(self, sock: socket.socket, address: Any) -> None: ...
    async def sock_recv(self, sock: socket.socket, nbytes: int) -> bytes: ...
    async def sock_sendall(self, sock: socket.socket, data: bytes) -> None: ...


class Samples(Protocol):
    """A preallocated sample buffer (caerus.metrics.hdr.SampleBuffer: the feed owns it and drains it)."""

    arr: Any
    n: int
    capacity: int
    full: int


def _closed(proto: ClientProtocol) -> ConnectionClosed:
    """The exception the protocol would give once closed (OK when both close codes are normal)."""
    rcvd, sent = proto.close_rcvd, proto.close_sent
    ok = rcvd is not None and sent is not None and rcvd.code in OK_CLOSE_CODES and sent.code in OK_CLOSE_CODES
    return (ConnectionClosedOK if ok else ConnectionClosedError)(rcvd, sent, proto.close_rcvd_then_sent)


class BusyWsSession(WsSession):
    """A single-use WebSocket session read through ``recvmsg`` + ``SSLObject`` + the sans-I/O protocol."""

    def __init__(self, url: str, conn_id: int, on_message: MessageHandler, subscribe: Any = (), *,
                 ssl_context: ssl.SSLContext | None = None, open_timeout_s: float = 10.0,
                 close_timeout_s: float = 2.0, max_size: int = 1 << 20, on_error: FrameErrorHandler | None = None,
                 stack: Samples | None = None) -> None:
        super().__init__(url, conn_id, on_message, subscribe, ssl_context=ssl_context, open_timeout_s=open_timeout_s,
                         close_timeout_s=close_timeout_s, max_size=max_size, on_error=on_error)
        self.stack = stack  # t_recv - t_wire per message (None: not recorded)
        self.stamped = False  # the kernel agreed to stamp this socket
        self.no_stamp = 0  # messages delivered without a kernel stamp
        self._sock: socket.socket | None = None
        self._tls: ssl.SSLObject | None = None
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        # Every read lands in this one buffer (the MemoryBIO copies what it is given): recvmsg(READ_SIZE) made a
        # READ_SIZE bytes object per read, ~19 us more per read than recvmsg_into on an AF_UNIX pair; on the feed's
        # TCP loopback socket no difference showed, but nothing is allocated per read now.
        rx = bytearray(READ_SIZE)
        self._rx_buffers = [rx]
        self._rx_view = memoryview(rx)
        # Decrypted bytes land in this one buffer too, then are copied out at their size (a short bytes object,
        # from pymalloc). SSLObject.read(n) without a buffer allocates n bytes (256 KiB) per read and shrinks the
        # block to the record it read (at most 16 KiB): where glibc takes that block from depends on the process's
        # history, and above its mmap threshold it is mmap + mremap + munmap per read. benchmarks/tls_read: 9.2x
        # this buffer's p50 in that state (8.9 vs 0.97 us), 0.87x in the heap state
        # (+0.13 us at p50: the copy), which is the state benchmarks.feed_wire's client was in (strace: no mmap per
        # read). A flat cost is worth that: the block can also be trimmed and regrown with brk on every read.
        self._plain_buf = bytearray(READ_SIZE)
        self._plain_view = memoryview(self._plain_buf)
        self._proto: ClientProtocol | None = None
        self._ended: asyncio.Future[BaseException] | None = None
        self._fragments: list[bytes] = []
        self._pending_events: list[Any] = []  # frames that arrived with the upgrade response
        self._eof = False  # the peer's end of stream was given to the protocol
        self._head = bytearray()  # the upgrade response until its head is complete
        self._splitter: FrameSplitter | None = None  # frames, from the first byte after the response head
        self._events: list[Any] = []  # messages (bytes) and protocol events, in arrival order, not yet delivered
        self._plain: Any = self._plain_handshake  # where decrypted bytes go: the response head, then the splitter

    # -- opening ---------------------------------------------------------------------------------------------
    async def serve(self) -> Failure:
        loop = asyncio.get_running_loop()
        self._ended = loop.create_future()
        connecting = True
        try:
            await asyncio.wait_for(self._open(loop), self.open_timeout_s)
            connecting = False
            self._opened()
            for frame in self.subscribe_frames:
                self._send_text(frame)
            sock = self._sock
            assert sock is not None
            loop.add_reader(sock.fileno(), self._on_readable)
            self._on_readable()  # bytes that arrived with the upgrade response
            raise await self._ended
        except asyncio.CancelledError:
            await self._on_cancelled()
            raise
        except Exception as exc:  # every end is classified, none escapes unrecorded
            return await self._on_end(exc, connecting)

    def open_now(self, io: OpeningIO, loop: asyncio.AbstractEventLoop) -> None:
        """Open without awaiting, through ``io`` whose socket calls never suspend: a peer in this process that
        answers before each read returns (:class:`caerus.net.shadow.ShadowVenue`). The opening is serve()'s own
        (connect, TLS handshake, upgrade, every check); afterwards ``_on_readable`` reads as on a served session,
        called by its owner instead of the loop (the feed's shadow connection is never a loop reader)."""
        opening = self._open(io)
        try:
            opening.send(None)
        except StopIteration:
            pass
        else:
            opening.close()
            raise RuntimeError(f"{self.url}: the opening waited on its peer; open_now needs one that answers at once")
        self._ended = loop.create_future()
        self.opened_ns = self.last_data_ns = time.time_ns()

    async def _open(self, loop: OpeningIO) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise InvalidURI(self.url, "not a ws:// or wss:// URL")
        host = parts.hostname
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, addr = infos[0]
        sock = socket.socket(family, kind, proto)
        self._sock = sock
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stamped = enable_rx_timestamps(sock)
        await loop.sock_connect(sock, addr)
        if parts.scheme == "wss":
            ctx = self.ssl_context or ssl.create_default_context()
            self._tls = ctx.wrap_bio(self._in, self._out, server_hostname=host)
            while True:
                try:
                    self._tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    await self._flush_async(loop)
                    data = await loop.sock_recv(sock, READ_SIZE)
                    if not data:
                        raise ConnectionResetError("closed during the TLS handshake") from None
                    self._in.write(data)
            await self._flush_async(loop)
        self._proto = protocol = ClientProtocol(parse_uri(self.url), max_size=self.max_size)
        request = protocol.connect()
        request.headers["User-Agent"] = "caerus-feed"
        protocol.send_request(request)
        self._push(protocol.data_to_send())
        await self._flush_async(loop)
        while protocol.state is State.CONNECTING:
            data = await loop.sock_recv(sock, READ_SIZE)
            if not data:
                self._receive_eof()
            else:
                self._feed_plain(data)
            if protocol.handshake_exc is not None:
                raise protocol.handshake_exc
            if not data and protocol.state is State.CONNECTING:
                raise ConnectionResetError("closed during the WebSocket upgrade")
        events = protocol.events_received()
        if protocol.handshake_exc is not None:
            raise protocol.handshake_exc
        if not events or not isinstance(events[0], Response):
            raise InvalidHandshake("no upgrade response")
        self._pending_events = list(events[1:])

    # -- bytes in and out ------------------------------------------------------------------------------------
    def _feed_plain(self, data: bytes | memoryview) -> None:
        """Ciphertext (or plaintext on ws://) from the socket into the protocol."""
        proto = self._proto
        assert proto is not None
        tls = self._tls
        if tls is None:
            self._plain(bytes(data))  # the splitter slices payloads out of bytes
            return
        bio = self._in
        bio.write(data)
        read = tls.read
        plain_buf = self._plain_buf
        plain_view = self._plain_view
        while True:
            try:
                # with a buffer, read() returns the byte count (typeshed types it as the bytes it returns without)
                size: int = read(READ_SIZE, plain_buf)  # type: ignore[assignment]
            except ssl.SSLWantReadError:
                return
            except ssl.SSLZeroReturnError:  # the peer's TLS close_notify: the end of its stream
                self._receive_eof()
                return
            if not size:
                return
            self._plain(bytes(plain_view[:size]))
            if not bio.pending and not tls.pending():
                # nothing left to decrypt: return rather than read again, which would only raise SSLWantReadError
                # (~1.5 us for the exception, on every message)
                return

    def _plain_handshake(self, plain: bytes) -> None:
        """Plaintext before the upgrade response's head is complete: the protocol gets the head (and, when the
        upgrade is refused, the body it reads for the error); the frames after a 101 go to the splitter."""
        proto = self._proto
        assert proto is not None
        head = self._head
        head += plain
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > _MAX_HEAD:  # the protocol refuses an oversized head with its own error
                proto.receive_data(bytes(head))
                del head[:]
                self._plain = proto.receive_data
            return
        rest = bytes(head[end + 4:])
        proto.receive_data(bytes(head[:end + 4]))
        del head[:]
        if proto.state is State.OPEN:
            self._splitter = splitter = FrameSplitter(self.max_size, self._to_protocol)
            self._plain = self._plain_frames
            if rest:
                splitter.feed(rest, self._events)
        else:
            self._plain = proto.receive_data
            if rest:
                proto.receive_data(rest)

    def _plain_frames(self, plain: bytes) -> None:
        splitter = self._splitter
        assert splitter is not None
        splitter.feed(plain, self._events)

    def _to_protocol(self, frame: bytes) -> list[Any]:
        """Whole frames the splitter does not deliver itself, into the protocol; its events back."""
        proto = self._proto
        assert proto is not None
        proto.receive_data(frame)
        events = proto.events_received()
        if proto.state is not State.OPEN and self._splitter is not None:
            self._splitter.passthrough = True
        return events

    def _push(self, chunks: list[bytes]) -> None:
        """Protocol output through TLS into the outgoing buffer."""
        for chunk in chunks:
            if not chunk:
                continue  # the protocol's "half-close" marker: the socket is closed with the session
            if self._tls is not None:
                self._tls.write(chunk)
            else:
                self._out.write(chunk)

    async def _flush_async(self, loop: OpeningIO) -> None:
        data = self._out.read()
        if data and self._sock is not None:
            await loop.sock_sendall(self._sock, data)

    def _flush(self) -> None:
        """Send what is queued without waiting (keepalives, pongs, close frames are small). A socket that will not
        take it all ends the session: a venue that stops reading is not one to keep."""
        data = self._out.read()
        sock = self._sock
        if not data or sock is None:
            return
        try:
            sent = sock.send(data)
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            raise ConnectionResetError("the socket's send buffer is full")

    def _send_text(self, frame: bytes | str) -> None:
        proto = self._proto
        assert proto is not None
        proto.send_text(frame.encode() if isinstance(frame, str) else frame)
        self._push(proto.data_to_send())
        self._flush()

    # -- the hot path ----------------------------------------------------------------------------------------
    def _on_readable(self) -> None:
        sock, proto = self._sock, self._proto
        if sock is None or proto is None or self._ended is None or self._ended.done():
            return
        recvmsg_into = sock.recvmsg_into
        buffers = self._rx_buffers
        view = self._rx_view
        try:
            while True:
                try:
                    size, anc, _flags, _addr = recvmsg_into(buffers, RX_ANCILLARY_SIZE)
                except BlockingIOError:
                    break
                if not size:
                    self._receive_eof()
                    self._deliver(0)
                    break
                self._feed_plain(view[:size])
                self._deliver(rx_stamp(anc))
            self._push(proto.data_to_send())  # pongs, the answer to a close
            self._flush()
        except SessionEnded as exc:
            self._finish(exc)
            return
        except Exception as exc:  # socket/TLS errors: classified by serve()
            self._finish(exc)
            return
        if proto.parser_exc is not None:
            # a frame broke the protocol (too big, bad opcode, bad UTF-8): the close frame is out; like the asyncio
            # client's, the session ends with the parser's error (PROTOCOL), without waiting for the peer's answer
            closed = ConnectionClosedError(proto.close_rcvd, proto.close_sent, proto.close_rcvd_then_sent)
            closed.__cause__ = proto.parser_exc  # what the asyncio client raises: the close code (1009...) and why
            self._finish(closed)
        elif proto.state is State.CLOSED:
            self._finish(proto.close_exc)
        elif proto.close_rcvd is not None and proto.close_sent is not None:
            # Close frames both ways: the handshake is complete. A TLS server cannot half-close, so it waits for the
            # client to drop the connection (websockets' server: up to its close timeout); the session ends now.
            self._finish(_closed(proto))

    def _receive_eof(self) -> None:
        """The end of the peer's stream, once (TLS close_notify and the TCP FIN both mean it)."""
        proto = self._proto
        if proto is not None and not self._eof:
            self._eof = True
            # what was held back as incomplete is the protocol's to judge at the end of the stream
            if self._head:
                proto.receive_data(bytes(self._head))
                del self._head[:]
            if self._splitter is not None:
                rest = self._splitter.take_partial()
                if rest:
                    self._events.extend(self._to_protocol(rest))
            proto.receive_eof()

    def _deliver(self, t_wire: int) -> None:
        proto = self._proto
        assert proto is not None
        events = self._events  # reused: cleared once delivered, never reallocated per read
        late = proto.events_received()  # the end of the stream's (the rest came through the splitter, in order)
        if late:
            events += late
        if self._pending_events:
            events[:0] = self._pending_events
            self._pending_events = []
        try:
            self._deliver_events(events, t_wire)
        finally:
            events.clear()

    def _deliver_events(self, events: list[Any], t_wire: int) -> None:
        on_message = self.on_message
        tns = time.time_ns
        stack = self.stack
        for frame in events:
            if type(frame) is bytes:
                raw = frame  # a whole message the splitter took out itself
            elif not isinstance(frame, Frame):
                continue  # only the opening yields requests / responses
            elif frame.opcode in _DATA:
                if not frame.fin:
                    self._fragments = [bytes(frame.data)]
                    continue
                raw = bytes(frame.data)
            elif frame.opcode is Opcode.CONT:
                self._fragments.append(bytes(frame.data))
                if not frame.fin:
                    continue
                raw, self._fragments = b"".join(self._fragments), []
            else:
                continue  # ping (answered by the protocol), pong, close (the protocol's state says)
            t_recv = tns()
            # deliberate copy of WsSession._receive's delivery, inlined (kept in step by
            # tests/unit/net/test_net_delivery_in_step.py)
            self.t_wire = t_wire
            self.msg_count += 1
            try:
                if on_message(raw, t_recv, self):
                    self.last_data_ns = t_recv
                    self.data_count += 1
            except SessionEnded:
                raise
            except Exception as exc:  # one frame nothing anticipated must not cost the connection
                if self.on_error is None:
                    raise
                self.on_error(raw, self, exc)
            # -- after the record is out: the stack sample ------------------------------------------------
            if t_wire:
                if stack is not None:
                    if stack.n < stack.capacity:
                        stack.arr[stack.n] = t_recv - t_wire
                        stack.n += 1
                    else:
                        stack.full += 1
            else:
                self.no_stamp += 1

    def _finish(self, exc: BaseException | None) -> None:
        ended = self._ended
        if ended is not None and not ended.done():
            ended.set_result(exc if exc is not None else ConnectionResetError("connection ended"))

    # -- control ---------------------------------------------------------------------------------------------
    async def send(self, frame: bytes | str) -> None:
        """Send one frame (keepalive pings); a failure ends the session through the receive side."""
        if self._proto is None or self.failure is not None or self._proto.state is not State.OPEN:
            return
        try:
            self._send_text(frame)
        except Exception as exc:
            self._finish(exc)

    def end(self, failure: FailureClass, detail: str = "", value: int = 0) -> None:
        """Ask the session to end with this reason. STALE aborts the socket; planned ends start the close
        handshake and end when the venue answers it (or ``close_timeout_s`` later)."""
        if self._end_reason is not None or self.failure is not None:
            return
        reason = SessionEnded(failure, detail, value)
        self._end_reason = reason
        proto = self._proto
        if proto is None or self._ended is None:
            return  # still connecting: serve() raises the reason as soon as the opening returns
        if failure is FailureClass.STALE or proto.state is not State.OPEN:
            self._finish(reason)
            return
        try:
            proto.send_close(1000)
            self._push(proto.data_to_send())
            self._flush()
        except Exception:
            self._finish(reason)
            return
        loop = asyncio.get_running_loop()
        loop.call_later(self.close_timeout_s, self._finish, reason)

    async def _close(self) -> None:
        sock = self._sock
        if sock is None:
            return
        self._sock = None
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(sock.fileno())
        with contextlib.suppress(OSError):
            sock.close()

