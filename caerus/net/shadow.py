"""The busy client's shadow connection: a second session in the feed's own process, fed synthetic frames, so the
receive path (read and stamp, TLS decryption, frame split, delivery, the venue's decode) stays warm between real
messages. The feed-side twin of the strategy's shadow orders.

``benchmarks.rx_idle`` measured why: after ~10 ms of idle the busy client's path from the socket to the callback
ran 7.0 / 35.8 us (p50 / p99) cold against 6.4 / 12.0 us when a shadow read a record every 100 us of the gap.

:class:`ShadowVenue` is the venue's end, in this process: a loopback listener and its one accepted socket, a TLS
server over memory BIOs with a certificate trustme makes at start (trusted by the shadow's client only), and
websockets' sans-I/O server for the upgrade. It answers each of the client's reads before the read returns, so
:meth:`caerus.net.busy.BusyWsSession.open_now` runs the session's own opening (connect, handshake, upgrade, every
check) without an event loop turn. After that it sends pre-encrypted TLS records, one WebSocket frame each: a read
costs the client exactly what a venue's record costs, and the venue's side one ``send``.

:class:`ShadowConnection` pairs the two; :meth:`ShadowConnection.read_one` is one rehearsal. Nothing it delivers
reaches a book or a ring: its session's handler is the sink's ``rehearse``, not ``on_message``.

The listener is on loopback for the moment of the opening, where any local process can connect to it (its port is
in ``/proc/net/tcp``). It keeps accepting until its own client arrives -- matched by the client socket's address,
which no other process can hold -- closing every other connection unread and counting it (``intruders``), and
gives up only at ``OWN_CLIENT_DEADLINE_S`` (:class:`ShadowClientMissing`). Accepting once let an intruder that
connected first end the feed at start (issue 44).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import time
from collections.abc import Iterator, Sequence
from typing import Any

import trustme
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from caerus.net.busy import READ_SIZE, BusyWsSession
from caerus.net.ws import MessageHandler

HOST = "localhost"  # the name on the shadow's certificate and in its URL (resolved by getaddrinfo: loopback)
PATH = "/shadow"
ANSWER_TIMEOUT_S = 5.0  # bound on every wait of the opening (the peer is in this process: it answers at once)
# How long the listener waits for its own client, accepting and closing others meanwhile. The client has connected
# before the listener accepts (its connect() returned): only intruders queued ahead of it, or a SYN the kernel
# dropped from a queue they filled (retried after 1 s, then 3 s), stand between.
OWN_CLIENT_DEADLINE_S = 5.0


class ShadowClientMissing(ConnectionError):
    """The shadow venue's own client did not reach its listener by the deadline."""
RECORDS_PER_BATCH = 256  # records encrypted at a time (TLS records carry sequence numbers: made in order)


@contextlib.contextmanager
def _bounded(sock: socket.socket) -> Iterator[None]:
    """``sock`` blocking inside, each call for at most ANSWER_TIMEOUT_S; non-blocking again after (the session's
    mode)."""
    sock.settimeout(ANSWER_TIMEOUT_S)
    try:
        yield
    finally:
        sock.setblocking(False)


