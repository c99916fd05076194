"""The supervisor with the real feed loops against TLS servers on loopback: watchdog, rotation, keepalive, pacing."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection

from caerus.ipc.swmr import SwmrReader
from caerus.net.connection_supervisor import Endpoint, Supervisor, SupervisorConfig
from caerus.net.failures import FailureClass
from caerus.net.ws import WsSession, client_ssl_context
from caerus.records.book import BOOK_CONN, BOOK_FLAGS, BOOK_SEQ
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues.binance import data as binance
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid import data as hyperliquid
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import BOOK, BookFlags, Venue
from tests.fixtures.feed_servers import Market


def run_feed(venue: str, url: str, ca_file: str, cfg: SupervisorConfig, seconds: float,
             keepalive_s: float | None = None) -> tuple[dict, list[tuple], str]:
    """Run a supervised feed for ``seconds``; returns (counters, every record published, log text)."""
    log = io.StringIO()
    out = FeedOutputs(venue, f"u.book.{venue}", f"u.events.{venue}", f"u.stats.{venue}", capacity=1 << 14,
                      log_stream=log, venue_code=int(Venue[venue.upper()]))
    reader = SwmrReader.attach(f"u.book.{venue}", BOOK, timeout=1)
    if venue == "binance":
        sink = BinanceSink(out)
        ep = Endpoint(binance.url(url), (binance.subscribe_frame([binance.stream()]),))
    else:
        sink = HyperliquidSink(out)
        ep = Endpoint(hyperliquid.url(url), (hyperliquid.subscribe_frame(),), hyperliquid.PING_FRAME, keepalive_s)
    out.sink = sink
    records: list[tuple] = []

    async def main() -> None:
        sup = Supervisor(ep, cfg, sink, out, ssl_context=client_ssl_context(ca_file))
        task = asyncio.create_task(sup.run())
        t_end = asyncio.get_running_loop().time() + seconds
        while asyncio.get_running_loop().time() < t_end:
            await asyncio.sleep(0.02)
            while (rec := reader.read_next()) is not None:
                records.append(rec)
        sup.stop()
        await asyncio.wait_for(task, 10)
        out.housekeeping(0)

    try:
        asyncio.run(main())
        while (rec := reader.read_next()) is not None:
            records.append(rec)
        assert reader.lost == 0
        return out.counters.snapshot(), records, log.getvalue()
    finally:
        reader.close()
        out.close()


def fast(**kw: object) -> SupervisorConfig:
    base: dict = dict(open_timeout_s=2.0, close_timeout_s=0.5, backoff_base_s=0.05, backoff_cap_s=0.2,
                      connects_per_min=600.0, connect_burst=3, stale_after_s=0.4, tick_s=0.02)
    base.update(kw)
    return SupervisorConfig(**base)


def test_silent_subscription_is_declared_stale_and_reconnected(tls_ws_server, shm_dir: Path) -> None:
    market = Market("binance")
    srv = tls_ws_server(lambda ws: market.serve(ws, silent=True))  # acknowledged, then nothing (wrong route)
    c, records, log = run_feed("binance", srv.url, srv.ca_file, fast(), 1.6)
    assert c["fail.stale"] >= 2 and c["stale"] >= 2
    assert c["connects"] >= 3 and c["reconnects"] >= 2 and c["acks"] >= 2
    assert all(not r[BOOK_FLAGS] & BookFlags.VALID for r in records)  # only STALE markers, never a valid book
    assert '"failure": "STALE"' in log


def test_rotation_make_before_break_loses_nothing(tls_ws_server, shm_dir: Path) -> None:
    market = Market("binance", rate_hz=300)
    srv = tls_ws_server(market.serve)
    c, records, _ = run_feed("binance", srv.url, srv.ca_file, fast(rotate_after_s=0.5, stale_after_s=0.3), 2.5)
    assert c["rotations"] >= 2 and c["fail.rotation"] >= 2
    assert c["fail.stale"] == 0 and c["reconnects"] == 0
    ids = [r[BOOK_SEQ] for r in records if r[BOOK_FLAGS] & BookFlags.VALID]
    assert ids == sorted(set(ids))  # strictly increasing: nothing published twice
    sent = [u for u in market.sent_ids if ids[0] <= u <= ids[-1]]
    assert ids == sent  # every update the venue sent in that span was published: nothing lost
    assert sum(1 for r in records if r[BOOK_FLAGS] & BookFlags.ROTATED) == c["rotations"]
    assert len({r[BOOK_CONN] for r in records}) >= 3


def test_hyperliquid_keepalive_pings_are_sent_and_answered(tls_ws_server, shm_dir: Path) -> None:
    market = Market("hyperliquid", rate_hz=50)
    pings: list[str] = []

    async def handler(ws: ServerConnection) -> None:
        orig = ws.recv

        async def recv(*a, **k):
            msg = await orig(*a, **k)
            if "ping" in str(msg):
                pings.append(msg)  # str: a text frame, as the venue requires
            return msg

        ws.recv = recv  # type: ignore[method-assign]
        await market.serve(ws)

    srv = tls_ws_server(handler)
    c, _, _ = run_feed("hyperliquid", srv.url, srv.ca_file, fast(stale_after_s=1.0), 1.3, keepalive_s=0.2)
    assert c["pings"] >= 3 and len(pings) >= 3 and c["pongs"] >= 3
    assert pings[0] == '{"method":"ping"}'  # a text frame (bytes here would mean a binary frame)
    assert c["books"] > 10 and c["connects"] == 1


def test_protocol_pings_from_the_venue_are_answered(tls_ws_server, shm_dir: Path) -> None:
    market = Market("binance", rate_hz=100)
    # The server pings every 0.1 s and drops a client that does not pong within 0.2 s (Binance: 3 min / 10 min).
    srv = tls_ws_server(market.serve, ping_interval=0.1, ping_timeout=0.2)
    c, _, _ = run_feed("binance", srv.url, srv.ca_file, fast(stale_after_s=1.0), 1.2)
    assert c["connects"] == 1 and c["fail.closed_by_peer"] == 0 and c["books"] > 20
    assert srv.connections[0].latency > 0  # the server measured a ping round trip: our pong arrived


def test_rate_limited_handshake_waits_and_connections_are_bounded(tls_ws_server, shm_dir: Path) -> None:
    srv = tls_ws_server(Market("binance").serve, process_request=lambda conn, req: conn.respond(429, "slow\n"))
    c, _, log = run_feed("binance", srv.url, srv.ca_file, fast(rate_limited_delay_s=30.0), 1.0)
    assert c["connects"] == 1 and c["fail.rate_limited"] == 1
    assert '"value": 429' in log


def test_reconnect_storm_is_bounded_by_the_token_bucket(tls_ws_server, shm_dir: Path) -> None:
    srv = tls_ws_server(Market("binance").serve, process_request=lambda conn, req: conn.respond(503, "down\n"))
    # Back-off alone would allow ~50 attempts in 1.5 s; the bucket allows burst 2 + 60/min * 1.5 s = 3.5.
    c, _, _ = run_feed("binance", srv.url, srv.ca_file, fast(backoff_base_s=0.01, backoff_cap_s=0.02,
                                                             connects_per_min=60.0, connect_burst=2), 1.5)
    assert 2 <= c["connects"] <= 4
    assert c["fail.handshake_http"] == c["connects"]


class OutlivesItsCancel(WsSession):
    """A connection that ignores the supervisor's stop and its first cancel (a close stuck in a slow TLS shutdown
    on a loaded machine): it ends 3 s after the cancel, past the supervisor's shutdown waits."""

    def end(self, failure: FailureClass, detail: str = "", value: int = 0) -> None:
        if failure is not FailureClass.SHUTDOWN:
            super().end(failure, detail, value)

    async def serve(self):  # type: ignore[no-untyped-def]
        serving = asyncio.ensure_future(super().serve())
        try:
            return await asyncio.shield(serving)
        except asyncio.CancelledError:
            await asyncio.sleep(3.0)
            WsSession.end(self, FailureClass.SHUTDOWN, "late")
            return await serving


