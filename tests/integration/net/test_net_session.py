"""One WebSocket session against real TLS servers on loopback: every way it can end is classified."""

from __future__ import annotations

import asyncio
from pathlib import Path

import trustme
from websockets.asyncio.server import ServerConnection

from caerus.net.failures import Failure
from caerus.net.ws import WsSession, client_ssl_context
from caerus.wire import FailureClass
from tests.fixtures.common import free_port


def run_session(url: str, ca_file: str | None, *, on_message=None, subscribe=(), open_timeout: float = 5.0,
                max_size: int = 1 << 20, end_after: tuple[float, FailureClass] | None = None,
                on_error=None) -> WsSession:
    got: list[bytes] = []

    def default(raw: bytes, t_recv: int, s: WsSession) -> bool:
        got.append(raw)
        return True

    async def main() -> WsSession:
        s = WsSession(url, 1, on_message or default, subscribe, ssl_context=client_ssl_context(ca_file),
                      open_timeout_s=open_timeout, close_timeout_s=1.0, max_size=max_size, on_error=on_error)
        task = asyncio.create_task(s.serve())
        if end_after is not None:
            await asyncio.sleep(end_after[0])
            s.end(end_after[1], "test")
        f = await asyncio.wait_for(task, 20)
        assert f is s.failure
        return s

    s = asyncio.run(main())
    s.received = got  # type: ignore[attr-defined]
    return s


def failure_of(s: WsSession) -> Failure:
    assert s.failure is not None
    return s.failure


def test_refused() -> None:
    s = run_session(f"wss://127.0.0.1:{free_port()}/ws", None)
    assert failure_of(s).cls is FailureClass.REFUSED


def test_dns_failure() -> None:
    s = run_session("wss://venue.invalid/ws", None)
    assert failure_of(s).cls is FailureClass.DNS


def test_connect_timeout(silent_tcp_listener: int) -> None:
    s = run_session(f"wss://127.0.0.1:{silent_tcp_listener}/ws", None, open_timeout=0.5)
    assert failure_of(s).cls is FailureClass.CONNECT_TIMEOUT


async def _echo_forever(ws: ServerConnection) -> None:
    async for _ in ws:
        pass


def test_untrusted_certificate_is_tls(tls_ws_server, tmp_path: Path) -> None:
    srv = tls_ws_server(_echo_forever)
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    s = run_session(srv.url + "/ws", str(other))
    f = failure_of(s)
    assert f.cls is FailureClass.TLS and "certificate" in f.detail.lower()
    assert srv.connections == []


def test_http_status_on_upgrade(tls_ws_server) -> None:
    def reject(conn, request):
        return conn.respond(429 if request.path == "/limited" else 503, "no\n")

    srv = tls_ws_server(_echo_forever, process_request=reject)
    limited = failure_of(run_session(srv.url + "/limited", srv.ca_file))
    busy = failure_of(run_session(srv.url + "/ws", srv.ca_file))
    assert (limited.cls, limited.value) == (FailureClass.RATE_LIMITED, 429)
    assert (busy.cls, busy.value) == (FailureClass.HANDSHAKE_HTTP, 503)


def test_closed_by_peer_with_code_after_subscribe(tls_ws_server) -> None:
    async def handler(ws: ServerConnection) -> None:
        sub = await ws.recv()
        await ws.send(f'{{"echo":{sub}}}')
        await ws.send("second")
        await ws.close(1001, "going away")

    srv = tls_ws_server(handler)
    s = run_session(srv.url + "/ws", srv.ca_file, subscribe=['{"method":"SUBSCRIBE"}'])
    f = failure_of(s)
    assert (f.cls, f.value) == (FailureClass.CLOSED_BY_PEER, 1001)
    assert s.received == [b'{"echo":{"method":"SUBSCRIBE"}}', b"second"]  # type: ignore[attr-defined]
    assert s.data_count == 2 and s.last_data_ns >= s.opened_ns > 0


def test_abrupt_drop_is_closed_by_peer_1006(tls_ws_server) -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send("x")
        ws.transport.abort()

    srv = tls_ws_server(handler)
    f = failure_of(run_session(srv.url + "/ws", srv.ca_file))
    assert (f.cls, f.value) == (FailureClass.CLOSED_BY_PEER, 1006)


def test_oversized_message_is_protocol_1009(tls_ws_server) -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send("y" * 5000)
        await _echo_forever(ws)

    srv = tls_ws_server(handler)
    s = run_session(srv.url + "/ws", srv.ca_file, max_size=1024)
    f = failure_of(s)
    assert (f.cls, f.value) == (FailureClass.PROTOCOL, 1009)
    assert s.data_count == 0


def test_end_with_reason_wins_over_the_close_it_causes(tls_ws_server) -> None:
    srv = tls_ws_server(_echo_forever)
    f = failure_of(run_session(srv.url + "/ws", srv.ca_file, end_after=(0.3, FailureClass.STALE)))
    assert f.cls is FailureClass.STALE


def test_only_data_messages_feed_the_watchdog(tls_ws_server) -> None:
    async def handler(ws: ServerConnection) -> None:
        for text in ("ack", "data", "ack", "data", "data"):
            await ws.send(text)
        await ws.close()

    srv = tls_ws_server(handler)
    s = run_session(srv.url + "/ws", srv.ca_file, on_message=lambda raw, t, sess: raw == b"data")
    assert (s.msg_count, s.data_count) == (5, 3)


def test_a_frame_whose_handler_raises_costs_nothing_but_that_frame(tls_ws_server) -> None:
    # Issue 12 item 2: an exception nothing anticipated (here RecursionError) in the handler used to end the
    # connection as OTHER; with an error handler the frame is handed over and the session keeps receiving.
    async def handler(ws: ServerConnection) -> None:
        for text in ("data", "boom", "data", "data"):
            await ws.send(text)
        await ws.close()

    failed: list[tuple[bytes, str]] = []

    def on_message(raw: bytes, t: int, sess: WsSession) -> bool:
        if raw == b"boom":
            raise RecursionError("maximum recursion depth exceeded")
        return True

    srv = tls_ws_server(handler)
    s = run_session(srv.url + "/ws", srv.ca_file, on_message=on_message,
                    on_error=lambda raw, sess, exc: failed.append((raw, type(exc).__name__)))
    assert (s.msg_count, s.data_count) == (4, 3)
    assert failed == [(b"boom", "RecursionError")]
    assert failure_of(s).cls is FailureClass.CLOSED_BY_PEER
