"""Binance USD-M futures emulator server: market streams at their 2026 routed paths plus WebSocket API orders.

Paths (anything else is refused with HTTP 404 at the handshake):
* ``/public/ws/<stream>[/<stream>..]`` raw frames; ``/public/ws`` + ``SUBSCRIBE`` frames: bookTicker, partial depth
  ``@depth5|10|20[@100ms|@250ms|@500ms|@0ms]``, diff depth ``@depth[@100ms|@250ms|@500ms]`` and trade.
* ``/public/stream?streams=a/b`` combined frames ``{"stream":..,"data":..}``; ``/public/stream`` + ``SUBSCRIBE``.
* ``/market/ws..`` and ``/market/stream..`` the same for aggTrade / markPrice / miniTicker / ticker / kline.
* ``/private/ws[/<listenKey>]`` and ``/private/stream[?streams=<listenKey>]``: the user-data route; a listen key
  comes from ``POST /fapi/v1/listenKey`` (caerus.sim.binance.rest).
* ``/ws-fapi/v1`` the WebSocket API, answered by ``caerus.sim.orders.binance_ws_api_response`` with this connection's
  session (``session.logon``) and this server's market data (``depth``, ``ticker.book``, ``ticker.price``).
* Any other request on the port (no WebSocket upgrade) is REST: caerus.sim.binance.rest.

A stream on the wrong route (bookTicker on ``/market``, aggTrade on ``/public``, trade on ``/market``) is
acknowledged and then stays silent, like the real venue: only a data watchdog notices. Each such subscription is
logged naming the route that carries the stream and counted (``silent`` in the stats, "trade on /market"). A
``SUBSCRIBE`` to a stream this emulator does not model is refused (error code 2 naming it), never acknowledged and
left silent; a name in the URL path that is not a stream is ignored, as the venue ignores it (ccxt puts a
connection number there).
``SET_PROPERTY ["combined", true|false]`` switches the wrapper for every stream of the connection. The server
sends protocol pings every ``binance_ping_interval_s``, closes every connection after ``binance_max_lifetime_s``
(24 h) with 1001 and disconnects (1008) a client sending more than 10 messages per second.

Instruments: every market stream is served for every emulated symbol (``MarketConfig.symbols``). A symbol the
emulated venue lists but this session does not emulate, or one it does not list, is refused naming it. A
connection holds at most ``binance_max_streams`` (1024) streams, as on the venue: a ``SUBSCRIBE`` past it is
refused (code 2, naming the limit), a URL naming more is refused at the handshake (HTTP 400).
"""

from __future__ import annotations

import asyncio
import collections
import http.client
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from caerus.sim.binance.rest import BinanceRest
from caerus.sim.core import catalogue, frames
from caerus.sim.core.config import SharedState
from caerus.sim.core.desk import DESK, drain_events
from caerus.sim.core.http import HttpRequest, VenueServer
from caerus.sim.core.hub import Subscriber, spawn
from caerus.sim.core.order_entry import binance_order_reply, binance_session, is_order_place

log = logging.getLogger("caerus.sim")

ORDER_PATH = "/ws-fapi/v1"
ROUTES = ("public", "market", "private")
METHODS = ("SUBSCRIBE", "UNSUBSCRIBE", "LIST_SUBSCRIPTIONS", "SET_PROPERTY", "GET_PROPERTY")
_DEPTH = re.compile(r"^depth(5|10|20)?(?:@(0|100|250|500)ms)?$", re.IGNORECASE)
_KLINE = re.compile(r"^kline_(1m|3m|5m|15m|30m|1h|2h|4h|6h|8h|12h|1d|3d|1w|1M)$")


def classify_stream(stream: str) -> tuple[str | None, str | None]:
    """(route the stream belongs to, topic key carrying its data) for a stream name; (None, None) if unknown."""
    sym, _, kind = stream.partition("@")
    if not sym or not kind:
        return None, None
    sym = sym.lower()
    if kind.lower() == "bookticker":
        return "public", f"binance:{sym}@bookTicker"
    if kind == "trade":
        return "public", f"binance:{sym}@trade"
    m = _DEPTH.match(kind)
    if m:
        levels, speed = m.group(1), m.group(2) or "250"
        if not levels and speed == "0":
            return None, None  # diff depth has no 0 ms variant
        return "public", f"binance:{sym}@depth{levels or ''}@{speed}ms"
    if kind in ("aggTrade", "miniTicker", "ticker", "markPrice", "markPrice@1s"):
        return "market", f"binance:{sym}@{kind}"
    if _KLINE.match(kind):
        return "market", f"binance:{sym}@{kind}"
    return None, None


def parse_path(path: str) -> tuple[str, bool, list[str]] | None:
    """(route, combined, initial streams) for a stream request path, or None when it is not one."""
    url = urlsplit(path)
    parts = url.path.strip("/").split("/")
    if len(parts) < 2 or parts[0] not in ROUTES:
        return None
    route, kind = parts[0], parts[1]
    query = parse_qs(url.query)
    if kind == "ws":
        return route, False, [p for p in parts[2:] if p] + query.get("listenKey", [])[:1]
    if kind == "stream" and len(parts) == 2:
        streams = query.get("streams", [""])[0]
        return route, True, [s for s in streams.split("/") if s]
    return None