def test_a_connection_that_outlives_its_cancel_is_still_reported_as_shutdown(tls_ws_server, shm_dir: Path) -> None:
    market = Market("binance", rate_hz=100)
    srv = tls_ws_server(market.serve)
    out = FeedOutputs("binance", "u.book.binance", "u.events.binance", "u.stats.binance", capacity=1 << 12,
                      log_stream=io.StringIO(), venue_code=int(Venue.BINANCE))
    sink = BinanceSink(out)
    out.sink = sink
    ep = Endpoint(binance.url(srv.url), (binance.subscribe_frame([binance.stream()]),))
    delivered = 0

    async def main() -> None:
        nonlocal delivered
        sup = Supervisor(ep, fast(close_timeout_s=0.1), sink, out, ssl_context=client_ssl_context(srv.ca_file),
                         session_factory=OutlivesItsCancel)
        task = asyncio.create_task(sup.run())
        for _ in range(500):  # until messages flow (bounded: 10 s)
            await asyncio.sleep(0.02)
            delivered = sum(s.msg_count for s in sup.sessions())
            if delivered >= 5:
                break
        sup.stop()
        await asyncio.wait_for(task, 10)
        out.housekeeping(0)

    try:
        asyncio.run(main())
        c = out.counters.snapshot()
    finally:
        out.close()
    assert delivered >= 5 and c["connects"] == 1
    assert c["fail.shutdown"] == 1  # reported, though its task had not ended when the supervisor stopped


def test_bad_supervisor_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="stale_after_s"):
        SupervisorConfig(stale_after_s=0).validate()
    with pytest.raises(ValueError, match="rotate_after_s"):
        SupervisorConfig(stale_after_s=10, rotate_after_s=5).validate()
