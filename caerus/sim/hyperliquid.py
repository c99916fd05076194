"""Hyperliquid emulator server: the public WebSocket API at ``/ws`` (anything else: HTTP 404 at handshake).

* ``{"method":"subscribe","subscription":{"type":"bbo","coin":"BTC"}}`` -> ``subscriptionResponse`` echo, the
  current bbo, then a ``bbo`` frame per block whose top changed; ``l2Book`` (current book first) every 5 s
  (20 levels) or, with ``"fast":true``, every 0.5 s (5 levels). Other known subscription types and other coins
  are acknowledged and stay silent.
* ``{"method":"ping"}`` -> ``{"channel":"pong"}``; bad requests -> ``{"channel":"error","data":"..."}``.
* ``{"method":"post","id":N,"request":{...}}`` -> ``caerus.sim.orders.hyperliquid_post_response``.
* A connection with no client message for ``hl_idle_timeout_s`` (60 s) is closed; the optional non-JSON greeting
  "Websocket connection established." is sent on connect when configured.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from caerus.sim import frames
from caerus.sim.config import SharedState
from caerus.sim.hub import Subscriber, spawn
from caerus.sim.order_entry import hyperliquid_post_reply

log = logging.getLogger("caerus.sim")

PATH = "/ws"
KNOWN_TYPES = frozenset({
    "bbo", "l2Book", "trades", "allMids", "candle", "notification", "webData2", "orderUpdates", "userEvents",
    "userFills", "userFundings", "userNonFundingLedgerUpdates", "activeAssetCtx", "activeAssetData",
})


def topic_for(subscription: dict) -> str | None:
    """Topic key carrying data for a subscription, or None when it is valid but never fed here."""
    kind, coin = subscription.get("type"), subscription.get("coin")
    if coin != frames.COIN:
        return None
    if kind == "bbo":
        return f"hyperliquid:bbo:{coin}"
    if kind == "l2Book":
        return f"hyperliquid:l2Book:{coin}" + (":fast" if subscription.get("fast") is True else "")
    return None


def _sub_id(subscription: dict) -> str:
    return json.dumps(subscription, sort_keys=True, separators=(",", ":"))


class HyperliquidServer:
    venue = "hyperliquid"

    def __init__(self, state: SharedState) -> None:
        self.state = state
        self.counters = state.counters[self.venue]

    def process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path != PATH:
            self.counters.rejected += 1
            return conn.respond(404, f"no WebSocket endpoint at {path}\n")
        scenario = self.state.config.scenario
        if scenario.name in ("http-429", "http-503") and self.state.budget.claim(self.venue):
            self.counters.rejected += 1
            status = 429 if scenario.name == "http-429" else 503
            log.info("hyperliquid handshake rejected with HTTP %d (scenario)", status)
            resp = conn.respond(status, "Too Many Requests\n" if status == 429 else "Service Unavailable\n")
            resp.headers["Retry-After"] = "1"
            return resp
        return None

    async def handler(self, conn: ServerConnection) -> None:
        cfg, state = self.state.config, self.state
        self.counters.opened += 1
        log.info("hyperliquid connection opened (active %d)", self.counters.active)
        sub = Subscriber(conn, self.venue, cfg.scenario, state.budget)
        subscribed: dict[str, str | None] = {}
        loop = asyncio.get_running_loop()
        idle: list[asyncio.TimerHandle] = []

        def reset_idle() -> None:
            if idle:
                idle.pop().cancel()
            idle.append(loop.call_later(cfg.hl_idle_timeout_s,
                                        lambda: spawn(conn.close(1000, "idle timeout"))))

        try:
            reset_idle()
            greeting = cfg.hl_greeting or (cfg.scenario.name == "greeting" and state.budget.claim(self.venue))
            if greeting:
                await conn.send(frames.HL_GREETING)
            async for msg in conn:
                reset_idle()
                reply = self._request(msg, sub, subscribed)
                if reply is not None:
                    await conn.send(reply)
        except ConnectionClosed:
            pass
        finally:
            for h in idle:
                h.cancel()
            state.topics.remove_all(sub)
            sub.close()
            self.counters.closed += 1
            log.info("hyperliquid connection closed (active %d)", self.counters.active)

    def _request(self, msg: str | bytes, sub: Subscriber, subscribed: dict[str, str | None]) -> str | None:
        text = msg if isinstance(msg, str) else msg.decode("utf-8", "replace")
        try:
            req = json.loads(text)
        except ValueError:
            return frames.hl_error(f"Error parsing JSON into valid websocket request: {text[:200]}")
        if not isinstance(req, dict):
            return frames.hl_error(f"Error parsing JSON into valid websocket request: {text[:200]}")
        method = req.get("method")
        if method == "ping":
            return frames.HL_PONG
        if method == "post":
            return hyperliquid_post_reply(req)
        if method in ("subscribe", "unsubscribe"):
            subscription = req.get("subscription")
            if not isinstance(subscription, dict) or subscription.get("type") not in KNOWN_TYPES:
                return frames.hl_error(f"Invalid subscription {json.dumps(subscription)}")
            if subscription.get("type") in ("bbo", "l2Book") and not isinstance(subscription.get("coin"), str):
                return frames.hl_error(f"Invalid subscription {json.dumps(subscription)}: missing coin")
            sid = _sub_id(subscription)
            if method == "subscribe":
                if sid in subscribed:
                    return frames.hl_error(f"Already subscribed: {json.dumps(subscription)}")
                key = topic_for(subscription)
                subscribed[sid] = key
                sub.arm()
                reply = frames.hl_subscription_response(method, subscription)
                if key is not None:
                    # Ack first so the response precedes the first data frame.
                    sub.send(reply, control=True)
                    current = self.state.snapshot(key)
                    if current is not None:  # the venue answers a subscription with the current state
                        sub.send(current)
                    self.state.topics.add(key, sub)
                    return None
                return reply
            if sid not in subscribed:
                return frames.hl_error(f"Already unsubscribed: {json.dumps(subscription)}")
            key = subscribed.pop(sid)
            if key is not None:
                self.state.topics.remove(key, sub)
            return frames.hl_subscription_response(method, subscription)
        return frames.hl_error(f"Error parsing JSON into valid websocket request: {text[:200]}")
