"""Binance USD-M order handling in the emulator: the WebSocket API's order and account methods (the REST trading
endpoints, caerus.sim.binance_trading, call them too), as the venue answers them, including its rejections.

Checked, with the venue's codes (USD-M futures): method (-1000 unknown), apiKey known (-2015, HTTP 401), mandatory
params (-1102), signature over the sorted params with the configured HMAC secret or Ed25519 public key (-1022),
``timestamp`` within ``recvWindow`` (-1021; a window over 60000 is -1131), symbol (-1121), side / type /
timeInForce (-1117 / -1116 / -1115), quantity > 0 (-4003), quantity step and price tick (-1111 / -4014), price > 0
(-4001), quantity above max (-1013 LOT_SIZE), minNotional -4164, duplicate open clientOrderId -4116, crossing GTX
-5022, reduce-only beyond the position -2022, PERCENT_PRICE -4016 / -4024 around the mark (caerus.sim.price_band).
A LIMIT IOC fills at the opposite best price if it crosses (partially when the book is smaller, ending EXPIRED),
else EXPIRED; GTC rests (NEW) unless it crosses; MARKET fills at the touch (a price is -1106). ``order.cancel``
(-2011 when not open), ``order.modify`` (in place, AMENDMENT), ``order.status``, ``v2/account.status | balance |
position`` and ``userDataStream.*``. Resting orders fill at their price when the market reaches them
(:func:`on_book`). State: the shared desk (caerus.sim.desk).
"""

from __future__ import annotations

import secrets
import time
from decimal import Decimal
from typing import Any

from caerus.sim import catalogue, price_band
from caerus.sim.desk import (
    DESK,
    Book,
    book_fill,
    book_key,
    cross,
    decimal_of,
    fee_tier,
    forget_oldest,
    mark,
    position,
)
from caerus.sim.ledger import Fill
from caerus.sim.verify import binance_signature_ok

#: every symbol the emulated Binance lists (caerus.sim.catalogue): its rules and its catalogue name
BINANCE_SYMBOLS: dict[str, dict[str, Any]] = {
    sym: {"tick": i.tick, "step": i.step, "max_qty": i.max_qty, "min_notional": i.min_notional, "name": i.name,
          "qty_decimals": i.qty_decimals, "price_decimals": i.price_decimals}
    for sym, i in catalogue.BINANCE.items()}


