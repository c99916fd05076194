"""Binance USD-M signed REST endpoints the emulator serves: trading and account (``/fapi/v1|v2|v3``).

Each request's signature is checked over the query string and body as sent (Binance's REST ``totalParams``,
less ``signature``), then the request is answered by the same order-desk function the WebSocket API uses
(caerus.sim.orders), so REST and WebSocket share one order book, one account ledger and one set of rejections:
``POST | GET | DELETE | PUT /fapi/v1/order`` (order.place / status / cancel / modify), ``GET /fapi/v1/openOrders``,
``DELETE /fapi/v1/allOpenOrders``, ``GET /fapi/v2|v3/account``, ``/fapi/v2|v3/balance``,
``/fapi/v2|v3/positionRisk``, ``GET /fapi/v1/userTrades``, ``GET /fapi/v1/leverageBracket``,
``GET /fapi/v1/commissionRate`` (the account's fee tier), the Algo Service's conditional orders
``POST | GET | DELETE /fapi/v1/algoOrder``, ``GET /fapi/v1/openAlgoOrders``, ``allAlgoOrders``,
``DELETE /fapi/v1/algoOpenOrders`` (caerus.sim.binance.algo),
``POST /fapi/v1/leverage`` and ``POST /fapi/v1/marginType``. The API key is the ``X-MBX-APIKEY`` header (-2015
otherwise); errors carry Binance's ``{"code", "msg"}`` body and HTTP status.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from caerus.sim.binance import algo as binance_algo
from caerus.sim.binance.auth import REST_VERIFIED, binance_user_data_error
from caerus.sim.binance.orders import BINANCE_SYMBOLS, binance_account, binance_balance, binance_commission_rate
from caerus.sim.binance.ws_api import binance_ws_api_response
from caerus.sim.core.desk import DESK, book_key
from caerus.sim.core.http import HttpReply, HttpRequest
from caerus.sim.core.verify import binance_text_signature_ok

_SIGNATURE = re.compile(r"&?signature=[^&]*")
MAX_LEVERAGE = 125
USER_TRADES_LIMIT = 1000


def _err(status: int, code: int, msg: str) -> HttpReply:
    return HttpReply(status, {"code": code, "msg": msg})


def _now_ms() -> int:
    return time.time_ns() // 1_000_000 + DESK.binance_clock_offset_ms


def _brackets(symbol: str) -> dict[str, Any]:
    return {"symbol": symbol, "notionalCoef": 1.0, "brackets": [
        {"bracket": 1, "initialLeverage": MAX_LEVERAGE, "notionalCap": 50_000, "notionalFloor": 0,
         "maintMarginRatio": 0.004, "cum": 0.0},
        {"bracket": 2, "initialLeverage": 100, "notionalCap": 600_000, "notionalFloor": 50_000,
         "maintMarginRatio": 0.005, "cum": 50.0}]}


class BinanceTradingRest:
    """The signed REST routes; ``route(req)`` answers one or returns None when the path is not one of them."""

    def __init__(self) -> None:
        ws = self._ws
        self._routes: dict[tuple[str, str], Callable[[HttpRequest, dict[str, str]], HttpReply]] = {
            ("POST", "/fapi/v1/order"): lambda r, p: ws("order.place", p),
            ("GET", "/fapi/v1/order"): lambda r, p: ws("order.status", p),
            ("DELETE", "/fapi/v1/order"): lambda r, p: ws("order.cancel", p),
            ("PUT", "/fapi/v1/order"): lambda r, p: ws("order.modify", p),
            ("GET", "/fapi/v1/openOrders"): lambda r, p: self._open_orders(p),
            ("DELETE", "/fapi/v1/allOpenOrders"): lambda r, p: self._cancel_all(p),
            ("GET", "/fapi/v1/userTrades"): lambda r, p: self._user_trades(p),
            ("GET", "/fapi/v1/leverageBracket"): lambda r, p: self._leverage_bracket(p),
            ("GET", "/fapi/v1/commissionRate"): lambda r, p: self._commission_rate(p),
            ("POST", "/fapi/v1/algoOrder"): lambda r, p: ws("algoOrder.place", p),
            ("DELETE", "/fapi/v1/algoOrder"): lambda r, p: ws("algoOrder.cancel", p),
            ("GET", "/fapi/v1/algoOrder"): lambda r, p: self._reply(
                binance_algo.query({"id": None, "params": p, "verified": REST_VERIFIED}, _now_ms())),
            ("GET", "/fapi/v1/openAlgoOrders"): lambda r, p: self._algo_listing(p, open_only=True),
            ("GET", "/fapi/v1/allAlgoOrders"): lambda r, p: self._algo_listing(p, open_only=False),
            ("DELETE", "/fapi/v1/algoOpenOrders"): lambda r, p: self._algo_cancel_all(p),
            ("POST", "/fapi/v1/leverage"): lambda r, p: self._leverage(p),
            ("POST", "/fapi/v1/marginType"): lambda r, p: self._margin_type(p),
            **{("GET", f"/fapi/{v}/account"): (lambda r, p: HttpReply(200, binance_account(_now_ms())))
               for v in ("v2", "v3")},
            **{("GET", f"/fapi/{v}/balance"): (lambda r, p: HttpReply(200, binance_balance(_now_ms())))
               for v in ("v2", "v3")},
            **{("GET", f"/fapi/{v}/positionRisk"): (lambda r, p: ws("v2/account.position", p)) for v in ("v2", "v3")},
        }

    def route(self, req: HttpRequest) -> HttpReply | None:
        handler = self._routes.get((req.method, req.path))
        if handler is None:
            return None
        params = req.form()
        bad = self._check(req, params)
        if bad is not None:
            return bad
        return handler(req, params)

    @staticmethod
    def _check(req: HttpRequest, params: dict[str, str]) -> HttpReply | None:
        """API key, signature over ``totalParams`` as sent, time window (-2015 / -1022 / -1021 / -1131)."""
        key = req.headers.get("X-MBX-APIKEY")
        if not key or key != DESK.binance_api_key:
            return _err(401, -2015, "Invalid API-key, IP, or permissions for action.")
        sig = params.get("signature")
        if not sig:
            return _err(400, -1102, "Mandatory parameter 'signature' was not sent, was empty/null, or malformed.")
        body = req.body.decode("utf-8", "replace") if "json" not in (req.headers.get("Content-Type") or "") else ""
        total = _SIGNATURE.sub("", req.raw_query).lstrip("&") + _SIGNATURE.sub("", body).lstrip("&")
        if not binance_text_signature_ok(total, sig, hmac_secret=DESK.binance_hmac_secret,
                                         ed25519_public_key=DESK.binance_ed25519_public_key):
            return _err(400, -1022, "Signature for this request is not valid.")
        params["apiKey"] = key
        bad = binance_user_data_error({"id": None, "params": params, "verified": REST_VERIFIED}, _now_ms())
        if bad is not None:
            return HttpReply(bad["status"], bad["error"])
        return None

    @classmethod
    def _ws(cls, method: str, params: dict[str, str]) -> HttpReply:
        """Answer with the WebSocket API's function for ``method`` (the signature already checked)."""
        return cls._reply(binance_ws_api_response({"id": None, "method": method, "params": params,
                                                          "verified": REST_VERIFIED}))

    @staticmethod
    def _reply(reply: dict[str, Any]) -> HttpReply:
        if "error" in reply:
            return HttpReply(reply["status"], reply["error"])
        return HttpReply(200, reply["result"])

    @staticmethod
    def _algo_listing(params: dict[str, str], open_only: bool) -> HttpReply:
        sym = params.get("symbol")
        if sym is not None and sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        if sym is None and not open_only:
            return _err(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
        return HttpReply(200, binance_algo.listing(sym, open_only))

    @staticmethod
    def _algo_cancel_all(params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        binance_algo.cancel_all(sym, _now_ms())
        return HttpReply(200, {"code": 200, "msg": "The operation of cancel all open order is done."})

    @staticmethod
    def _open_orders(params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym is not None and sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        out = [{**o, "time": o["updateTime"]} for o in DESK.binance_orders.values()
               if o["status"] in ("NEW", "PARTIALLY_FILLED") and sym in (None, o["symbol"])]
        return HttpReply(200, out)

    def _cancel_all(self, params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        for o in list(DESK.binance_orders.values()):
            if o["symbol"] == sym and o["status"] in ("NEW", "PARTIALLY_FILLED"):
                self._ws("order.cancel", {**params, "orderId": str(o["orderId"])})
        return HttpReply(200, {"code": 200, "msg": "The operation of cancel all open order is done."})

    @staticmethod
    def _user_trades(params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
        try:
            limit = min(int(params.get("limit", "500")), USER_TRADES_LIMIT)
        except ValueError:
            return _err(400, -1100, "Illegal characters found in parameter 'limit'; legal range is '^[0-9]+$'.")
        start = int(params["startTime"]) if params.get("startTime", "").isdigit() else 0
        trades = [t for t in DESK.ledger.fills["binance"] if t["symbol"] == sym and t["time"] >= start]
        return HttpReply(200, list(reversed(trades[:limit])))  # oldest first, as the venue lists them

    @staticmethod
    def _leverage_bracket(params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym is not None:
            return _err(400, -1121, "Invalid symbol.") if sym not in BINANCE_SYMBOLS else \
                HttpReply(200, [_brackets(sym)])
        return HttpReply(200, [_brackets(s) for s in BINANCE_SYMBOLS])

    @staticmethod
    def _commission_rate(params: dict[str, str]) -> HttpReply:
        sym = params.get("symbol")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        return HttpReply(200, binance_commission_rate(sym))

    @staticmethod
    def _leverage(params: dict[str, str]) -> HttpReply:
        sym, lev = params.get("symbol"), params.get("leverage", "")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        if not lev.isdigit() or not 1 <= int(lev) <= MAX_LEVERAGE:
            return _err(400, -4028, f"Leverage {lev} is not valid")
        key = book_key("binance", BINANCE_SYMBOLS[sym]["name"])
        DESK.ledger.leverage[key] = (int(lev), DESK.ledger.leverage_of(key)[1])
        return HttpReply(200, {"leverage": int(lev), "maxNotionalValue": "50000", "symbol": sym})

    @staticmethod
    def _margin_type(params: dict[str, str]) -> HttpReply:
        sym, kind = params.get("symbol"), params.get("marginType")
        if sym not in BINANCE_SYMBOLS:
            return _err(400, -1121, "Invalid symbol.")
        if kind not in ("ISOLATED", "CROSSED"):
            return _err(400, -1116, "Invalid marginType.")  # the venue's text for a bad enum value
        key = book_key("binance", BINANCE_SYMBOLS[sym]["name"])
        lev, cross = DESK.ledger.leverage_of(key)
        if cross == (kind == "CROSSED"):
            return _err(400, -4046, "No need to change margin type.")
        DESK.ledger.leverage[key] = (lev, kind == "CROSSED")
        return HttpReply(200, {"code": 200, "msg": "success"})
