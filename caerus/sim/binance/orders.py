"""Binance USD-M order handling in the emulator: the WebSocket API's order and account methods (the method table
is caerus.sim.binance.ws_api; the REST trading endpoints, caerus.sim.binance.trading, call the same functions), as
the venue answers them, including its rejections.

Checked, with the venue's codes (USD-M futures), after the signed-request checks of caerus.sim.binance.auth: symbol
(-1121), side / type / timeInForce (-1117 / -1116 / -1115), a conditional type (-4120: the venue's Algo Order API
takes those, caerus.sim.binance.algo), quantity > 0 (-4003), quantity step and price tick (-1111 / -4014), price >
0 (-4001), quantity above max (-1013 LOT_SIZE), GTD's goodTillDate (-1102 missing, -5040 not more than the minimum
lead ahead or past 253402300799000), minNotional -4164, duplicate open clientOrderId -4116, crossing GTX -5022,
reduce-only beyond the position -2022, PERCENT_PRICE -4016 / -4024 around the mark (caerus.sim.core.price_band).
A LIMIT IOC fills at the opposite best price if it crosses (partially when the book is smaller, ending EXPIRED),
else EXPIRED; GTC / GTD rest (NEW) unless they cross; MARKET fills at the touch (a price is -1106). Every fill pays
the account's fee (caerus.fees: taker when it crossed, maker when it rested). ``order.cancel`` (-2011 when not
open), ``order.modify`` (in place, AMENDMENT), ``order.status``, ``v2/account.status | balance | position`` and
``userDataStream.*``. Resting orders fill at their price when the market reaches them and GTD orders expire at
their time (:func:`on_book`, :func:`expire_due` on the emulator's clock). State: the shared desk (caerus.sim.core.desk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from caerus.sim.binance.auth import binance_user_data_error, error, integer, listen_key, order_request_error
from caerus.sim.core import catalogue, price_band
from caerus.sim.core.desk import (
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
from caerus.sim.core.ledger import Fill

#: every symbol the emulated Binance lists (caerus.sim.core.catalogue): its rules and its catalogue name
BINANCE_SYMBOLS: dict[str, dict[str, Any]] = {
    sym: {"tick": i.tick, "step": i.step, "max_qty": i.max_qty, "min_notional": i.min_notional, "name": i.name,
          "qty_decimals": i.qty_decimals, "price_decimals": i.price_decimals}
    for sym, i in catalogue.BINANCE.items()}


_OPEN = ("NEW", "PARTIALLY_FILLED")


def venue_now_ms() -> int:
    """The emulated Binance's clock (this host's, plus the offset tests of skew set)."""
    return time.time_ns() // 1_000_000 + DESK.binance_clock_offset_ms


def on_book(key: str, book: Book) -> None:
    """A new top of book for ``key``: GTD orders past their time expire, then the resting orders it reaches fill."""
    if DESK.binance_open.get(key):
        now_ms = venue_now_ms()
        _expire(key, now_ms)
        _match_resting(key, book, now_ms)


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
        "l": f"{lqty:.{qd}f}", "z": result["executedQty"], "L": price_text(lpx, spec) if lqty else "0", "N": "USDT",
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
        "P": [{"s": symbol, "pa": f"{amt:.{spec['qty_decimals']}f}", "ep": price_text(entry, spec),
               "bep": price_text(entry, spec),
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
                  avgPrice=price_text(quote / done, spec), updateTime=now_ms,
                  status="FILLED" if done >= float(result["origQty"]) - 1e-12 else "PARTIALLY_FILLED")
    trade_id = next(DESK.trade_ids)
    DESK.ledger.fills["binance"].appendleft({
        "buyer": result["side"] == "BUY", "commission": f"{booked.fee:.8f}", "commissionAsset": "USDT", "id": trade_id,
        "maker": maker, "orderId": result["orderId"], "price": price_text(px, spec), "qty": f"{qty:.{qd}f}",
        "quoteQty": f"{px * qty:.8f}", "realizedPnl": f"{booked.closed_pnl:.8f}", "side": result["side"],
        "positionSide": "BOTH", "symbol": result["symbol"], "time": now_ms})
    _b_order_event(result, "TRADE", now_ms, (px, qty), trade_id, booked, maker)
    _b_account_event(result["symbol"], now_ms)


def price_text(value: float, spec: dict[str, Any]) -> str:
    """A Binance price in an order answer: at least 2 decimals, more when the symbol's tick has more."""
    return f"{value:.{max(2, spec['price_decimals'])}f}"


