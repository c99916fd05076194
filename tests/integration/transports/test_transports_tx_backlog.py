"""Transmit stamps of sends with no order attached do not crowd out an order's (issue 26): over a real TLS
WebSocket on loopback, the engine's idle work drains the order socket's error queue whether or not an order awaits
its stamp, so after hundreds of position checks the next order still gets its ``t_wire_out``; the Binance
user-data socket (nothing sent on it is an order) feeds no error queue at all."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

from caerus.execution.books import LatestBooks
from caerus.execution.config import RiskConfig
from caerus.execution.credentials import load_credentials
from caerus.execution.engine import Engine
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.live import make_live_transport
from caerus.venues.binance import SPEC as BINANCE
from caerus.wire import Venue
from tests.fixtures.pipeline import make_book
from tests.fixtures.transports_orders import OrderServer
from tests.kit import records
from tests.kit.rings import order_ring

pytestmark = pytest.mark.integration

UNTAGGED = 240  # past the ~157 stamps a fresh connection's receive buffer holds on the error queue
# A stamp takes ~830 bytes of the receive buffer (157 in the default 128 KiB), which autotuning grows on a busy
# connection: sending receive-buffer / 256 untagged frames overflows whatever the buffer has grown to.
STAMP_BYTES_AT_MOST = 256
WAIT_S = 10.0


def _error_queue_backlog(sock: socket.socket) -> int:
    """How many messages wait on ``sock``'s error queue (read off through a second handle, so emptied)."""
    dup = socket.socket(fileno=socket.dup(sock.fileno()))
    n = 0
    try:
        while n < 100_000:
            try:
                dup.recvmsg(1, 512, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            n += 1
    finally:
        dup.close()
    return n


def _socket_of(session: Any) -> socket.socket:
    ws = session._ws
    assert ws is not None, "the session is not connected"
    return ws.socket


def test_an_order_after_hundreds_of_untagged_sends_keeps_its_wire_out_stamp(order_server: OrderServer,
                                                                           shm_dir: Path) -> None:
    engine: Engine | None = None

    def on_reply(reply: Any) -> None:
        assert engine is not None
        engine.on_reply(reply)

    transport = make_live_transport(BINANCE, network="testnet",
                                    credentials=load_credentials(BINANCE, order_server.creds_file),
                                    enable_live=True, url=order_server.binance_url, ca_file=order_server.ca_file,
                                    on_reply=on_reply)
    books = LatestBooks()
    books.put(make_book(Venue.BINANCE, 99_990.0, 100_000.0, time.time_ns()))
    consumer, producer = order_ring("txb.orders", 8)
    engine = Engine(consumer, transport, RiskChecker(RiskConfig(price_band_bps=500.0), books), books)
    try:
        transport.start()
        if transport.stats()["tx_unavailable"]:
            pytest.fail("this kernel refused SO_TIMESTAMPING on the order socket: the test cannot run")
        # Position checks (signed requests, each answered), as the position watch sends them between orders, then
        # keepalive pings; the engine idles in between, as it does in a session.
        for _ in range(50):
            transport.venue_state(WAIT_S)
            engine.idle_work(time.time_ns())
        order_sock = _socket_of(transport._session)
        untagged = max(UNTAGGED, order_sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // STAMP_BYTES_AT_MOST)
        for _ in range(untagged):
            assert transport._session._ws is not None
            transport._session._ws.ping().wait(WAIT_S)
            engine.idle_work(time.time_ns())
        # the user-data socket: pings and pongs are sent on it, and none of them may queue a stamp
        user = transport._user
        assert user is not None
        for _ in range(UNTAGGED):
            assert user._ws is not None
            user._ws.ping().wait(WAIT_S)
        assert _error_queue_backlog(_socket_of(user)) == 0

        now = time.time_ns()
        assert producer.try_push(*records.order(7, venue=Venue.BINANCE, px=100_000.0, qty=0.001, t_decision=now,
                                                trigger_t_recv=now, seq=1))
        assert engine.step()
        deadline = time.monotonic() + WAIT_S
        while (engine.tx_stamped + engine.tx_missing == 0 or engine.pending) and time.monotonic() < deadline:
            engine.idle_work(time.time_ns())
            time.sleep(0.002)
        engine.idle_work(time.time_ns())
        stats = transport.stats()
        order_backlog = _error_queue_backlog(_socket_of(transport._session))
    finally:
        transport.close()
        producer.close()
        consumer.close(unlink=True)
    assert (engine.tx_stamped, engine.tx_missing) == (1, 0), stats
    assert engine.decision_to_wire_out.n == 1 and engine.pickup_to_wire_out.n == 1
    # every position check's stamp was read and discarded, counted apart from the order's
    assert stats["tx_stamps"] == 1 and stats["tx_untagged"] >= 50 + untagged, stats
    assert order_backlog == 0  # idle work left nothing behind on the order socket's error queue
