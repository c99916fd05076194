"""The busy client's shadow connection (caerus.net.shadow): a real loopback TCP socket and a real TLS server in this
process, opened through BusyWsSession's own opening without an event loop turn."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.protocol import State

from caerus.net.busy import BusyWsSession
from caerus.net.shadow import RECORDS_PER_BATCH, ShadowClientMissing, ShadowConnection, ShadowVenue


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_shadow_opens_verified_and_delivers_every_frame_in_order_across_batches(loop) -> None:
    got: list[tuple[bytes, int]] = []
    frames = [b'{"k":%d}' % k for k in range(5)]
    shadow = ShadowConnection(frames, lambda raw, t, s: got.append((raw, s.t_wire)) or True, loop)
    try:
        s = shadow.session
        assert s._proto is not None and s._proto.state is State.OPEN
        assert s._tls is not None and s._tls.version() is not None  # TLS, negotiated (not plaintext)
        n = RECORDS_PER_BATCH + 7  # past one batch of pre-encrypted records
        for _ in range(n):
            shadow.read_one()
        assert [raw for raw, _ in got] == [frames[k % 5] for k in range(n)]
        assert shadow.reads == n == shadow.venue.sent
        assert s.no_stamp == sum(1 for _, t_wire in got if not t_wire)
        if s.stamped:
            # the kernel's receive stamp, as on a venue's socket. The kernel turns stamping on for the whole stack
            # through deferred work when the first socket asks: the first reads after that may come unstamped.
            for _ in range(10_000):
                if got[-1][1]:
                    break
                shadow.read_one()
            assert got[-1][1] > 0
            first = len(got)
            for _ in range(20):
                shadow.read_one()
            assert all(t_wire > 0 for _, t_wire in got[first:])
    finally:
        shadow.close()


def test_the_shadow_client_trusts_the_shadow_ca_alone_and_verifies() -> None:
    ctx = ShadowVenue([b"{}"])
    try:
        c = ctx.client_context
        assert c.verify_mode is ssl.CERT_REQUIRED and c.check_hostname
        assert len(c.get_ca_certs()) == 1  # no system roots: only the certificate trustme made for this shadow
    finally:
        ctx.close()


def test_the_client_verifies_the_shadow_certificate(loop) -> None:
    """The opening is the session's own: a client that does not trust the shadow's CA refuses it."""
    venue = ShadowVenue([b"{}"])
    session = BusyWsSession(venue.url, 0, lambda *a: True, ssl_context=ssl.create_default_context())
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            session.open_now(venue, loop)
    finally:
        if session._sock is not None:
            session._sock.close()
        venue.close()


class _Suspending(ShadowVenue):
    """A peer whose read waits on the loop: open_now must refuse it rather than block or lose the opening."""

    async def sock_recv(self, sock: socket.socket, nbytes: int) -> bytes:
        await asyncio.sleep(0)
        return await super().sock_recv(sock, nbytes)


def test_open_now_refuses_a_peer_that_would_wait(loop) -> None:
    venue = _Suspending([b"{}"])
    session = BusyWsSession(venue.url, 0, lambda *a: True, ssl_context=venue.client_context)
    try:
        with pytest.raises(RuntimeError, match="waited on its peer"):
            session.open_now(venue, loop)
        assert session._ended is None  # not opened
    finally:
        if session._sock is not None:
            session._sock.close()
        venue.close()


def test_a_broken_shadow_says_so(loop) -> None:
    shadow = ShadowConnection([b"{}"], lambda *a: True, loop)
    try:
        shadow.read_one()
        sock: Any = shadow.venue._sock
        sock.sendall(b"\x17\x03\x03\x00\x05garbage")  # a TLS record the client cannot decrypt
        shadow.session._on_readable()
        with pytest.raises(ConnectionError, match="shadow connection ended"):
            shadow.read_one()
    finally:
        shadow.close()


def _closed_without_a_byte(c: socket.socket) -> bool:
    try:
        return c.recv(4096) == b""
    except ConnectionResetError:
        return True


def _port(venue: ShadowVenue) -> int:
    return int(venue.url.rsplit(":", 1)[1].split("/")[0])


def test_intruders_that_connect_first_are_closed_unread_and_the_shadow_still_opens(loop) -> None:
    """Issue 44: the listener accepted once, so a local process that connected first ended the feed at start.
    Now every connection ahead of the shadow's own client is closed unread and counted, and the shadow opens."""
    venue = ShadowVenue([b'{"k":1}'])
    intruders = [socket.create_connection(("127.0.0.1", _port(venue)), timeout=5) for _ in range(3)]
    intruders[0].sendall(b"GET /shadow HTTP/1.1\r\nHost: localhost\r\n\r\n")  # never read
    got: list[bytes] = []
    session = BusyWsSession(venue.url, 0, lambda raw, t, s: got.append(raw) or True,
                            ssl_context=venue.client_context)
    try:
        session.open_now(venue, loop)
        assert session._proto is not None and session._proto.state is State.OPEN
        assert venue.intruders == 3
        for c in intruders:  # closed by the venue, nothing sent to them (unread bytes make the close a reset)
            assert _closed_without_a_byte(c)
        venue.send_next()
        session._on_readable()
        assert got == [b'{"k":1}']
    finally:
        for c in intruders:
            c.close()
        if session._sock is not None:
            session._sock.close()
        venue.close()


def test_the_listener_gives_up_on_its_own_client_only_at_its_deadline(loop) -> None:
    """Its own client never arrives (connected elsewhere): the one error, named, after the deadline, with the
    intruders it closed meanwhile counted."""
    venue = ShadowVenue([b"{}"], own_client_deadline_s=0.5)
    intruder = socket.create_connection(("127.0.0.1", _port(venue)), timeout=5)
    elsewhere = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    try:
        with pytest.raises(ShadowClientMissing, match=r"within 0.5 s \(OWN_CLIENT_DEADLINE_S\); 1 other"):
            loop.run_until_complete(venue.sock_connect(client, elsewhere.getsockname()))
        assert venue.intruders == 1
    finally:
        for s_ in (intruder, elsewhere, client):
            s_.close()
        venue.close()