#: conditional types the venue moved to its Algo Service (2025-12-09): ``order.place`` / ``POST /fapi/v1/order``
#: refuse them with -4120; ``algoOrder.place`` / ``POST /fapi/v1/algoOrder`` take them (caerus.sim.binance.algo)
CONDITIONAL_TYPES = ("STOP", "STOP_MARKET", "TAKE_PROFIT", "TAKE_PROFIT_MARKET", "TRAILING_STOP_MARKET")
TIME_IN_FORCE = ("GTC", "IOC", "FOK", "GTX", "GTD")
GTD_MAX_MS = 253_402_300_799_000  # the latest goodTillDate the venue takes


def looked_up(msg: dict[str, Any], now_ms: int, find: Callable[[dict[str, Any]], tuple[Any, Any]],
              view: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """A signed USER_DATA query answered with ``view`` of what ``find(msg)`` names: the USER_DATA checks' refusal,
    else find's (an unknown order: -2013), else 200 with the view."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    found, bad = find(msg)
    if found is None:
        return bad
    return {"id": msg.get("id"), "status": 200, "result": view(found)}


def symbol_and_side(req_id: Any, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the listed symbol's spec; the venue's refusal or None): an unlisted symbol (-1121), then a side that is
    neither BUY nor SELL (-1117). The spec is empty when the symbol is refused."""
    spec = BINANCE_SYMBOLS.get(params["symbol"])
    if spec is None:
        return {}, error(req_id, -1121, "Invalid symbol.")
    if params["side"] not in ("BUY", "SELL"):
        return spec, error(req_id, -1117, "Invalid side.")
    return spec, None


def gtd_refusal(req_id: Any, tif: str, params: dict[str, Any], now_ms: int) -> tuple[int, dict[str, Any] | None]:
    """(goodTillDate to keep, in whole seconds as the venue keeps it, or 0; the venue's refusal or None): GTD needs
    a goodTillDate later than now + the minimum lead (600 s on the venue) and before 253402300799000 (-5040)."""
    if tif != "GTD":
        return 0, None
    gtd = integer(params.get("goodTillDate"))
    if gtd is None:
        return 0, error(req_id, -1102, "Mandatory parameter 'goodTillDate' was not sent, was empty/null, or "
                                       "malformed.")
    if not now_ms + DESK.binance_gtd_min_lead_ms < gtd < GTD_MAX_MS:
        lead_s = DESK.binance_gtd_min_lead_ms // 1000
        return 0, error(req_id, -5040, f"The goodTillDate timestamp must be greater than the current time plus "
                                       f"{lead_s} seconds and smaller than {GTD_MAX_MS}")
    return gtd - gtd % 1000, None


def place(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.place`` (TRADE, signed): LIMIT (GTC / IOC / FOK / GTX / GTD) and MARKET, checked as the venue
    checks them; the conditional types are the Algo Service's (-4120)."""
    req_id = msg.get("id")
    bad = order_request_error(msg, now_ms, ("symbol", "side", "type", "quantity"))
    if bad is not None:
        return bad
    params = msg["params"]
    spec, bad = symbol_and_side(req_id, params)
    if bad is not None:
        return bad
    side, otype = params["side"], params["type"]
    if otype in CONDITIONAL_TYPES:
        return error(req_id, -4120, "Order type not supported for this endpoint. Please use the Algo Order API "
                                    "endpoints instead.")
    if otype not in ("LIMIT", "MARKET"):
        return error(req_id, -1116, "Invalid orderType.")
    tif = params.get("timeInForce", "GTC") if otype == "LIMIT" else "GTC"
    if tif not in TIME_IN_FORCE:
        return error(req_id, -1115, "Invalid timeInForce.")
    qty = decimal_of(params["quantity"])
    if otype == "MARKET" and params.get("price") not in (None, ""):
        return error(req_id, -1106, "Parameter 'price' sent when not required.")
    price = decimal_of(params.get("price")) if otype == "LIMIT" else Decimal(0)
    if qty is None or price is None:
        return error(req_id, -1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
    bad = check_size_and_price(req_id, spec, qty, price if otype == "LIMIT" else None)
    if bad is not None:
        return bad
    gtd, bad = gtd_refusal(req_id, tif, params, now_ms)
    if bad is not None:
        return bad
    is_buy, name = side == "BUY", spec["name"]
    band = price_band.binance_refusal(price, mark("binance", name), spec["tick"]) if otype == "LIMIT" else None
    if band is not None:
        return error(req_id, *band)
    reduce_only = params.get("reduceOnly") in (True, "true")
    book = DESK.books.get(book_key("binance", name))
    # a market order is priced at the touch it would take; before the first book it finds no liquidity (EXPIRED)
    touch = (book.ask_px if is_buy else book.bid_px) if book is not None else None
    ref = float(price) if otype == "LIMIT" else touch
    if not reduce_only and ref is not None and ref * float(qty) < float(spec["min_notional"]):
        return error(req_id, -4164, f"Order's notional must be no smaller than {spec['min_notional']} "
                                    "(unless you choose reduce only).")
    if reduce_only:
        amt, _ = position("binance", name)
        if amt == 0.0 or (amt > 0) == is_buy or float(qty) > abs(amt) + 1e-12:
            return error(req_id, -2022, "ReduceOnly Order is rejected.")
    cid = params.get("newClientOrderId") or f"sim{next(DESK.ids)}"
    prior = DESK.binance_orders.get(DESK.binance_client_ids.get(cid, -1))
    if prior is not None and prior["status"] in _OPEN:
        return error(req_id, -4116, "ClientOrderId is duplicated.")
    if tif == "GTX" and cross("binance", is_buy, float(price), float(qty), name) is not None:
        return error(req_id, -5022, "Due to the order could not be executed as maker, the Post Only order will "
                                    "be rejected. The order will not be recorded in the order history")
    result = open_order(params["symbol"], side, otype, qty, price, tif, reduce_only, cid, now_ms, gtd=gtd)
    return {"id": req_id, "status": 200, "result": dict(result)}


def check_size_and_price(req_id: Any, spec: dict[str, Any], qty: Decimal, price: Decimal | None,
                         ) -> dict[str, Any] | None:
    """The LOT_SIZE and PRICE_FILTER checks (-4003, -4001, -1111, -4014, -1013); ``price`` None for none."""
    if qty <= 0:
        return error(req_id, -4003, "Quantity less than or equal to zero.")
    if price is not None and price <= 0:
        return error(req_id, -4001, "Price less than 0.")
    if qty % spec["step"] != 0:
        return error(req_id, -1111, "Precision is over the maximum defined for this asset.")
    if price is not None and price % spec["tick"] != 0:
        return error(req_id, -4014, "Price not increased by tick size.")
    if qty > spec["max_qty"]:
        return error(req_id, -1013, "Filter failure: LOT_SIZE")
    return None


def open_order(symbol: str, side: str, otype: str, qty: Decimal, price: Decimal, tif: str, reduce_only: bool,
               cid: str, now_ms: int, *, gtd: int = 0, orig_type: str | None = None, stop_price: str = "0.00",
               working_type: str = "CONTRACT_PRICE", close_position: bool = False,
               price_protect: bool = False) -> dict[str, Any]:
    """Put an accepted order into the matching engine: its NEW event, the fill against the book when it crosses
    (taker), then EXPIRED for what an IOC / FOK / market order could not fill, or resting (GTC / GTX / GTD). A
    triggered conditional order enters here too (``orig_type`` its type, ``stop_price`` its trigger)."""
    spec = BINANCE_SYMBOLS[symbol]
    is_buy, name = side == "BUY", spec["name"]
    fill = cross("binance", is_buy, float("inf") if otype == "MARKET" and is_buy else float(price), float(qty),
                  name)
    if tif == "FOK" and fill is not None and fill[1] < float(qty):
        fill = None  # all or nothing
    result = {
        "orderId": next(DESK.ids), "symbol": symbol, "status": "NEW", "clientOrderId": cid,
        "price": str(price) if otype == "LIMIT" else "0", "avgPrice": price_text(0.0, spec), "origQty": str(qty),
        "executedQty": f"{0:.{spec['qty_decimals']}f}", "cumQty": f"{0:.{spec['qty_decimals']}f}",
        "cumQuote": f"{0:.5f}", "timeInForce": tif, "type": otype, "reduceOnly": reduce_only,
        "closePosition": close_position, "side": side, "positionSide": "BOTH", "stopPrice": stop_price,
        "workingType": working_type, "priceProtect": price_protect, "origType": orig_type or otype,
        "priceMatch": "NONE", "selfTradePreventionMode": "NONE", "goodTillDate": gtd, "updateTime": now_ms,
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
    return result


def expire_due(now_ms: int) -> None:
    """GTD orders whose goodTillDate has come, on every book: EXPIRED on the emulator's clock (the account-event
    pump calls this, so an order expires on time whether or not its market moves)."""
    for key in list(DESK.binance_open):
        _expire(key, now_ms)


def _expire(key: str, now_ms: int) -> None:
    for order_id in sorted(DESK.binance_open[key]):
        result = DESK.binance_orders.get(order_id)
        if result is not None and result["timeInForce"] == "GTD" and 0 < result["goodTillDate"] <= now_ms \
                and result["status"] in _OPEN:
            result.update(status="EXPIRED", updateTime=now_ms)
            _b_order_event(result, "EXPIRED", now_ms)
            DESK.binance_open[key].discard(order_id)


def find_order(msg: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the order a cancel / modify / status names by ``orderId`` or ``origClientOrderId``, None) or (None, the
    error answer)."""
    req_id, params = msg.get("id"), msg["params"]
    if params.get("symbol") in (None, ""):
        return None, error(req_id, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or "
                                             "malformed.")
    order_id = integer(params.get("orderId"))
    if order_id is None and isinstance(params.get("origClientOrderId"), str):
        order_id = DESK.binance_client_ids.get(params["origClientOrderId"])
    if order_id is None and "orderId" not in params and "origClientOrderId" not in params:
        return None, error(req_id, -1102, "Param 'origClientOrderId' or 'orderId' must be sent, but both were "
                                             "empty/null!")
    result = DESK.binance_orders.get(order_id) if order_id is not None else None
    if result is None or result["symbol"] != params["symbol"]:
        return None, error(req_id, -2013, "Order does not exist.")
    return result, None


def cancel(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.cancel`` (TRADE, signed): an open order becomes CANCELED (its event on the user stream); any other
    order is -2011 Unknown order sent."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    result, bad = find_order(msg)
    if bad is not None and bad["error"]["code"] == -2013:
        return error(msg.get("id"), -2011, "Unknown order sent.")
    if result is None:
        return bad  # type: ignore[return-value]
    if result["status"] not in _OPEN:
        return error(msg.get("id"), -2011, "Unknown order sent.")
    result.update(status="CANCELED", updateTime=now_ms)
    DESK.binance_open[book_key("binance", BINANCE_SYMBOLS[result["symbol"]]["name"])].discard(result["orderId"])
    _b_order_event(result, "CANCELED", now_ms)
    return {"id": msg.get("id"), "status": 200, "result": dict(result)}


def modify(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.modify`` (TRADE, signed): a resting LIMIT order's price and quantity change in place (same
    orderId, an AMENDMENT event); it fills at once if the new price crosses the book."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    req_id, params = msg.get("id"), msg["params"]
    for name in ("side", "quantity", "price"):
        if params.get(name) in (None, ""):
            return error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or "
                                           "malformed.")
    result, bad = find_order(msg)
    if result is None:
        return bad  # type: ignore[return-value]
    if result["status"] not in _OPEN:
        return error(req_id, -2013, "Order does not exist.")
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qty, price = decimal_of(params["quantity"]), decimal_of(params["price"])
    if qty is None or price is None or params["side"] != result["side"]:
        return error(req_id, -1102, "Mandatory parameter 'side', 'quantity' or 'price' was malformed.")
    if price % spec["tick"] != 0:
        return error(req_id, -4014, "Price not increased by tick size.")
    if qty % spec["step"] != 0 or qty <= Decimal(result["executedQty"]):
        return error(req_id, -1111, "Precision is over the maximum defined for this asset.")
    band = price_band.binance_refusal(price, mark("binance", spec["name"]), spec["tick"])
    if band is not None:
        return error(req_id, *band)
    if str(price) == result["price"] and str(qty) == result["origQty"]:
        return error(req_id, -5027, "No need to modify the order.")
    result.update(price=str(price), origQty=str(qty), updateTime=now_ms)
    _b_order_event(result, "AMENDMENT", now_ms)
    book = DESK.books.get(book_key("binance", spec["name"]))
    if book is not None:
        _match_resting(book_key("binance", spec["name"]), book, now_ms)
    return {"id": req_id, "status": 200, "result": dict(result)}



def user_stream(msg: dict[str, Any]) -> dict[str, Any]:
    """``userDataStream.start | ping | stop`` (USER_STREAM: API key only, no signature): the listen key whose
    events the ``/private`` route streams."""
    req_id, params = msg.get("id"), msg.get("params")
    key = listen_key(params.get("apiKey") if isinstance(params, dict) else None)
    if key is None:
        return error(req_id, -2015, "Invalid API-key, IP, or permissions for action.", status=401)
    if msg.get("method") == "userDataStream.stop":
        DESK.listen_keys.discard(key)
        return {"id": req_id, "status": 200, "result": {}}
    return {"id": req_id, "status": 200, "result": {"listenKey": key}}


def positions(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``v2/account.position`` (USER_DATA): the desk's position per symbol (one-way mode, ``positionSide``
    BOTH), every symbol when ``symbol`` is absent."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    params = msg["params"]
    symbol = params.get("symbol")
    if symbol is not None and symbol not in BINANCE_SYMBOLS:
        return error(msg.get("id"), -1121, "Invalid symbol.")
    out = [_binance_position(name, spec, now_ms) for name, spec in BINANCE_SYMBOLS.items()
           if symbol in (None, name)]
    return {"id": msg.get("id"), "status": 200, "result": out}


def _binance_position(symbol: str, spec: dict[str, Any], now_ms: int) -> dict[str, Any]:
    amt, entry = position("binance", spec["name"])
    m = mark("binance", spec["name"])
    px = m if m is not None else entry
    return {"symbol": symbol, "positionSide": "BOTH", "positionAmt": f"{amt:.{spec['qty_decimals']}f}",
            "entryPrice": price_text(entry, spec), "breakEvenPrice": price_text(entry, spec),
            "markPrice": price_text(px, spec),
            "unRealizedProfit": f"{(px - entry) * amt:.8f}", "liquidationPrice": "0", "isolatedMargin": "0",
            "notional": f"{px * amt:.8f}", "marginAsset": "USDT", "isolatedWallet": "0",
            "initialMargin": "0", "maintMargin": "0", "positionInitialMargin": "0", "openOrderInitialMargin": "0",
            "adl": 0, "bidNotional": "0", "askNotional": "0", "updateTime": now_ms}


def order_status(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.status`` (USER_DATA, signed): the order as it now stands, by ``orderId`` or ``origClientOrderId``;
    -2013 when this desk never took it."""
    return looked_up(msg, now_ms, find_order, lambda result: {**result, "time": result["updateTime"]})


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


def account_request(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    balance = str(msg.get("method")).endswith("balance")
    return {"id": msg.get("id"), "status": 200,
            "result": binance_balance(now_ms) if balance else binance_account(now_ms)}
