"""Kernel transmit stamps of a real TCP connection on loopback: every tagged send gets its own stamp, in the
window the send happened, and untagged writes in between do not shift the matching."""

from __future__ import annotations

import fcntl
import os
import socket
import time

import pytest

from caerus.net.stamps import TxStamps, stream_length

pytestmark = pytest.mark.integration


def _pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    srv = socket.create_server(("127.0.0.1", 0))
    cli = socket.create_connection(srv.getsockname(), timeout=5)
    peer, _ = srv.accept()
    return srv, cli, peer


def _take_all(tx: TxStamps, want: int, timeout_s: float = 5.0) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got += tx.take()
        if len(got) < want:
            time.sleep(0.001)
    return got


def test_each_tagged_send_gets_its_own_stamp_and_untagged_ones_do_not_shift_it() -> None:
    srv, cli, peer = _pair()
    try:
        cli.sendall(b"before the stamps were asked for: never reported")
        cli.settimeout(None)  # a blocking socket, as the TLS layer's is: attaching must not make it non-blocking
        flags = fcntl.fcntl(cli.fileno(), fcntl.F_GETFL)
        tx = TxStamps(cli)
        tx.take()
        assert fcntl.fcntl(cli.fileno(), fcntl.F_GETFL) == flags and not flags & os.O_NONBLOCK
        windows: dict[int, tuple[int, int]] = {}
        for tag, size in enumerate((1, 100, 1500, 70_000, 3, 4096), start=10):
            t0 = time.time_ns()
            cli.sendall(b"x" * size)
            t1 = time.time_ns()
            tx.sent(tag)
            windows[tag] = (t0, t1)
            if tag == 12:
                cli.sendall(b"an untagged write between two tagged ones (a keepalive ping)")
        got = dict(_take_all(tx, len(windows)))
        assert set(got) == set(windows), (got, tx.untagged)
        for tag, (t0, t1) in windows.items():
            # the last byte left after the send began; a send of 70 kB may return before it left (queued)
            assert got[tag] >= t0, tag
            if tag != 13:
                assert got[tag] <= t1 + 1_000_000_000, tag
        assert tx.stamps == len(windows) and tx.pending == 0 and tx.untagged >= 1
        assert stream_length(cli) > 70_000
    finally:
        for s in (cli, peer, srv):
            s.close()


def test_a_closed_connection_leaves_pending_sends_unstamped_and_take_does_not_raise() -> None:
    srv, cli, peer = _pair()
    tx = TxStamps(cli)
    try:
        cli.sendall(b"order")
        tx.sent(1)
        assert [tag for tag, _ in _take_all(tx, 1)] == [1]
        peer.close()
        cli.close()
        assert tx.take() == []  # our own handle still works; nothing more to read
        assert tx.forget() == 0
    finally:
        tx.close()
        srv.close()


def test_untagged_sends_drained_in_idle_time_leave_room_for_the_next_tagged_one() -> None:
    """Far more untagged sends than the error queue holds (~157 stamps in a default receive buffer), drained the way
    the engine's idle work drains them: the tagged send after them still gets its stamp, the rest are counted."""
    srv, cli, peer = _pair()
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the order connection: one segment per send
    tx = TxStamps(cli)
    try:
        peer.settimeout(5)
        for i in range(600):
            cli.sendall(b"ping")
            assert peer.recv(16) == b"ping"  # delivered before the next: no two sends share a segment (autocork)
            if i % 50 == 49:
                assert tx.take() == []  # nothing tagged yet: every stamp read is discarded
        cli.sendall(b"order")
        tx.sent(99)
        got = _take_all(tx, 1)
        assert [tag for tag, _ in got] == [99], (tx.untagged, tx.lost)
        assert tx.untagged > 550 and tx.drains >= 11 and tx.stamps == 1, (tx.untagged, tx.drains)
        assert tx.take() == [] and tx.pending == 0
    finally:
        tx.close()
        for s in (cli, peer, srv):
            s.close()
