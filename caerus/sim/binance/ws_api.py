"""The emulated Binance USD-M WebSocket API: its method table, the connection's session, market data requests and
the rate-limit usage every answer carries.

Methods: ``time``; ``session.logon`` / ``session.status`` / ``session.logout`` (caerus.sim.binance.auth); market
data ``depth``, ``ticker.book``, ``ticker.price`` (answered by the server's REST market data through the ``market``
hook, so both agree); ``order.place`` / ``cancel`` / ``modify`` / ``status`` (caerus.sim.binance.orders);
``algoOrder.place`` / ``algoOrder.cancel`` (caerus.sim.binance.algo); ``v2/account.status | balance | position``
and ``userDataStream.start | ping | stop``. Any other method is -1000 naming it. The REST trading endpoints
(caerus.sim.binance.trading) call the same table.

Rate limits: ``rateLimits`` counts this emulator's requests in each window (orders per 10 s and per minute,
request weight per minute) and is left out when the request sets ``returnRateLimits: false``. The log behind
those counts keeps one minute (the widest window), pruned on every request whatever its flags, and at most
desk.REQUEST_LOG_MAX requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from caerus.sim.binance import algo as binance_algo
from caerus.sim.binance import orders as binance_orders
from caerus.sim.binance.auth import SESSION_METHODS, authenticate, error, session_request
from caerus.sim.core.desk import DESK

#: Binance USD-M rate limits (also in GET /fapi/v1/exchangeInfo); ``count`` is filled per reply from the desk's log
RATE_LIMITS = [
    {"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 2400},
    {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 300},
    {"rateLimitType": "ORDERS", "interval": "MINUTE", "intervalNum": 1, "limit": 1200},
]
_INTERVAL_MS = {"SECOND": 1000, "MINUTE": 60_000}
#: a market-data request the server answers: (method, params) -> (HTTP-like status, result or {"code", "msg"})
MarketData = Callable[[str, dict[str, Any]], tuple[int, Any]]
MARKET_METHODS = ("depth", "ticker.book", "ticker.price")
_ORDER_METHODS = ("order.place", "v1/order.place", "algoOrder.place")

_HANDLERS: dict[str, Callable[[dict[str, Any], int], dict[str, Any]]] = {
    "order.place": binance_orders.place, "v1/order.place": binance_orders.place,
    "order.status": binance_orders.order_status,
    "order.cancel": binance_orders.cancel, "v1/order.cancel": binance_orders.cancel,
    "order.modify": binance_orders.modify, "v1/order.modify": binance_orders.modify,
    **dict.fromkeys(("v2/account.status", "account.status", "v2/account.balance", "account.balance"),
                    binance_orders.account_request),
    "v2/account.position": binance_orders.positions, "account.position": binance_orders.positions,
    **dict.fromkeys(("userDataStream.start", "userDataStream.ping", "userDataStream.stop"),
                    lambda m, now: binance_orders.user_stream(m)),
    "algoOrder.place": binance_algo.place, "algoOrder.cancel": binance_algo.cancel,
}


def _window_ms(lim: dict[str, object]) -> int:
    return _INTERVAL_MS[str(lim["interval"])] * int(lim["intervalNum"])  # type: ignore[call-overload]


#: how long a request stays in the desk's log: the widest window any limit counts over
_WIDEST_MS = max(_window_ms(lim) for lim in RATE_LIMITS)


def _log_request(now_ms: int, is_order: bool) -> None:
    """Note one request in the desk's log and drop what has left the widest window, on every request whatever its
    flags: the log holds one window's requests, never all of them (issue 44: ``returnRateLimits: false`` used to
    skip the only pruning, so 200k ``time`` calls stayed forever). The deque's ``maxlen`` (desk.REQUEST_LOG_MAX)
    also bounds a window's worth."""
    log = DESK.requests_ms
    log.append((now_ms, is_order))
    while log and log[0][0] <= now_ms - _WIDEST_MS:
        log.popleft()


def _rate_limits(now_ms: int) -> list[dict[str, Any]]:
    """The limits with this connection's usage: requests in the last minute, orders in each order window."""
    log = DESK.requests_ms
    out = []
    for lim in RATE_LIMITS:
        window = _window_ms(lim)
        orders_only = lim["rateLimitType"] == "ORDERS"
        count = sum(1 for t, is_order in log if t > now_ms - window and (is_order or not orders_only))
        out.append({**lim, "count": count})
    return out


def binance_ws_api_response(msg: dict[str, Any], *, now_ms: int | None = None, session: dict[str, Any] | None = None,
                            market: MarketData | None = None) -> dict[str, Any]:
    """The Binance USD-M WebSocket API's answer to one request frame (already JSON-decoded), with the
    ``rateLimits`` usage unless the request set ``returnRateLimits: false``. ``session``: the connection's
    (caerus.sim.binance.auth.new_session), ``market``: the server's market data."""
    now_ms = (time.time_ns() // 1_000_000 if now_ms is None else now_ms) + DESK.binance_clock_offset_ms
    method = msg.get("method") if isinstance(msg, dict) else None
    req_id = msg.get("id") if isinstance(msg, dict) else None
    msg = authenticate(msg, session) if isinstance(msg, dict) else msg
    handler = _HANDLERS.get(method) if isinstance(method, str) else None
    if method == "time":  # NONE security: no key, no signature
        reply: dict[str, Any] = {"id": req_id, "status": 200, "result": {"serverTime": now_ms}}
    elif method in SESSION_METHODS:
        reply = session_request(msg, now_ms, session)
    elif method in MARKET_METHODS:
        reply = _market(req_id, str(method), msg.get("params"), market)
    elif handler is not None:
        reply = handler(msg, now_ms)
    else:
        reply = error(req_id, -1000, f"Unknown method {method!r}; this emulator answers {', '.join(_known())}.")
    # an accepted order counts against the order limits; every request against the request weight
    _log_request(now_ms, method in _ORDER_METHODS and "result" in reply)
    params = msg.get("params") if isinstance(msg, dict) else None
    if not (isinstance(params, dict) and params.get("returnRateLimits") in (False, "false")):
        reply["rateLimits"] = _rate_limits(now_ms)
    return reply


def _known() -> list[str]:
    return ["time", *SESSION_METHODS, *MARKET_METHODS, *(m for m in _HANDLERS if not m.startswith("v1/"))]


def _market(req_id: Any, method: str, params: Any, market: MarketData | None) -> dict[str, Any]:
    """``depth`` / ``ticker.book`` / ``ticker.price`` (NONE security), from the server's market data."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return error(req_id, -1102, "Mandatory parameter 'params' was not sent, was empty/null, or malformed.")
    if market is None:
        return error(req_id, -1000, f"{method} is answered by the emulator's WebSocket API server, which has no "
                                    "market here.")
    status, body = market(method, params)
    if status != 200:
        return {"id": req_id, "status": status, "error": body}
    return {"id": req_id, "status": 200, "result": body}
