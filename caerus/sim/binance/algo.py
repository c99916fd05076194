"""Binance USD-M conditional orders in the emulator: the Algo Service's STOP_MARKET, TAKE_PROFIT_MARKET, STOP and
TAKE_PROFIT, triggered and expired on the emulator's clock, as the venue answers them.

Since 2025-12-09 the venue takes conditional orders only through its Algo Order API (``POST /fapi/v1/algoOrder``,
WebSocket API ``algoOrder.place``; ``order.place`` / ``POST /fapi/v1/order`` refuse them with -4120, see
caerus.sim.binance.orders): ``algoType=CONDITIONAL``, ``triggerPrice``, ``workingType`` (``CONTRACT_PRICE``, the
default: the last trade price; ``MARK_PRICE``: the mark, caerus.sim.core.marks), ``timeInForce`` (GTD with
``goodTillDate``), ``price`` for STOP / TAKE_PROFIT, ``quantity`` or ``closePosition``, ``reduceOnly``,
``clientAlgoId``. Trigger rules (the venue's): STOP / STOP_MARKET buy when the watched price >= triggerPrice, sell
when <= it; TAKE_PROFIT / TAKE_PROFIT_MARKET buy when <= it, sell when >= it. Triggered, the order enters the
matching engine (caerus.sim.binance.orders.open_order: MARKET, or LIMIT at ``price``; ``origType`` the conditional
type) and pays the taker fee when it takes liquidity.

Refusals, with the venue's codes: algoType not CONDITIONAL -1130, a type that is not conditional -1116,
TRAILING_STOP_MARKET (not modelled here, named as such) -1000, triggerPrice missing -1102, off the tick -4014,
workingType -4031, price sent with a MARKET type -1106 / missing for STOP and TAKE_PROFIT -1102, closePosition with
a limit type -4136, with a quantity -4137, with reduceOnly -1106, a trigger the market already passed -2021 "Order
would immediately trigger.", GTD rules -5040, minimum notional -4164, a clientAlgoId of an open algo order -4116.

User stream: ``ALGO_UPDATE`` per status (NEW, CANCELED, TRIGGERING, TRIGGERED with the order id ``ai``, FINISHED when
that order has ended, EXPIRED at goodTillDate or when closePosition finds no position, REJECTED with ``rm`` when a
reduce-only order finds no position to reduce), then the triggered order's own ``ORDER_TRADE_UPDATE`` events.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from caerus.sim.binance.auth import binance_user_data_error, error, integer, order_request_error
from caerus.sim.binance.orders import (
    BINANCE_SYMBOLS,
    CONDITIONAL_TYPES,
    TIME_IN_FORCE,
    check_size_and_price,
    gtd_refusal,
    looked_up,
    open_order,
    price_text,
    symbol_and_side,
    venue_now_ms,
)
from caerus.sim.core.desk import DESK, Book, book_key, decimal_of, forget_oldest, position

MARKET_TYPES = ("STOP_MARKET", "TAKE_PROFIT_MARKET")
LIMIT_TYPES = ("STOP", "TAKE_PROFIT")
WORKING_TYPES = ("CONTRACT_PRICE", "MARK_PRICE")
_ENDED = ("FILLED", "CANCELED", "EXPIRED")


def triggered(order_type: str, side: str, trigger: float, price: float) -> bool:
    """Whether the watched ``price`` has reached a conditional order's trigger (the venue's rule)."""
    stop = order_type in ("STOP", "STOP_MARKET")
    if side == "BUY":
        return price >= trigger if stop else price <= trigger
    return price <= trigger if stop else price >= trigger


def _watched(algo: dict[str, Any], book: Book | None) -> float | None:
    """The price an algo order watches: the instrument's mark (MARK_PRICE) or its last trade (CONTRACT_PRICE)."""
    if book is None:
        return None
    if algo["workingType"] == "MARK_PRICE":
        return book.mark if book.mark is not None else (book.bid_px + book.ask_px) / 2
    return book.last_price