#: Binance USD-M rate limits (also in GET /fapi/v1/exchangeInfo); ``count`` is filled per reply from the desk's log
RATE_LIMITS = [
    {"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 2400},
    {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 300},
    {"rateLimitType": "ORDERS", "interval": "MINUTE", "intervalNum": 1, "limit": 1200},
]


_INTERVAL_MS = {"SECOND": 1000, "MINUTE": 60_000}


def _window_ms(lim: dict[str, object]) -> int:
    return _INTERVAL_MS[str(lim["interval"])] * int(lim["intervalNum"])  # type: ignore[call-overload]


#: how long a request stays in the desk's log: the widest window any limit counts over
_WIDEST_MS = max(_window_ms(lim) for lim in RATE_LIMITS)


_PLACE = ("order.place", "v1/order.place")


_OPEN = ("NEW", "PARTIALLY_FILLED")


MAX_RECV_WINDOW_MS = 60_000


#: marks a request whose signature the REST layer already checked over the query string as sent (an object no
#: JSON frame can carry, so a WebSocket client cannot claim it)
REST_VERIFIED = object()


def on_book(key: str, book: Book) -> None:
    """A new top of book for ``key``: the resting orders it reaches fill."""
    if DESK.binance_open.get(key):
        _match_resting(key, book, time.time_ns() // 1_000_000)


def _match_resting(key: str, book: Book, now_ms: int) -> None:
    """Fill the resting orders the market moved through: a buy at or above the ask, a sell at or below the bid,
    at the order's own price (it was the maker), up to the touch's size."""
    for order_id in sorted(DESK.binance_open[key]):
        result = DESK.binance_orders.get(order_id)
        if result is None or result["status"] not in ("NEW", "PARTIALLY_FILLED"):
            DESK.binance_open[key].discard(order_id)
            continue
        px, left = float(result["price"]), float(result["origQty"]) - float(result["executedQty"])
        is_buy = result["side"] == "BUY"
        if (is_buy and book.ask_px <= px) or (not is_buy and book.bid_px >= px):
            qty = min(left, book.ask_qty if is_buy else book.bid_qty)
            if qty > 0:
                _b_trade(result, px, round(qty, 8), now_ms, maker=True)
                if result["status"] == "FILLED":
                    DESK.binance_open[key].discard(order_id)


def _b_order_event(result: dict[str, Any], x: str, now_ms: int, last: tuple[float, float] = (0.0, 0.0),
                   trade_id: int = 0, booked: Fill | None = None, maker: bool = False) -> None:
    """One ORDER_TRADE_UPDATE (execution type ``x``) for the order as it now stands; ``last`` is (price, qty) of
    the fill a TRADE event reports and ``booked`` what that fill did to the account (realised PnL ``rp``, the
    commission ``n`` in ``N``)."""
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qd = spec["qty_decimals"]
    lpx, lqty = last
    realised, commission = (booked.closed_pnl, booked.fee) if booked is not None else (0.0, 0.0)
    DESK.events["binance"].append({"e": "ORDER_TRADE_UPDATE", "E": now_ms, "T": now_ms, "o": {
        "s": result["symbol"], "c": result["clientOrderId"], "S": result["side"], "o": result["type"],
        "f": result["timeInForce"], "q": result["origQty"], "p": result["price"],
        "ap": result["avgPrice"], "sp": result["stopPrice"], "x": x, "X": result["status"], "i": result["orderId"],
        "l": f"{lqty:.{qd}f}", "z": result["executedQty"], "L": _px(lpx, spec) if lqty else "0", "N": "USDT",
        "n": f"{commission:.8f}" if booked is not None else "0", "T": now_ms, "t": trade_id, "b": "0", "a": "0",
        "m": maker, "R": result["reduceOnly"], "wt": result["workingType"], "ot": result["origType"], "ps": "BOTH",
        "cp": result["closePosition"], "rp": f"{realised:.8f}", "pP": result["priceProtect"], "si": 0, "ss": 0,
        "V": "NONE", "pm": "NONE", "gtd": result["goodTillDate"]}})


def _b_account_event(symbol: str, now_ms: int) -> None:
    """ACCOUNT_UPDATE after a fill: the wallet balance and the symbol's position, from the ledger."""
    spec = BINANCE_SYMBOLS[symbol]
    key = book_key("binance", spec["name"])
    amt, entry = DESK.ledger.position(key)
    wallet = f"{DESK.ledger.wallet('binance'):.8f}"
    upnl = DESK.ledger.unrealised(key, mark("binance", spec["name"]))
    DESK.events["binance"].append({"e": "ACCOUNT_UPDATE", "E": now_ms, "T": now_ms, "a": {
        "m": "ORDER", "B": [{"a": "USDT", "wb": wallet, "cw": wallet, "bc": "0"}],
        "P": [{"s": symbol, "pa": f"{amt:.{spec['qty_decimals']}f}", "ep": _px(entry, spec), "bep": _px(entry, spec),
               "cr": f"{DESK.ledger.realised['binance']:.8f}", "up": f"{upnl:.8f}",
               "mt": "cross" if DESK.ledger.leverage_of(key)[1] else "isolated", "iw": "0", "ps": "BOTH"}]}})


def _b_trade(result: dict[str, Any], px: float, qty: float, now_ms: int, *, maker: bool) -> None:
    """Book one fill of a Binance order: the ledger, the order's executed quantity, average price and status, and
    the TRADE and ACCOUNT_UPDATE events."""
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qd = spec["qty_decimals"]
    booked = book_fill("binance", result["side"] == "BUY", px, qty, spec["name"], maker=maker)
    done = float(result["executedQty"]) + qty
    quote = float(result["cumQuote"]) + px * qty
    result.update(executedQty=f"{done:.{qd}f}", cumQty=f"{done:.{qd}f}", cumQuote=f"{quote:.5f}",
                  avgPrice=_px(quote / done, spec), updateTime=now_ms,
                  status="FILLED" if done >= float(result["origQty"]) - 1e-12 else "PARTIALLY_FILLED")
    trade_id = next(DESK.trade_ids)
    DESK.ledger.fills["binance"].appendleft({
        "buyer": result["side"] == "BUY", "commission": f"{booked.fee:.8f}", "commissionAsset": "USDT", "id": trade_id,
        "maker": maker, "orderId": result["orderId"], "price": _px(px, spec), "qty": f"{qty:.{qd}f}",
        "quoteQty": f"{px * qty:.8f}", "realizedPnl": f"{booked.closed_pnl:.8f}", "side": result["side"],
        "positionSide": "BOTH", "symbol": result["symbol"], "time": now_ms})
    _b_order_event(result, "TRADE", now_ms, (px, qty), trade_id, booked, maker)
    _b_account_event(result["symbol"], now_ms)


def _px(value: float, spec: dict[str, Any]) -> str:
    """A Binance price in an order answer: at least 2 decimals, more when the symbol's tick has more."""
    return f"{value:.{max(2, spec['price_decimals'])}f}"


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


def _b_error(req_id: Any, code: int, msg: str, status: int = 400) -> dict[str, Any]:
    return {"id": req_id, "status": status, "error": {"code": code, "msg": msg}}


def _integer(v: Any) -> int | None:
    """An integer from a JSON number or a string of digits, else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def binance_ws_api_response(msg: dict[str, Any], *, now_ms: int | None = None) -> dict[str, Any]:
    """The Binance USD-M WebSocket API's answer to one request frame (already JSON-decoded), with the
    ``rateLimits`` usage unless the request set ``returnRateLimits: false``."""
    now_ms = (time.time_ns() // 1_000_000 if now_ms is None else now_ms) + DESK.binance_clock_offset_ms
    method = msg.get("method") if isinstance(msg, dict) else None
    if method == "time":  # NONE security: no key, no signature
        reply: dict[str, Any] = {"id": msg.get("id"), "status": 200, "result": {"serverTime": now_ms}}
    elif method == "order.status":
        reply = _binance_order_status(msg, now_ms)
    elif method in ("order.cancel", "v1/order.cancel"):
        reply = _binance_cancel(msg, now_ms)
    elif method in ("order.modify", "v1/order.modify"):
        reply = _binance_modify(msg, now_ms)
    elif method in ("v2/account.status", "account.status", "v2/account.balance", "account.balance"):
        reply = _binance_account(msg, now_ms)
    elif method in ("v2/account.position", "account.position"):
        reply = _binance_positions(msg, now_ms)
    elif method in ("userDataStream.start", "userDataStream.ping", "userDataStream.stop"):
        reply = _binance_user_stream(msg)
    else:
        reply = _binance_answer(msg, now_ms)
    # an accepted order counts against the order limits; every request against the request weight
    _log_request(now_ms, method in ("order.place", "v1/order.place") and "result" in reply)
    params = msg.get("params") if isinstance(msg, dict) else None
    if not (isinstance(params, dict) and params.get("returnRateLimits") in (False, "false")):
        reply["rateLimits"] = _rate_limits(now_ms)
    return reply


def _binance_answer(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    req_id = msg.get("id") if isinstance(msg, dict) else None
    method = msg.get("method") if isinstance(msg, dict) else None
    if method not in _PLACE:
        return _b_error(req_id, -1000, f"Unknown method {method!r}; this emulator answers order.place, "
                                       "order.cancel, order.modify, order.status, v2/account.position, "
                                       "v2/account.status, v2/account.balance, userDataStream.* and time only.")
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    params = msg["params"]
    for name in ("symbol", "side", "type", "quantity"):
        if params.get(name) in (None, ""):
            return _b_error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or "
                                           "malformed.")
    spec = BINANCE_SYMBOLS.get(params["symbol"])
    if spec is None:
        return _b_error(req_id, -1121, "Invalid symbol.")
    side, otype = params["side"], params["type"]
    if side not in ("BUY", "SELL"):
        return _b_error(req_id, -1117, "Invalid side.")
    if otype not in ("LIMIT", "MARKET"):
        return _b_error(req_id, -1116, "Invalid orderType.")
    tif = params.get("timeInForce", "GTC") if otype == "LIMIT" else "GTC"
    if tif not in ("GTC", "IOC", "FOK", "GTX"):
        return _b_error(req_id, -1115, "Invalid timeInForce.")
    qty = decimal_of(params["quantity"])
    if otype == "MARKET" and params.get("price") not in (None, ""):
        return _b_error(req_id, -1106, "Parameter 'price' sent when not required.")
    price = decimal_of(params.get("price")) if otype == "LIMIT" else Decimal(0)
    if qty is None or price is None:
        return _b_error(req_id, -1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
    if qty <= 0:
        return _b_error(req_id, -4003, "Quantity less than or equal to zero.")
    if otype == "LIMIT" and price <= 0:
        return _b_error(req_id, -4001, "Price less than 0.")
    if qty % spec["step"] != 0:
        return _b_error(req_id, -1111, "Precision is over the maximum defined for this asset.")
    if price % spec["tick"] != 0:
        return _b_error(req_id, -4014, "Price not increased by tick size.")
    if qty > spec["max_qty"]:
        return _b_error(req_id, -1013, "Filter failure: LOT_SIZE")
    is_buy, name = side == "BUY", spec["name"]
    band = price_band.binance_refusal(price, mark("binance", name), spec["tick"]) if otype == "LIMIT" else None
    if band is not None:
        return _b_error(req_id, *band)
    reduce_only = params.get("reduceOnly") in (True, "true")
    book = DESK.books.get(book_key("binance", name))
    # a market order is priced at the touch it would take; before the first book it finds no liquidity (EXPIRED)
    touch = (book.ask_px if is_buy else book.bid_px) if book is not None else None
    ref = float(price) if otype == "LIMIT" else touch
    if not reduce_only and ref is not None and ref * float(qty) < float(spec["min_notional"]):
        return _b_error(req_id, -4164, f"Order's notional must be no smaller than {spec['min_notional']} "
                                       "(unless you choose reduce only).")
    if reduce_only:
        amt, _ = position("binance", name)
        if amt == 0.0 or (amt > 0) == is_buy or float(qty) > abs(amt) + 1e-12:
            return _b_error(req_id, -2022, "ReduceOnly Order is rejected.")
    cid = params.get("newClientOrderId") or f"sim{next(DESK.ids)}"
    prior = DESK.binance_orders.get(DESK.binance_client_ids.get(cid, -1))
    if prior is not None and prior["status"] in _OPEN:
        return _b_error(req_id, -4116, "ClientOrderId is duplicated.")
    fill = cross("binance", is_buy, float("inf") if otype == "MARKET" and is_buy else float(price), float(qty),
                  name)
    if tif == "GTX" and fill is not None:
        return _b_error(req_id, -5022, "Due to the order could not be executed as maker, the Post Only order will "
                                       "be rejected. The order will not be recorded in the order history")
    if tif == "FOK" and fill is not None and fill[1] < float(qty):
        fill = None  # all or nothing
    result = {
        "orderId": next(DESK.ids), "symbol": params["symbol"], "status": "NEW", "clientOrderId": cid,
        "price": str(price) if otype == "LIMIT" else "0", "avgPrice": _px(0.0, spec), "origQty": str(qty),
        "executedQty": f"{0:.{spec['qty_decimals']}f}", "cumQty": f"{0:.{spec['qty_decimals']}f}",
        "cumQuote": f"{0:.5f}", "timeInForce": tif, "type": otype, "reduceOnly": reduce_only,
        "closePosition": False, "side": side, "positionSide": "BOTH", "stopPrice": "0.00",
        "workingType": "CONTRACT_PRICE", "priceProtect": False, "origType": otype, "priceMatch": "NONE",
        "selfTradePreventionMode": "NONE", "goodTillDate": 0, "updateTime": now_ms,
    }
    DESK.binance_orders[result["orderId"]] = result
    DESK.binance_client_ids[cid] = result["orderId"]
    forget_oldest(DESK.binance_orders, DESK.binance_client_ids)
    _b_order_event(result, "NEW", now_ms)
    if fill is not None:
        _b_trade(result, fill[0], fill[1], now_ms, maker=False)
    if result["status"] in _OPEN and (otype == "MARKET" or tif in ("IOC", "FOK")):
        result["status"] = "EXPIRED"  # what an IOC / FOK / market order could not fill at once
        _b_order_event(result, "EXPIRED", now_ms)
    elif result["status"] in _OPEN:
        DESK.binance_open[book_key("binance", name)].add(result["orderId"])
    return {"id": req_id, "status": 200, "result": dict(result)}


def _binance_find(msg: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the order a cancel / modify / status names by ``orderId`` or ``origClientOrderId``, None) or (None, the
    error answer)."""
    req_id, params = msg.get("id"), msg["params"]
    if params.get("symbol") in (None, ""):
        return None, _b_error(req_id, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or "
                                             "malformed.")
    order_id = _integer(params.get("orderId"))
    if order_id is None and isinstance(params.get("origClientOrderId"), str):
        order_id = DESK.binance_client_ids.get(params["origClientOrderId"])
    if order_id is None and "orderId" not in params and "origClientOrderId" not in params:
        return None, _b_error(req_id, -1102, "Param 'origClientOrderId' or 'orderId' must be sent, but both were "
                                             "empty/null!")
    result = DESK.binance_orders.get(order_id) if order_id is not None else None
    if result is None or result["symbol"] != params["symbol"]:
        return None, _b_error(req_id, -2013, "Order does not exist.")
    return result, None


def _binance_cancel(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.cancel`` (TRADE, signed): an open order becomes CANCELED (its event on the user stream); any other
    order is -2011 Unknown order sent."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    result, bad = _binance_find(msg)
    if bad is not None and bad["error"]["code"] == -2013:
        return _b_error(msg.get("id"), -2011, "Unknown order sent.")
    if result is None:
        return bad  # type: ignore[return-value]
    if result["status"] not in _OPEN:
        return _b_error(msg.get("id"), -2011, "Unknown order sent.")
    result.update(status="CANCELED", updateTime=now_ms)
    DESK.binance_open[book_key("binance", BINANCE_SYMBOLS[result["symbol"]]["name"])].discard(result["orderId"])
    _b_order_event(result, "CANCELED", now_ms)
    return {"id": msg.get("id"), "status": 200, "result": dict(result)}


def _binance_modify(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.modify`` (TRADE, signed): a resting LIMIT order's price and quantity change in place (same
    orderId, an AMENDMENT event); it fills at once if the new price crosses the book."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    req_id, params = msg.get("id"), msg["params"]
    for name in ("side", "quantity", "price"):
        if params.get(name) in (None, ""):
            return _b_error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or "
                                           "malformed.")
    result, bad = _binance_find(msg)
    if result is None:
        return bad  # type: ignore[return-value]
    if result["status"] not in _OPEN:
        return _b_error(req_id, -2013, "Order does not exist.")
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qty, price = decimal_of(params["quantity"]), decimal_of(params["price"])
    if qty is None or price is None or params["side"] != result["side"]:
        return _b_error(req_id, -1102, "Mandatory parameter 'side', 'quantity' or 'price' was malformed.")
    if price % spec["tick"] != 0:
        return _b_error(req_id, -4014, "Price not increased by tick size.")
    if qty % spec["step"] != 0 or qty <= Decimal(result["executedQty"]):
        return _b_error(req_id, -1111, "Precision is over the maximum defined for this asset.")
    band = price_band.binance_refusal(price, mark("binance", spec["name"]), spec["tick"])
    if band is not None:
        return _b_error(req_id, *band)
    if str(price) == result["price"] and str(qty) == result["origQty"]:
        return _b_error(req_id, -5027, "No need to modify the order.")
    result.update(price=str(price), origQty=str(qty), updateTime=now_ms)
    _b_order_event(result, "AMENDMENT", now_ms)
    book = DESK.books.get(book_key("binance", spec["name"]))
    if book is not None:
        _match_resting(book_key("binance", spec["name"]), book, now_ms)
    return {"id": req_id, "status": 200, "result": dict(result)}



def binance_user_data_error(msg: dict[str, Any], now_ms: int) -> dict[str, Any] | None:
    """The checks every signed USER_DATA request passes (key, signature, time window); None when it passes."""
    req_id = msg.get("id")
    params = msg.get("params")
    if not isinstance(params, dict):
        return _b_error(req_id, -1102, "Mandatory parameter 'params' was not sent, was empty/null, or malformed.")
    if not params.get("apiKey") or params.get("apiKey") != DESK.binance_api_key:
        return _b_error(req_id, -2015, "Invalid API-key, IP, or permissions for action.", status=401)
    for name in ("timestamp", "signature"):
        if params.get(name) in (None, ""):
            return _b_error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or "
                                           "malformed.")
    if msg.get("verified") is not REST_VERIFIED and not binance_signature_ok(
            params, hmac_secret=DESK.binance_hmac_secret, ed25519_public_key=DESK.binance_ed25519_public_key):
        return _b_error(req_id, -1022, "Signature for this request is not valid.")
    ts, window = _integer(params.get("timestamp")), _integer(params.get("recvWindow", 5000))
    if ts is None or window is None:
        return _b_error(req_id, -1102, "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.")
    if window > MAX_RECV_WINDOW_MS:
        return _b_error(req_id, -1131, "recvWindow must be less than 60000")
    if ts >= now_ms + 1000 or now_ms - ts > window:
        return _b_error(req_id, -1021, "Timestamp for this request is outside of the recvWindow.")
    return None


def listen_key(api_key: str | None) -> str | None:
    """The account's user-data listen key (one per account, kept while valid); None for an unknown API key."""
    if DESK.binance_api_key is None or api_key != DESK.binance_api_key:
        return None
    if not DESK.listen_keys:
        DESK.listen_keys.add(secrets.token_urlsafe(48)[:64])
    return next(iter(DESK.listen_keys))


def _binance_user_stream(msg: dict[str, Any]) -> dict[str, Any]:
    """``userDataStream.start | ping | stop`` (USER_STREAM: API key only, no signature): the listen key whose
    events the ``/private`` route streams."""
    req_id, params = msg.get("id"), msg.get("params")
    key = listen_key(params.get("apiKey") if isinstance(params, dict) else None)
    if key is None:
        return _b_error(req_id, -2015, "Invalid API-key, IP, or permissions for action.", status=401)
    if msg.get("method") == "userDataStream.stop":
        DESK.listen_keys.discard(key)
        return {"id": req_id, "status": 200, "result": {}}
    return {"id": req_id, "status": 200, "result": {"listenKey": key}}


def _binance_positions(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``v2/account.position`` (USER_DATA): the desk's position per symbol (one-way mode, ``positionSide``
    BOTH), every symbol when ``symbol`` is absent."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    params = msg["params"]
    symbol = params.get("symbol")
    if symbol is not None and symbol not in BINANCE_SYMBOLS:
        return _b_error(msg.get("id"), -1121, "Invalid symbol.")
    out = [_binance_position(name, spec, now_ms) for name, spec in BINANCE_SYMBOLS.items()
           if symbol in (None, name)]
    return {"id": msg.get("id"), "status": 200, "result": out}


def _binance_position(symbol: str, spec: dict[str, Any], now_ms: int) -> dict[str, Any]:
    amt, entry = position("binance", spec["name"])
    m = mark("binance", spec["name"])
    px = m if m is not None else entry
    return {"symbol": symbol, "positionSide": "BOTH", "positionAmt": f"{amt:.{spec['qty_decimals']}f}",
            "entryPrice": _px(entry, spec), "breakEvenPrice": _px(entry, spec), "markPrice": _px(px, spec),
            "unRealizedProfit": f"{(px - entry) * amt:.8f}", "liquidationPrice": "0", "isolatedMargin": "0",
            "notional": f"{px * amt:.8f}", "marginAsset": "USDT", "isolatedWallet": "0",
            "initialMargin": "0", "maintMargin": "0", "positionInitialMargin": "0", "openOrderInitialMargin": "0",
            "adl": 0, "bidNotional": "0", "askNotional": "0", "updateTime": now_ms}


def _binance_order_status(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.status`` (USER_DATA, signed): the order as it now stands, by ``orderId`` or ``origClientOrderId``;
    -2013 when this desk never took it."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    result, bad = _binance_find(msg)
    if result is None:
        return bad  # type: ignore[return-value]
    return {"id": msg.get("id"), "status": 200, "result": {**result, "time": result["updateTime"]}}


def binance_account(now_ms: int) -> dict[str, Any]:
    """The USDT account as ``v2/account.status`` and ``GET /fapi/v2|v3/account`` show it, from the ledger:
    wallet = start + realised PnL - commissions paid, unrealised PnL at the marks, initial margin = notional /
    leverage; ``feeTier`` the VIP level the emulator charges (caerus.fees)."""
    upnl = margin = 0.0
    positions = []
    for symbol, spec in BINANCE_SYMBOLS.items():
        key = book_key("binance", spec["name"])
        amt, _ = DESK.ledger.position(key)
        if amt == 0.0:
            continue
        m = mark("binance", spec["name"]) or 0.0
        upnl += DESK.ledger.unrealised(key, m)
        im = abs(amt) * m / DESK.ledger.leverage_of(key)[0]
        margin += im
        positions.append({"symbol": symbol, "positionSide": "BOTH", "positionAmt": f"{amt:.{spec['qty_decimals']}f}",
                          "unrealizedProfit": f"{DESK.ledger.unrealised(key, m):.8f}", "isolatedMargin": "0",
                          "notional": f"{amt * m:.8f}", "isolatedWallet": "0", "initialMargin": f"{im:.8f}",
                          "maintMargin": f"{im / 4:.8f}", "updateTime": now_ms})
    wallet = DESK.ledger.wallet("binance")
    equity = wallet + upnl
    avail = max(0.0, equity - margin)
    asset = {"asset": "USDT", "walletBalance": f"{wallet:.8f}", "unrealizedProfit": f"{upnl:.8f}",
             "marginBalance": f"{equity:.8f}", "maintMargin": f"{margin / 4:.8f}", "initialMargin": f"{margin:.8f}",
             "positionInitialMargin": f"{margin:.8f}", "openOrderInitialMargin": "0.00000000",
             "crossWalletBalance": f"{wallet:.8f}", "crossUnPnl": f"{upnl:.8f}", "availableBalance": f"{avail:.8f}",
             "maxWithdrawAmount": f"{avail:.8f}", "updateTime": now_ms}
    return {"feeTier": DESK.fee_tiers["binance"], "feeBurn": False, "canTrade": True, "canDeposit": True,
            "canWithdraw": True, "multiAssetsMargin": False, "tradeGroupId": -1,
            "totalInitialMargin": f"{margin:.8f}", "totalMaintMargin": f"{margin / 4:.8f}",
            "totalWalletBalance": f"{wallet:.8f}", "totalUnrealizedProfit": f"{upnl:.8f}",
            "totalMarginBalance": f"{equity:.8f}", "totalPositionInitialMargin": f"{margin:.8f}",
            "totalOpenOrderInitialMargin": "0.00000000", "totalCrossWalletBalance": f"{wallet:.8f}",
            "totalCrossUnPnl": f"{upnl:.8f}", "availableBalance": f"{avail:.8f}",
            "maxWithdrawAmount": f"{avail:.8f}", "assets": [asset], "positions": positions}


def binance_commission_rate(symbol: str) -> dict[str, Any]:
    """``GET /fapi/v1/commissionRate``: the maker / taker rates of the account's tier (caerus.fees)."""
    tier = fee_tier("binance")
    return {"symbol": symbol, "makerCommissionRate": _rate(tier.maker_rate),
            "takerCommissionRate": _rate(tier.taker_rate), "rpiCommissionRate": _rate(0.0)}


def _rate(rate: float) -> str:
    """A fee rate as the venue prints one: ``0.0002``, ``0.0005`` (no trailing zeros, at least one decimal)."""
    text = f"{rate:.8f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def binance_balance(now_ms: int) -> list[dict[str, Any]]:
    """``v2/account.balance`` and ``GET /fapi/v2|v3/balance``: the USDT balance row."""
    acct = binance_account(now_ms)
    return [{"accountAlias": "SgsR", "asset": "USDT", "balance": acct["totalWalletBalance"],
             "crossWalletBalance": acct["totalCrossWalletBalance"], "crossUnPnl": acct["totalCrossUnPnl"],
             "availableBalance": acct["availableBalance"], "maxWithdrawAmount": acct["maxWithdrawAmount"],
             "marginAvailable": True, "updateTime": now_ms}]


def _binance_account(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    balance = str(msg.get("method")).endswith("balance")
    return {"id": msg.get("id"), "status": 200,
            "result": binance_balance(now_ms) if balance else binance_account(now_ms)}
