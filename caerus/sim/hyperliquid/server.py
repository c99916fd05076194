"""Hyperliquid emulator server: the public WebSocket API at ``/ws`` (anything else: HTTP 404 at handshake).

* ``{"method":"subscribe","subscription":{"type":"bbo","coin":"BTC"}}`` -> ``subscriptionResponse`` echo (of the
  subscription as kept), the current bbo, then a ``bbo`` frame per block whose top changed; ``l2Book`` (current
  book first) every 5 s (20 levels) or, with ``"fast":true``, every 0.5 s (5 levels); ``trades`` (the latest
  trade first, then each trade as the top moves through a level), ``candle`` (the coin's current candle of the
  interval after each trade), ``allMids`` (every emulated coin's mid, per block in which a top changed) and
  ``activeAssetCtx`` (per block whose top changed). User channels (``orderUpdates``, ``userFills``,
  ``userEvents``, ``notification``, ``webData2``...) are acknowledged: they carry account events only. A market
  channel this emulator does not model (``activeAssetData``) and coins not emulated are refused with an ``error``
  frame naming the subscription, never acknowledged and left silent.
* ``{"method":"ping"}`` -> ``{"channel":"pong"}``; bad requests -> ``{"channel":"error","data":"..."}``.
* ``{"method":"post","id":N,"request":{...}}`` -> ``caerus.sim.orders.hyperliquid_post_response``.
* Any other request on the port (no WebSocket upgrade) is HTTP: ``POST /info`` and ``POST /exchange``
  (caerus.sim.hyperliquid.rest).
* A connection with no client message for ``hl_idle_timeout_s`` (60 s) is closed; the optional non-JSON greeting
  "Websocket connection established." is sent on connect when configured.
* Coins: every market channel is served for every emulated coin (``MarketConfig.symbols``); a coin listed but not
  emulated in this session, or not listed, is refused naming it. Limits as on the venue: at most
  ``hl_max_subscriptions_per_ip`` (1000) subscriptions per client IP across its connections (an ``error`` frame
  naming the limit) and ``hl_max_connections_per_ip`` (10) open connections
  per IP (the next handshake gets HTTP 429).
* Limits of this emulator (issue 44: every 127/8 address reaches a loopback listener, so per-IP limits alone bound
  nothing): ``hl_max_connections_total`` (40) connections and ``hl_max_subscriptions_total`` (4000) subscriptions
  from all addresses together; a subscribe / unsubscribe message over ``hl_max_subscription_bytes`` (1024) is
  refused. A subscription keeps only the keys its channel defines, and a ``user`` must be an address
  (caerus.sim.hyperliquid.subscriptions). Each refusal names its limit and is counted in ``VenueCounters.refused``.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.protocol import State

from caerus.sim.core import catalogue, frames
from caerus.sim.core.config import SharedState
from caerus.sim.core.desk import DESK, drain_events
from caerus.sim.core.http import HttpReply, HttpRequest, VenueServer
from caerus.sim.core.hub import Subscriber, spawn
from caerus.sim.core.instrument_feeds import candle_topic
from caerus.sim.core.order_entry import hyperliquid_post_reply
from caerus.sim.core.tape import INTERVAL_MINUTES
from caerus.sim.hyperliquid.orders import hyperliquid_user_fills
from caerus.sim.hyperliquid.rest import HyperliquidRest
from caerus.sim.hyperliquid.subscriptions import normalise, sub_id

log = logging.getLogger("caerus.sim")

PATH = "/ws"
MARKET_TYPES = frozenset({"bbo", "l2Book", "trades", "candle", "allMids", "activeAssetCtx"})  # the market model's
COIN_TYPES = MARKET_TYPES - {"allMids"}  # market channels of one coin
USER_TYPES = frozenset({"notification", "webData2", "orderUpdates", "userEvents", "userFills", "userFundings",
                        "userNonFundingLedgerUpdates"})  # account events only: acknowledged
UNMODELLED_TYPES = frozenset({"activeAssetData"})  # refused, never left silent
KNOWN_TYPES = MARKET_TYPES | USER_TYPES | UNMODELLED_TYPES
ACCOUNT_TYPES = frozenset({"orderUpdates", "userFills", "userEvents"})  # user channels fed from the desk's events
#: the channel an event arrives on -> the subscription type that receives it (userEvents arrive on "user")
CHANNEL_SUBSCRIPTION = {"user": "userEvents"}


def topic_for(subscription: dict) -> str | None:
    """Topic key carrying data for a subscription, or None for a user channel (valid, event-driven)."""
    kind, coin = subscription.get("type"), subscription.get("coin")
    if kind == "allMids":
        return "hyperliquid:allMids"
    if kind == "bbo":
        return f"hyperliquid:bbo:{coin}"
    if kind == "l2Book":
        return f"hyperliquid:l2Book:{coin}" + (":fast" if subscription.get("fast") is True else "")
    if kind == "trades":
        return f"hyperliquid:trades:{coin}"
    if kind == "activeAssetCtx":
        return f"hyperliquid:activeAssetCtx:{coin}"
    if kind == "candle":
        return candle_topic(str(coin), str(subscription.get("interval")))
    if kind in ACCOUNT_TYPES and isinstance(subscription.get("user"), str):
        return f"hyperliquid:{kind}:{subscription['user'].lower()}"
    return None


def refusal(subscription: dict, coins: frozenset[str] = frozenset({frames.COIN})) -> str | None:
    """Why a known subscription is refused here (a market channel not modelled, a coin not emulated), else None.
    ``coins``: the coins this session emulates (every market channel is served for each)."""
    kind = subscription.get("type")
    if kind in UNMODELLED_TYPES:
        return f"{kind} is not served by this emulator (see the fidelity table in docs/emulator.md)"
    if kind in COIN_TYPES:
        coin = subscription.get("coin")
        listed = catalogue.BY_NAME.get(coin) if isinstance(coin, str) else None
        if listed is None or listed.hl_asset is None:
            return f"coin {coin!r} is not listed by this emulator"
        if coin not in coins:
            return f"coin {coin!r} is listed but not emulated in this session (caerus venue-sim --symbols)"
        if kind == "candle" and subscription.get("interval") not in INTERVAL_MINUTES:
            return f"candle interval {subscription.get('interval')!r} is not one of {', '.join(INTERVAL_MINUTES)}"
    return None


def _client_ip(conn: ServerConnection) -> str:
    addr = conn.remote_address
    return str(addr[0]) if addr else "?"


class HyperliquidServer(VenueServer):
    venue = "hyperliquid"

    def __init__(self, state: SharedState) -> None:
        super().__init__(state, HyperliquidRest(lambda: state.market))
        self.coins = frozenset(i.name for i in state.config.market.instruments() if i.hl_asset is not None)
        self._ip_conns: dict[str, set[ServerConnection]] = collections.defaultdict(set)  # handshakes let in
        self._ip_subs: collections.Counter[str] = collections.Counter()  # subscriptions held per client IP
        self._subs_total = 0  # subscriptions held by every client IP together

    def _refuse(self, limit: str) -> None:
        """Count a refusal under the limit (or the reason) that caused it."""
        self.counters.refused[limit] += 1

    def _open_connections(self) -> int:
        """Connections let in and not yet closed, from every address (a handshake that failed after it was let
        in never reaches the handler's cleanup: dropped here by its state)."""
        for ip in list(self._ip_conns):
            live = self._ip_conns[ip]
            live.difference_update([c for c in live if c.state is State.CLOSED])
            if not live:
                del self._ip_conns[ip]
        return sum(len(live) for live in self._ip_conns.values())

    def http(self, request: HttpRequest) -> HttpReply:
        """A plain HTTP request on this port (``POST /info``, ``POST /exchange``), then the account events it
        queued, to their subscribers."""
        reply = super().http(request)
        self.publish_account_events()
        return reply

    def publish_account_events(self) -> None:
        """``orderUpdates`` / ``userFills`` events the order desk queued, to the account's subscribers (the
        wallet's address, or a vault it trades for)."""
        events = drain_events(self.venue)
        users = {u for u in (DESK.hyperliquid_address, *DESK.hyperliquid_vaults) if u}
        for ev in events:
            text = json.dumps(ev, separators=(",", ":"))
            for user in users:
                topic = f"hyperliquid:{CHANNEL_SUBSCRIPTION.get(ev['channel'], ev['channel'])}:{user.lower()}"
                if self.state.topics.has(topic):
                    self.state.topics.publish(topic, text)

    def process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path != PATH:
            self.counters.rejected += 1
            return conn.respond(404, f"no WebSocket endpoint at {path}\n")
        cfg, ip = self.state.config, _client_ip(conn)
        total = self._open_connections()
        live = self._ip_conns[ip]
        if len(live) >= cfg.hl_max_connections_per_ip:
            limit = cfg.hl_max_connections_per_ip
            self.counters.rejected += 1
            self._refuse("hl_max_connections_per_ip")
            log.info("hyperliquid handshake from %s rejected: %d connections open (limit %d)", ip, len(live), limit)
            return conn.respond(429, f"Too many connections: at most {limit} websocket connections per IP address\n")
        if total >= cfg.hl_max_connections_total:
            limit = cfg.hl_max_connections_total
            self.counters.rejected += 1
            self._refuse("hl_max_connections_total")
            log.info("hyperliquid handshake from %s rejected: %d connections open in all (hl_max_connections_total "
                     "%d)", ip, total, limit)
            return conn.respond(429, f"Too many connections: at most {limit} websocket connections in all "
                                     "(emulator limit hl_max_connections_total)\n")
        refused = self.scenario_refusal(conn)
        if refused is not None:
            return refused
        live.add(conn)
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
                reply = self._request(msg, sub, subscribed, _client_ip(conn))
                if reply is not None:
                    await conn.send(reply)
                self.publish_account_events()
        except ConnectionClosed:
            pass
        finally:
            for h in idle:
                h.cancel()
            state.topics.remove_all(sub)
            sub.close()
            ip = _client_ip(conn)
            self._ip_conns[ip].discard(conn)
            self._ip_subs[ip] -= len(subscribed)
            self._subs_total -= len(subscribed)
            if self._ip_subs[ip] <= 0:
                del self._ip_subs[ip]
            if not self._ip_conns[ip]:
                del self._ip_conns[ip]
            self.counters.closed += 1
            log.info("hyperliquid connection closed (active %d)", self.counters.active)

    def _request(self, msg: str | bytes, sub: Subscriber, subscribed: dict[str, str | None], ip: str = "?"
                 ) -> str | None:
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
            reply = hyperliquid_post_reply(req)
            if self.state.config.scenario.name == "lost-reply" and isinstance(req.get("request"), dict) \
                    and req["request"].get("type") == "action" and self.state.budget.claim(self.venue):
                # Lost with everything that connection would have carried for it (its account events too).
                drain_events(self.venue)
                log.info("hyperliquid action executed and its reply dropped (scenario lost-reply)")
                return None
            return reply
        if method in ("subscribe", "unsubscribe"):
            return self._subscription(method, req.get("subscription"), text, sub, subscribed, ip)
        return frames.hl_error(f"Error parsing JSON into valid websocket request: {text[:200]}")

    def _subscription(self, method: str, raw: object, text: str, sub: Subscriber, subscribed: dict[str, str | None],
                      ip: str) -> str | None:
        """A subscribe or unsubscribe: checked against the message cap, normalised to its channel's keys, checked
        against the per-IP and total limits, then held (or released)."""
        cfg = self.state.config
        cap = cfg.hl_max_subscription_bytes
        size = len(text) if text.isascii() else len(text.encode())
        if size > cap:
            self._refuse("hl_max_subscription_bytes")
            return frames.hl_error(f"Cannot {method}: the message is {size} bytes, over the limit of {cap} "
                                   "(emulator limit hl_max_subscription_bytes)")
        subscription = normalise(raw)
        if isinstance(subscription, str):
            self._refuse("invalid_subscription")
            return frames.hl_error(f"Invalid subscription {json.dumps(raw)}: {subscription}")
        sid = sub_id(subscription)
        if method == "unsubscribe":
            if sid not in subscribed:
                return frames.hl_error(f"Already unsubscribed: {json.dumps(subscription)}")
            key = subscribed.pop(sid)
            self._ip_subs[ip] -= 1
            self._subs_total -= 1
            if key is not None:
                self.state.topics.remove(key, sub)
            return frames.hl_subscription_response(method, subscription)
        why = refusal(subscription, self.coins)
        if why is not None:
            self._refuse("invalid_subscription")
            return frames.hl_error(f"Invalid subscription {json.dumps(subscription)}: {why}")
        if sid in subscribed:
            return frames.hl_error(f"Already subscribed: {json.dumps(subscription)}")
        if self._ip_subs[ip] >= cfg.hl_max_subscriptions_per_ip:
            self._refuse("hl_max_subscriptions_per_ip")
            return frames.hl_error(f"Cannot subscribe to {json.dumps(subscription)}: at most "
                                   f"{cfg.hl_max_subscriptions_per_ip} subscriptions per IP address (across its "
                                   "connections)")
        if self._subs_total >= cfg.hl_max_subscriptions_total:
            self._refuse("hl_max_subscriptions_total")
            return frames.hl_error(f"Cannot subscribe to {json.dumps(subscription)}: at most "
                                   f"{cfg.hl_max_subscriptions_total} subscriptions in all (emulator limit "
                                   "hl_max_subscriptions_total)")
        key = topic_for(subscription)
        subscribed[sid] = key
        self._ip_subs[ip] += 1
        self._subs_total += 1
        sub.arm()
        reply = frames.hl_subscription_response(method, subscription)
        if key is None:
            return reply
        # Ack first so the response precedes the first data frame.
        sub.send(reply, control=True)
        current = self.state.snapshot(key)
        if subscription["type"] == "userFills":  # the venue starts with a snapshot of fills
            fills = hyperliquid_user_fills() if subscription["user"].lower() in (
                DESK.hyperliquid_address, *DESK.hyperliquid_vaults) else []
            current = json.dumps({"channel": "userFills", "data": {
                "isSnapshot": True, "user": subscription["user"], "fills": fills}}, separators=(",", ":"))
        if current is not None:  # the venue answers a subscription with the current state
            sub.send(current)
        self.state.topics.add(key, sub)
        return None