def _event(algo: dict[str, Any], now_ms: int, reason: str = "") -> None:
    """One ALGO_UPDATE for the algo order as it now stands."""
    actual = DESK.binance_orders.get(algo["actualOrderId"]) if algo["actualOrderId"] else None
    o = {"caid": algo["clientAlgoId"], "aid": algo["algoId"], "at": "CONDITIONAL", "o": algo["orderType"],
         "s": algo["symbol"], "S": algo["side"], "ps": "BOTH", "f": algo["timeInForce"], "q": algo["quantity"],
         "X": algo["algoStatus"], "ai": str(algo["actualOrderId"] or ""),
         "ap": actual["avgPrice"] if actual else "0.00000", "aq": actual["executedQty"] if actual else "0.00000",
         "act": actual["type"] if actual else "0", "tp": algo["triggerPrice"], "p": algo["price"], "V": "NONE",
         "wt": algo["workingType"], "pm": "NONE", "cp": algo["closePosition"], "pP": algo["priceProtect"],
         "R": algo["reduceOnly"], "tt": algo["triggerTime"], "gtd": algo["goodTillDate"]}
    if reason:
        o["rm"] = reason
    DESK.events["binance"].append({"e": "ALGO_UPDATE", "T": now_ms, "E": now_ms, "o": o})


def view(algo: dict[str, Any]) -> dict[str, Any]:
    """The algo order as the venue answers it (``algoOrder.place``, ``GET /fapi/v1/algoOrder``...)."""
    actual = DESK.binance_orders.get(algo["actualOrderId"]) if algo["actualOrderId"] else None
    return {**{k: v for k, v in algo.items() if k != "actualOrderId"},
            "actualOrderId": str(algo["actualOrderId"] or ""),
            "actualPrice": actual["avgPrice"] if actual else "", "actualType": actual["type"] if actual else "",
            "actualQty": actual["executedQty"] if actual else ""}