def symbol_refusal(stream: str, emulated: frozenset[str]) -> str | None:
    """Why a known stream's symbol is refused (``emulated``: lower-case Binance symbols of this session), or None:
    every stream is served for every emulated symbol."""
    sym = stream.partition("@")[0].lower()
    if sym.upper() not in catalogue.BINANCE:
        return f"Invalid request: stream `{stream}`: symbol {sym.upper()} is not listed by this emulator"
    if sym not in emulated:
        return (f"Invalid request: stream `{stream}`: {sym.upper()} is listed but not emulated in this session "
                "(caerus venue-sim --symbols)")
    return None


def _too_many_streams(limit: int) -> str:
    return f"Invalid request: a connection may hold at most {limit} streams"


def _unknown_stream(stream: str) -> str:
    return (f"Invalid request: stream `{stream}` is not served by this emulator (see the fidelity table in "
            "docs/emulator.md)")


@dataclass
class _StreamConn:
    """One stream connection's subscriptions: stream name as subscribed -> topic key (None: acknowledged, silent)."""

    route: str
    combined: bool
    subscribed: dict[str, str | None] = field(default_factory=dict)


class BinanceServer(VenueServer):
    venue = "binance"

    def __init__(self, state: SharedState) -> None:
        super().__init__(state, BinanceRest(lambda: state.market))
        self.emulated = frozenset(i.binance_symbol.lower() for i in state.config.market.instruments()
                                  if i.binance_symbol is not None)

    # -- handshake -------------------------------------------------------------------------------------------
    def process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        parsed = parse_path(request.path) if path != ORDER_PATH else None
        if path != ORDER_PATH and parsed is None:
            self.counters.rejected += 1
            return conn.respond(404, f"no WebSocket endpoint at {path}\n")
        if parsed is not None and len(set(parsed[2])) > self.state.config.binance_max_streams:
            self.counters.rejected += 1
            return conn.respond(400, _too_many_streams(self.state.config.binance_max_streams) + "\n")
        return None if path == ORDER_PATH else self.scenario_refusal(conn)

    def _refusal(self, route: str, stream: str) -> str | None:
        """Why a subscription is refused, or None when it is served (or acknowledged and silent, as the venue
        does for a known stream on the wrong route)."""
        if route == "private":
            return None if stream in DESK.listen_keys else f"Invalid request: unknown listenKey `{stream}`"
        if stream in DESK.listen_keys:
            return None  # a listen key on a market route: acknowledged, silent
        _, key = classify_stream(stream)
        return _unknown_stream(stream) if key is None else symbol_refusal(stream, self.emulated)

    # -- connections -----------------------------------------------------------------------------------------
    async def handler(self, conn: ServerConnection) -> None:
        self.counters.opened += 1
        path = conn.request.path if conn.request is not None else ""  # None only before the handshake ends
        log.info("binance connection opened %s (active %d)", path, self.counters.active)
        try:
            if urlsplit(path).path == ORDER_PATH:
                await self._order_entry(conn)
            else:
                await self._market(conn)
        except ConnectionClosed:
            pass
        finally:
            self.counters.closed += 1
            log.info("binance connection closed (active %d)", self.counters.active)

    async def _order_entry(self, conn: ServerConnection) -> None:
        lose = self.state.config.scenario.name == "lost-reply"
        session = binance_session(time.time_ns() // 1_000_000)  # this connection's (session.logon)
        async for msg in conn:
            reply = binance_order_reply(msg, session, self.ws_api_market)
            if lose and is_order_place(msg) and self.state.budget.claim(self.venue):
                drain_events(self.venue)  # lost with its account events
                log.info("binance order executed and its reply dropped (scenario lost-reply)")
                continue
            await conn.send(reply)
            self.publish_account_events()

    def ws_api_market(self, method: str, params: dict[str, Any]) -> tuple[int, Any]:
        """A WebSocket API market-data request (``depth``, ``ticker.book``, ``ticker.price``), answered by the REST
        market data (the same book and quotes): (HTTP status, result or {"code", "msg"})."""
        path = {"depth": "/fapi/v1/depth", "ticker.book": "/fapi/v1/ticker/bookTicker",
                "ticker.price": "/fapi/v1/ticker/price"}[method]
        query = {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in params.items()
                 if k in ("symbol", "limit")}
        reply = self.rest(HttpRequest("GET", path, query, http.client.HTTPMessage(), b""))
        return reply.status, reply.body

    def publish_account_events(self) -> None:
        """The user-data events the order desk queued, to every connection subscribed to the account's key."""
        events = drain_events(self.venue)
        for key in DESK.listen_keys:
            topic = f"binance:user:{key}"
            if self.state.topics.has(topic):
                for ev in events:
                    self.state.topics.publish(topic, json.dumps(ev, separators=(",", ":")))

    async def _market(self, conn: ServerConnection) -> None:
        cfg, state = self.state.config, self.state
        assert conn.request is not None  # the handler runs after the handshake
        parsed = parse_path(conn.request.path)
        assert parsed is not None  # process_request refused everything else
        route, combined, initial = parsed
        sc = _StreamConn(route, combined)
        sub = Subscriber(conn, self.venue, cfg.scenario, state.budget)
        lifetime = cfg.binance_max_lifetime_s
        if cfg.scenario.name == "early-close" and state.budget.claim(self.venue):
            lifetime = cfg.scenario.after_s
        loop = asyncio.get_running_loop()
        expiry = loop.call_later(lifetime, lambda: spawn(conn.close(1001, "connection lifetime")))
        try:
            for stream in initial:
                self._subscribe(sub, sc, stream, from_path=True)
            recent: collections.deque[float] = collections.deque(maxlen=cfg.binance_max_incoming_per_s + 1)
            async for msg in conn:
                recent.append(loop.time())
                if len(recent) == recent.maxlen and recent[-1] - recent[0] < 1.0:
                    log.info("binance connection sent more than %d messages/s: disconnecting",
                             cfg.binance_max_incoming_per_s)
                    await conn.close(1008, "Too many requests")
                    return
                reply = self._request(msg, sub, sc)
                if reply is not None:
                    await conn.send(reply)
        finally:
            expiry.cancel()
            state.topics.remove_all(sub)
            sub.close()

    def _subscribe(self, sub: Subscriber, sc: _StreamConn, stream: str, from_path: bool = False) -> None:
        if from_path and self._refusal(sc.route, stream) is not None:
            return  # not a stream (ccxt puts a connection number in the path): ignored, as the venue does
        stream_route, key = classify_stream(stream)
        if sc.route == "private":
            key, stream_route = f"binance:user:{stream}", "private"  # user-data events for this listen key
        sub.arm()
        if key is not None and stream_route == sc.route:
            sc.subscribed[stream] = key
            self.state.topics.add(key, sub, stream if sc.combined else None)
        else:
            sc.subscribed[stream] = None  # acknowledged, never fed: the silent wrong route
            if stream_route is not None and sc.route != "private":
                kind = stream.partition("@")[2]
                self.counters.silent[f"{kind} on /{sc.route}"] += 1
                log.info("binance: %s subscribed on /%s, which does not carry it (the venue serves it on /%s): "
                         "acknowledged and silent, as the venue does", stream, sc.route, stream_route)

    def _request(self, msg: str | bytes, sub: Subscriber, sc: _StreamConn) -> str | None:
        try:
            req = json.loads(msg)
        except ValueError as exc:
            return frames.binance_error(3, f"Invalid JSON: {exc}", None)
        if not isinstance(req, dict):
            return frames.binance_error(2, "Invalid request: request must be a JSON object", None)
        req_id = req.get("id")
        if "id" not in req or isinstance(req_id, bool) or not (
            (isinstance(req_id, int) and req_id >= 0) or isinstance(req_id, str)
        ):
            return frames.binance_error(2, "Invalid request: request ID must be an unsigned integer", None)
        method = req.get("method")
        if method not in METHODS:
            return frames.binance_error(
                2, f"Invalid request: unknown variant `{method}`, expected one of "
                + ", ".join(f"`{m}`" for m in METHODS), req_id)
        params = req.get("params", [])
        if method in ("SUBSCRIBE", "UNSUBSCRIBE"):
            if not isinstance(params, list) or not params or not all(isinstance(p, str) for p in params):
                return frames.binance_error(2, "Invalid request: params must be a non-empty list of stream names",
                                            req_id)
            if method == "SUBSCRIBE":
                limit = self.state.config.binance_max_streams
                if len(sc.subscribed.keys() | set(params)) > limit:
                    return frames.binance_error(2, _too_many_streams(limit), req_id)
                for stream in params:
                    why = self._refusal(sc.route, stream)
                    if why is not None:
                        return frames.binance_error(2, why, req_id)
            for stream in params:
                if method == "SUBSCRIBE":
                    self._subscribe(sub, sc, stream)
                else:
                    key = sc.subscribed.pop(stream, None)
                    if key is not None:
                        self.state.topics.remove(key, sub)
            return frames.binance_result(req_id)
        if method == "LIST_SUBSCRIPTIONS":
            return frames.binance_result(req_id, list(sc.subscribed))
        if method == "SET_PROPERTY":
            if not (isinstance(params, list) and len(params) == 2 and params[0] == "combined"
                    and isinstance(params[1], bool)):
                return frames.binance_error(2, "Invalid request: SET_PROPERTY takes [\"combined\", true|false]",
                                            req_id)
            sc.combined = params[1]
            for stream, key in sc.subscribed.items():  # every stream of the connection switches wrapper
                if key is not None:
                    self.state.topics.add(key, sub, stream if sc.combined else None)
            return frames.binance_result(req_id)
        if not (isinstance(params, list) and params == ["combined"]):
            return frames.binance_error(2, "Invalid request: GET_PROPERTY takes [\"combined\"]", req_id)
        return frames.binance_result(req_id, sc.combined)