class ShadowVenue:
    """The venue's end of a shadow connection (see the module docstring); also the opening's I/O."""

    def __init__(self, frames: Sequence[bytes], own_client_deadline_s: float = OWN_CLIENT_DEADLINE_S) -> None:
        if not frames:
            raise ValueError("a shadow venue needs at least one frame to send")
        self._frames = [Frame(Opcode.TEXT, f).serialize(mask=False) for f in frames]
        self._next_frame = 0
        self._records: list[bytes] = []
        ca = trustme.CA()
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(HOST).configure_cert(server_ctx)
        # the shadow's CA only (no system roots), certificate and host name verified as on a venue's connection
        self.client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ca.configure_trust(self.client_context)
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._tls = server_ctx.wrap_bio(self._in, self._out, server_side=True)
        self._handshaken = False
        self._proto = ServerProtocol()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"wss://{HOST}:{self._listener.getsockname()[1]}{PATH}"
        self._sock: socket.socket | None = None
        self.sent = 0
        self.own_client_deadline_s = own_client_deadline_s
        self.intruders = 0  # other connections the listener accepted and closed unread before its own client

    # -- the opening's I/O: the client's socket calls, each answered before it returns --------------------------
    async def getaddrinfo(self, host: str, port: int, *, type: int) -> list[Any]:
        return [(socket.AF_INET, type, socket.IPPROTO_TCP, "", ("127.0.0.1", port))]

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        with _bounded(sock):
            sock.connect(address)
        own = sock.getsockname()
        deadline = time.monotonic() + self.own_client_deadline_s
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                self._listener.settimeout(left)
                peer, peer_addr = self._listener.accept()
            except TimeoutError:
                self._listener.close()
                raise ShadowClientMissing(
                    f"the shadow venue's own client did not reach its listener within {self.own_client_deadline_s} s "
                    f"(OWN_CLIENT_DEADLINE_S); {self.intruders} other connection(s) refused meanwhile") from None
            if peer_addr == own:
                break
            peer.close()  # another local process: never read its bytes, and keep waiting for our own client
            self.intruders += 1
        self._listener.close()
        self._sock = peer
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.settimeout(ANSWER_TIMEOUT_S)

    async def sock_sendall(self, sock: socket.socket, data: bytes) -> None:
        with _bounded(sock):
            sock.sendall(data)

    async def sock_recv(self, sock: socket.socket, nbytes: int) -> bytes:
        self._answer()
        readable, _, _ = select.select([sock], [], [], ANSWER_TIMEOUT_S)
        if not readable:
            raise TimeoutError(f"the shadow venue did not answer within {ANSWER_TIMEOUT_S} s")
        return sock.recv(nbytes)

    def _answer(self) -> None:
        """Read what the client sent (all of it is in the socket: it was sent before this read), then reply."""
        sock = self._sock
        assert sock is not None
        sock.setblocking(False)
        try:
            while True:
                try:
                    data = sock.recv(READ_SIZE)
                except BlockingIOError:
                    break
                if not data:
                    raise ConnectionResetError("the shadow's client closed during the opening")
                self._in.write(data)
        finally:
            sock.settimeout(ANSWER_TIMEOUT_S)
        if not self._handshaken:
            try:
                self._tls.do_handshake()
                self._handshaken = True
            except ssl.SSLWantReadError:
                pass
        if self._handshaken:
            while True:
                try:
                    plain = self._tls.read(READ_SIZE)
                except ssl.SSLWantReadError:
                    break
                if not plain:
                    break
                self._proto.receive_data(plain)
            for event in self._proto.events_received():
                if isinstance(event, Request):  # the upgrade (nothing else comes: the client sends no frames)
                    self._proto.send_response(self._proto.accept(event))
            for chunk in self._proto.data_to_send():
                self._tls.write(chunk)
        out = self._out.read()
        if out:
            sock.sendall(out)

    # -- after the opening ---------------------------------------------------------------------------------------
    def send_next(self) -> None:
        """One record (the next frame, cycling) into the client's socket."""
        if not self._records:
            for _ in range(RECORDS_PER_BATCH):
                self._tls.write(self._frames[self._next_frame])
                self._records.append(self._out.read())
                self._next_frame = (self._next_frame + 1) % len(self._frames)
            self._records.reverse()  # popped from the end: in TLS sequence order
        sock = self._sock
        assert sock is not None
        sock.sendall(self._records.pop())
        self.sent += 1

    def close(self) -> None:
        self._listener.close()
        if self._sock is not None:
            self._sock.close()


class ShadowConnection:
    """A busy-client session opened on a :class:`ShadowVenue` in this process, delivering to ``on_message``."""

    def __init__(self, frames: Sequence[bytes], on_message: MessageHandler,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.venue = ShadowVenue(frames)
        self.session = BusyWsSession(self.venue.url, 0, on_message, ssl_context=self.venue.client_context)
        try:
            self.session.open_now(self.venue, loop)
        except BaseException:
            self.close()
            raise
        self.reads = 0

    def read_one(self) -> None:
        """One rehearsal: the venue sends a record, the session reads it as it reads a real one (from the socket,
        through TLS and the frame split, to the handler)."""
        self.venue.send_next()
        self.session._on_readable()
        self.reads += 1
        ended = self.session._ended
        if ended is not None and ended.done():
            raise ConnectionError(f"the shadow connection ended: {ended.result()!r}")

    def close(self) -> None:
        sock = self.session._sock
        if sock is not None:
            self.session._sock = None
            sock.close()
        self.venue.close()