def place(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``algoOrder.place`` / ``POST /fapi/v1/algoOrder`` (TRADE, signed): a conditional order, checked as the venue
    checks it, waiting for its trigger."""
    req_id = msg.get("id")
    bad = order_request_error(msg, now_ms, ("algoType", "symbol", "side", "type"))
    if bad is not None:
        return bad
    params = msg["params"]
    if params["algoType"] != "CONDITIONAL":
        return error(req_id, -1130, "Data sent for parameter 'algoType' is not valid.")
    spec, bad = symbol_and_side(req_id, params)
    if bad is not None:
        return bad
    side, otype = params["side"], params["type"]
    if otype == "TRAILING_STOP_MARKET":
        return error(req_id, -1000, "TRAILING_STOP_MARKET is not modelled by this emulator (docs/emulator.md, "
                                    "conditional orders): STOP, STOP_MARKET, TAKE_PROFIT and TAKE_PROFIT_MARKET are.")
    if otype not in CONDITIONAL_TYPES:
        return error(req_id, -1116, "Invalid orderType.")
    tif = params.get("timeInForce", "GTC")
    if tif not in TIME_IN_FORCE:
        return error(req_id, -1115, "Invalid timeInForce.")
    working = params.get("workingType", "CONTRACT_PRICE")
    if working not in WORKING_TYPES:
        return error(req_id, -4031, "Invalid parameter working type")
    trigger = decimal_of(params.get("triggerPrice"))
    if trigger is None:
        return error(req_id, -1102, "Mandatory parameter 'triggerPrice' was not sent, was empty/null, or malformed.")
    if trigger <= 0:
        return error(req_id, -4006, "Stop price less than zero.")
    if trigger % spec["tick"] != 0:
        return error(req_id, -4014, "Price not increased by tick size.")
    price: Decimal | None = None
    if otype in MARKET_TYPES and params.get("price") not in (None, ""):
        return error(req_id, -1106, "Parameter 'price' sent when not required.")
    if otype in LIMIT_TYPES:
        price = decimal_of(params.get("price"))
        if price is None:
            return error(req_id, -1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
    close_position = params.get("closePosition") in (True, "true")
    reduce_only = params.get("reduceOnly") in (True, "true")
    if close_position:
        if otype in LIMIT_TYPES:
            return error(req_id, -4136, f"Target strategy invalid for orderType {otype},closePosition true")
        if params.get("quantity") not in (None, ""):
            return error(req_id, -4137, "Quantity must be zero with closePosition equals true")
        if params.get("reduceOnly") not in (None, ""):
            return error(req_id, -1106, "Parameter 'reduceOnly' sent when not required.")
        qty = Decimal(0)
    else:
        if params.get("quantity") in (None, ""):
            return error(req_id, -1102, "Mandatory parameter 'quantity' was not sent, was empty/null, or malformed.")
        qty_or_none = decimal_of(params["quantity"])
        if qty_or_none is None:
            return error(req_id, -1102, "Mandatory parameter 'quantity' was not sent, was empty/null, or malformed.")
        qty = qty_or_none
        bad = check_size_and_price(req_id, spec, qty, price)
        if bad is not None:
            return bad
        ref = float(price if price is not None else trigger)
        if not reduce_only and ref * float(qty) < float(spec["min_notional"]):
            return error(req_id, -4164, f"Order's notional must be no smaller than {spec['min_notional']} "
                                        "(unless you choose reduce only).")
    gtd, bad = gtd_refusal(req_id, tif, params, now_ms)
    if bad is not None:
        return bad
    key = book_key("binance", spec["name"])
    draft = {"orderType": otype, "side": side, "workingType": working}
    watched = _watched(draft, DESK.books.get(key))
    if watched is not None and triggered(otype, side, float(trigger), watched):
        return error(req_id, -2021, "Order would immediately trigger.")
    cid = params.get("clientAlgoId") or f"simalgo{next(DESK.ids)}"
    prior = DESK.binance_algos.get(DESK.binance_algo_client_ids.get(cid, -1))
    if prior is not None and prior["algoStatus"] == "NEW":
        return error(req_id, -4116, "ClientOrderId is duplicated.")
    qd = spec["qty_decimals"]
    algo = {
        "algoId": next(DESK.ids), "clientAlgoId": cid, "algoType": "CONDITIONAL", "orderType": otype,
        "symbol": params["symbol"], "side": side, "positionSide": "BOTH", "timeInForce": tif,
        "quantity": f"{qty:.{qd}f}", "algoStatus": "NEW", "triggerPrice": str(trigger),
        "price": str(price) if price is not None else "0", "icebergQuantity": None,
        "selfTradePreventionMode": "NONE", "workingType": working, "priceMatch": "NONE",
        "closePosition": close_position, "priceProtect": params.get("priceProtect") in (True, "true"),
        "reduceOnly": reduce_only, "createTime": now_ms, "updateTime": now_ms, "triggerTime": 0,
        "goodTillDate": gtd, "actualOrderId": 0,
    }
    DESK.binance_algos[algo["algoId"]] = algo
    DESK.binance_algo_client_ids[cid] = algo["algoId"]
    forget_oldest(DESK.binance_algos, DESK.binance_algo_client_ids)
    DESK.binance_algo_open[key].add(algo["algoId"])
    _event(algo, now_ms)
    return {"id": req_id, "status": 200, "result": view(algo)}


def find(msg: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the algo order ``algoId`` or ``clientAlgoId`` names, None) or (None, the error answer)."""
    req_id, params = msg.get("id"), msg["params"]
    algo_id = integer(params.get("algoId"))
    if algo_id is None and isinstance(params.get("clientAlgoId"), str):
        algo_id = DESK.binance_algo_client_ids.get(params["clientAlgoId"])
    if algo_id is None and "algoId" not in params and "clientAlgoId" not in params:
        return None, error(req_id, -1102, "Param 'clientAlgoId' or 'algoId' must be sent, but both were empty/null!")
    algo = DESK.binance_algos.get(algo_id) if algo_id is not None else None
    if algo is None:
        return None, error(req_id, -2013, "Order does not exist.")
    return algo, None


def cancel(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``algoOrder.cancel`` / ``DELETE /fapi/v1/algoOrder``: an algo order still waiting for its trigger becomes
    CANCELED; any other is -2011."""
    bad = binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    algo, bad = find(msg)
    if algo is None or algo["algoStatus"] != "NEW":
        return error(msg.get("id"), -2011, "Unknown order sent.")
    _end(algo, "CANCELED", now_ms)
    return {"id": msg.get("id"), "status": 200,
            "result": {"algoId": algo["algoId"], "clientAlgoId": algo["clientAlgoId"], "code": "200",
                       "msg": "success"}}


def query(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``GET /fapi/v1/algoOrder``: the algo order as it now stands (-2013 when unknown)."""
    return looked_up(msg, now_ms, find, view)


def listing(symbol: str | None, open_only: bool) -> list[dict[str, Any]]:
    """``GET /fapi/v1/openAlgoOrders`` (waiting for their trigger) and ``allAlgoOrders``, oldest first."""
    return [view(a) for a in DESK.binance_algos.values()
            if symbol in (None, a["symbol"]) and (a["algoStatus"] == "NEW" or not open_only)]


def cancel_all(symbol: str, now_ms: int) -> None:
    """``DELETE /fapi/v1/algoOpenOrders``: every algo order of the symbol still waiting is CANCELED."""
    for algo in list(DESK.binance_algos.values()):
        if algo["symbol"] == symbol and algo["algoStatus"] == "NEW":
            _end(algo, "CANCELED", now_ms)


def _end(algo: dict[str, Any], status: str, now_ms: int, reason: str = "") -> None:
    algo.update(algoStatus=status, updateTime=now_ms)
    DESK.binance_algo_open[book_key("binance", BINANCE_SYMBOLS[algo["symbol"]]["name"])].discard(algo["algoId"])
    _event(algo, now_ms, reason)


def on_book(key: str, book: Book) -> None:
    """A new top of book: the algo orders of ``key`` whose trigger it reaches go to the matching engine, and the
    triggered ones whose order has since ended are FINISHED."""
    if DESK.binance_algo_open.get(key) or DESK.binance_algo_triggered:
        now_ms = venue_now_ms()
        _expire(key, now_ms)
        for algo_id in sorted(DESK.binance_algo_open.get(key, ())):
            algo = DESK.binance_algos.get(algo_id)
            watched = _watched(algo, book) if algo is not None else None
            if algo is not None and watched is not None \
                    and triggered(algo["orderType"], algo["side"], float(algo["triggerPrice"]), watched):
                _trigger(algo, now_ms)
        _finish(now_ms)


def on_clock(now_ms: int) -> None:
    """The emulator's clock: GTD algo orders past their time expire, triggered ones whose order ended finish."""
    for key in list(DESK.binance_algo_open):
        _expire(key, now_ms)
    _finish(now_ms)


def _expire(key: str, now_ms: int) -> None:
    for algo_id in sorted(DESK.binance_algo_open.get(key, ())):
        algo = DESK.binance_algos.get(algo_id)
        if algo is not None and algo["timeInForce"] == "GTD" and 0 < algo["goodTillDate"] <= now_ms:
            _end(algo, "EXPIRED", now_ms)


def _finish(now_ms: int) -> None:
    for algo_id in sorted(DESK.binance_algo_triggered):
        algo = DESK.binance_algos.get(algo_id)
        actual = DESK.binance_orders.get(algo["actualOrderId"]) if algo is not None else None
        if algo is None or actual is None or actual["status"] in _ENDED:
            DESK.binance_algo_triggered.discard(algo_id)
            if algo is not None:
                algo.update(algoStatus="FINISHED", updateTime=now_ms)
                _event(algo, now_ms)


def _trigger(algo: dict[str, Any], now_ms: int) -> None:
    """The trigger was reached: the order goes to the matching engine (TRIGGERING, then TRIGGERED with its id), or
    the algo order ends when there is nothing it may do (closePosition with no position: EXPIRED; reduce-only that
    would not reduce: REJECTED)."""
    spec = BINANCE_SYMBOLS[algo["symbol"]]
    key = book_key("binance", spec["name"])
    DESK.binance_algo_open[key].discard(algo["algoId"])
    algo.update(algoStatus="TRIGGERING", triggerTime=now_ms, updateTime=now_ms)
    _event(algo, now_ms)
    amt, _ = position("binance", spec["name"])
    is_buy = algo["side"] == "BUY"
    qty = Decimal(algo["quantity"])
    if algo["closePosition"]:
        if amt == 0.0 or (amt > 0) == is_buy:
            _end(algo, "EXPIRED", now_ms, "no position to close")
            return
        qty = Decimal(f"{abs(amt):.{spec['qty_decimals']}f}")
    elif algo["reduceOnly"] and (amt == 0.0 or (amt > 0) == is_buy or float(qty) > abs(amt) + 1e-12):
        _end(algo, "REJECTED", now_ms, "Reduce Only reject")
        return
    limit = algo["orderType"] in LIMIT_TYPES
    actual = open_order(
        algo["symbol"], algo["side"], "LIMIT" if limit else "MARKET", qty,
        Decimal(algo["price"]) if limit else Decimal(0), algo["timeInForce"] if limit else "GTC",
        algo["reduceOnly"] or algo["closePosition"], algo["clientAlgoId"], now_ms,
        gtd=algo["goodTillDate"] if limit else 0,
        orig_type=algo["orderType"], stop_price=price_text(float(algo["triggerPrice"]), spec),
        working_type=algo["workingType"], close_position=algo["closePosition"], price_protect=algo["priceProtect"])
    algo.update(algoStatus="TRIGGERED", actualOrderId=actual["orderId"], updateTime=now_ms)
    _event(algo, now_ms)
    DESK.binance_algo_triggered.add(algo["algoId"])
