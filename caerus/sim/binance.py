"""Binance USD-M futures emulator server: market streams at their 2026 routed paths plus WebSocket API orders.

Paths (anything else is refused with HTTP 404 at the handshake):
* ``/public/ws/<stream>[/<stream>..]`` raw frames; ``/public/ws`` + ``SUBSCRIBE`` frames.
* ``/public/stream?streams=a/b`` combined frames ``{"stream":..,"data":..}``; ``/public/stream`` + ``SUBSCRIBE``.
* ``/market/ws..`` and ``/market/stream..`` the same for aggTrade / markPrice / kline.
* ``/ws-fapi/v1`` order entry, answered by ``caerus.sim.orders.binance_ws_api_response``.

A stream on the wrong route (bookTicker on ``/market``, aggTrade on ``/public``) is acknowledged and then stays
silent, like the real venue: only a data watchdog notices. The server sends protocol pings every
``binance_ping_interval_s``, closes every connection after ``binance_max_lifetime_s`` (24 h) with 1001 and
disconnects (1008) a client sending more than 10 messages per second.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import re
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from caerus.sim import frames
from caerus.sim.config import SharedState
from caerus.sim.hub import Subscriber, spawn
from caerus.sim.order_entry import binance_order_reply

log = logging.getLogger("caerus.sim")

ORDER_PATH = "/ws-fapi/v1"
ROUTES = ("public", "market")
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
    m = _DEPTH.match(kind)
    if m:
        levels, speed = m.group(1), m.group(2) or ("250" if m.group(1) else "100")
        return "public", f"binance:{sym}@depth{levels or ''}@{speed}ms"
    if kind == "aggTrade":
        return "market", f"binance:{sym}@aggTrade"
    if kind in ("markPrice", "markPrice@1s"):
        return "market", f"binance:{sym}@{kind}"
    if _KLINE.match(kind):
        return "market", f"binance:{sym}@{kind}"
    return None, None


def parse_path(path: str) -> tuple[str, bool, list[str]] | None:
    """(route, combined, initial streams) for a market-data request path, or None when it is not one."""
    url = urlsplit(path)
    parts = url.path.strip("/").split("/")
    if len(parts) < 2 or parts[0] not in ROUTES:
        return None
    route, kind = parts[0], parts[1]
    if kind == "ws":
        return route, False, [p for p in parts[2:] if p]
    if kind == "stream" and len(parts) == 2:
        streams = parse_qs(url.query).get("streams", [""])[0]
        return route, True, [s for s in streams.split("/") if s]
    return None


class BinanceServer:
    venue = "binance"

    def __init__(self, state: SharedState) -> None:
        self.state = state
        self.counters = state.counters[self.venue]

    # -- handshake -------------------------------------------------------------------------------------------
    def process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path != ORDER_PATH and parse_path(request.path) is None:
            self.counters.rejected += 1
            return conn.respond(404, f"no WebSocket endpoint at {path}\n")
        scenario = self.state.config.scenario
        if path != ORDER_PATH and scenario.name in ("http-429", "http-503") and self.state.budget.claim(self.venue):
            self.counters.rejected += 1
            status = 429 if scenario.name == "http-429" else 503
            log.info("binance handshake rejected with HTTP %d (scenario)", status)
            resp = conn.respond(status, "Too Many Requests\n" if status == 429 else "Service Unavailable\n")
            resp.headers["Retry-After"] = "1"
            return resp
        return None

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
        async for msg in conn:
            await conn.send(binance_order_reply(msg))

    async def _market(self, conn: ServerConnection) -> None:
        cfg, state = self.state.config, self.state
        assert conn.request is not None  # the handler runs after the handshake
        parsed = parse_path(conn.request.path)
        assert parsed is not None  # process_request refused everything else
        route, combined, initial = parsed
        sub = Subscriber(conn, self.venue, cfg.scenario, state.budget)
        subscribed: dict[str, str | None] = {}  # stream name as subscribed -> topic key (None: silent)
        lifetime = cfg.binance_max_lifetime_s
        if cfg.scenario.name == "early-close" and state.budget.claim(self.venue):
            lifetime = cfg.scenario.after_s
        loop = asyncio.get_running_loop()
        expiry = loop.call_later(lifetime, lambda: spawn(conn.close(1001, "connection lifetime")))
        try:
            for stream in initial:
                self._subscribe(sub, route, combined, stream, subscribed)
            recent: collections.deque[float] = collections.deque(maxlen=cfg.binance_max_incoming_per_s + 1)
            async for msg in conn:
                recent.append(loop.time())
                if len(recent) == recent.maxlen and recent[-1] - recent[0] < 1.0:
                    log.info("binance connection sent more than %d messages/s: disconnecting",
                             cfg.binance_max_incoming_per_s)
                    await conn.close(1008, "Too many requests")
                    return
                reply = self._request(msg, sub, route, combined, subscribed)
                if reply is not None:
                    await conn.send(reply)
        finally:
            expiry.cancel()
            state.topics.remove_all(sub)
            sub.close()

    def _subscribe(self, sub: Subscriber, route: str, combined: bool, stream: str,
                   subscribed: dict[str, str | None]) -> None:
        stream_route, key = classify_stream(stream)
        sub.arm()
        if key is not None and stream_route == route:
            subscribed[stream] = key
            self.state.topics.add(key, sub, stream if combined else None)
        else:
            subscribed[stream] = None  # acknowledged, never fed: the silent wrong route

    def _request(self, msg: str | bytes, sub: Subscriber, route: str, combined: bool,
                 subscribed: dict[str, str | None]) -> str | None:
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
            for stream in params:
                if method == "SUBSCRIBE":
                    self._subscribe(sub, route, combined, stream, subscribed)
                else:
                    key = subscribed.pop(stream, None)
                    if key is not None:
                        self.state.topics.remove(key, sub)
            return frames.binance_result(req_id)
        if method == "LIST_SUBSCRIPTIONS":
            return frames.binance_result(req_id, list(subscribed))
        if method == "SET_PROPERTY":
            return frames.binance_result(req_id)
        return frames.binance_result(req_id, combined)  # GET_PROPERTY: the only property is "combined"


