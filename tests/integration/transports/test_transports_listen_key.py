"""The Binance listen key is part of the user-data stream's URL and a credential in its own right (it reads the
account's order events): over a real TLS WebSocket on loopback whose server drops the user-data stream, every log
line, error and summary that names that URL shows it redacted, and the key itself appears nowhere (issue 26)."""

from __future__ import annotations

import json
import logging
import sys
import time

import pytest

from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.credentials import REDACTED
from caerus.venues.binance import SPEC as BINANCE
from caerus.venues.binance.execution import USER_STREAM_PATH
from tests.fixtures.common import free_port
from tests.fixtures.transports_orders import OrderServer

pytestmark = pytest.mark.integration

WAIT_S = 20.0  # one reconnect waits out the connection bucket (10 a minute, burst 2): about 6 s


def _wait(what: str, done, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout_s:g} s")
        time.sleep(0.01)


def test_the_listen_key_is_redacted_from_every_reconnect_and_connection_lost_line(
        order_server: OrderServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)  # everything of the client side, websockets' frame logger included
    # the test venue's own server logs its requests at DEBUG (the key is in its request line): that is the venue
    caplog.set_level(logging.INFO, logger="websockets.server")
    stderr = logging.StreamHandler(sys.stderr)  # as a process logging to its terminal would print them
    stderr.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    logging.getLogger("caerus").addHandler(stderr)
    t = make_live_transport(BINANCE, network="testnet",
                            credentials=load_credentials(BINANCE, order_server.creds_file), enable_live=True,
                            url=order_server.binance_url, ca_file=order_server.ca_file)
    try:
        t.start()
        user = t._user
        assert user is not None
        key = user.url.rpartition(USER_STREAM_PATH)[2]
        assert len(key) >= 16 and key not in order_server.base
        _wait("the user-data stream's connection", lambda: len(order_server.user_streams) == 1)
        # 1. the venue drops the stream: lost, then reconnected to the same key's URL
        order_server.user_streams[0].close(code=1001)
        _wait("the user-data stream's reconnect", lambda: user.reconnects == 1)
        # 2. dropped again while its host has gone away: lost, then a reconnect that fails (its error names the URL)
        dead = f"wss://127.0.0.1:{free_port()}{USER_STREAM_PATH}{key}"
        user.set_url(dead, url_secret=key)
        _wait("the second user-data connection", lambda: len(order_server.user_streams) == 2)
        order_server.user_streams[1].close(code=1001)
        _wait("the failed reconnect's log line", lambda: "reconnect failed" in caplog.text)
        shown = json.dumps(t.summary()) + repr(t) + user.shown_url
    finally:
        t.close()
        logging.getLogger("caerus").removeHandler(stderr)
    err = capfd.readouterr().err
    host = order_server.base
    # the lines are there, each with the URL's key replaced by the marker...
    assert f"binance-user: order-entry connection open to {host}{USER_STREAM_PATH}{REDACTED}" in caplog.text
    assert f"binance-user: order-entry connection to {host}{USER_STREAM_PATH}{REDACTED} lost" in caplog.text
    assert f"binance-user: reconnected to {host}{USER_STREAM_PATH}{REDACTED}" in caplog.text
    assert f"cannot connect to {dead.replace(key, REDACTED)}: ConnectionRefusedError" in caplog.text
    assert f"{USER_STREAM_PATH}{REDACTED} lost" in err and "reconnect failed" in err
    # ... and the key itself in none of them, nor in the summary, the repr or the shown URL
    for text in (caplog.text, err, shown, *(r.getMessage() for r in caplog.records)):
        assert key not in text


def test_an_unexpected_handshake_error_is_a_failed_connect_with_the_key_redacted(tls_ws_server,
                                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                                 ) -> None:
    """Whatever a venue makes the handshake raise is a failed connect (retried with back-off), never an exception
    that ends the reader thread; its message carries the URL's secret redacted."""
    from caerus.venuekit import order_session as live

    async def silent(ws) -> None:
        await ws.wait_closed()

    srv = tls_ws_server(silent)
    secret = "LISTENKEY" + "x" * 40

    def odd_handshake(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"unexpected answer to {args[0]}")

    monkeypatch.setattr(live, "connect", odd_handshake)
    session = live.WsOrderSession(f"{srv.url}/ws/{secret}", ca_file=srv.ca_file, name="odd",
                                  on_message=lambda msg, t: None, on_disconnect=lambda: None, open_timeout=5.0)
    session.set_url(f"{srv.url}/ws/{secret}", secret)
    with pytest.raises(live.LiveTransportError) as info:
        session._connect()
    assert "RuntimeError: unexpected answer to" in str(info.value)
    assert secret not in str(info.value) and REDACTED in str(info.value)
