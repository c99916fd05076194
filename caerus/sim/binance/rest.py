"""Binance USD-M REST endpoints the emulator serves on its stream port (public market data and listen keys).

``GET /fapi/v1/ping | time | exchangeInfo | depth | ticker/bookTicker | ticker/price | ticker/24hr |
premiumIndex | fundingRate | klines | trades | aggTrades`` in the documented shapes, from the same book and tape
the streams publish; ``POST | PUT | DELETE /fapi/v1/listenKey`` for the user-data stream (``X-MBX-APIKEY`` must be the
configured key: -2015 otherwise).
Errors carry Binance's ``{"code":..,"msg":..}`` body: unknown symbol -1121, bad parameter -1100 / -1102, unknown
path 404. Everything else in the REST API is refused with 404 (see the fidelity table in docs/emulator.md).

``exchangeInfo`` lists every Binance symbol of caerus.sim.core.catalogue. The tickers (bookTicker, price, 24hr,
premiumIndex), klines and trades answer for every symbol this session emulates (a listed symbol it does not
emulate: -1121 when asked for, left out of the all-symbols answers). Klines, trades and the 24 h statistics come
from the symbol's own trade tape (caerus.sim.core.instrument_feeds; a query naming the symbol keeps it, so a symbol
other than BTC shows its mid and no trades until it was first read). The depth snapshot is cut from the emulated
symbol's own book (the one its depth streams chain on).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from caerus.sim.binance.auth import listen_key
from caerus.sim.binance.orders import BINANCE_SYMBOLS
from caerus.sim.binance.trading import BinanceTradingRest
from caerus.sim.binance.ws_api import RATE_LIMITS
from caerus.sim.core import catalogue, frames, price_band
from caerus.sim.core.desk import DESK
from caerus.sim.core.http import HttpReply, HttpRequest
from caerus.sim.core.market import BinanceQuote
from caerus.sim.core.tape import INTERVAL_MINUTES, Tape, TickerStats

NOT_EMULATED = "Invalid symbol. ({} is listed but not emulated in this session)"

if TYPE_CHECKING:
    from caerus.sim.core.driver import MarketDriver

PREFIX = "/fapi/v1"
DEPTH_LIMITS = (5, 10, 20, 50, 100, 500, 1000)
ONBOARD_MS = 1_569_398_400_000  # BTCUSDT perpetual listing date (2019-09-25)
PERPETUAL_DELIVERY_MS = 4_133_404_800_000  # what the venue shows as a perpetual's delivery date (2100-12-25)


def _err(status: int, code: int, msg: str) -> HttpReply:
    return HttpReply(status, {"code": code, "msg": msg})


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _symbol_info(inst: catalogue.ListedInstrument) -> dict[str, Any]:
    assert inst.binance_symbol is not None
    name = inst.binance_symbol
    tick, step, max_qty = str(inst.tick), str(inst.step), str(inst.max_qty)
    max_price = str(int(inst.start_price * 50) or 1)
    return {
        "symbol": name, "pair": name, "contractType": "PERPETUAL", "deliveryDate": PERPETUAL_DELIVERY_MS,
        "onboardDate": ONBOARD_MS, "status": "TRADING", "maintMarginPercent": "2.5000",
        "requiredMarginPercent": "5.0000", "baseAsset": name.removesuffix("USDT"), "quoteAsset": "USDT",
        "marginAsset": "USDT", "pricePrecision": inst.price_decimals, "quantityPrecision": inst.qty_decimals,
        "baseAssetPrecision": 8, "quotePrecision": 8, "underlyingType": "COIN",
        "underlyingSubType": ["PoW"] if inst.name == "BTC" else [], "settlePlan": 0,
        "triggerProtect": "0.0500", "liquidationFee": "0.012500", "marketTakeBound": "0.05",
        "maxMoveOrderLimit": 10000,
        "filters": [
            {"filterType": "PRICE_FILTER", "minPrice": tick, "maxPrice": max_price, "tickSize": tick},
            {"filterType": "LOT_SIZE", "minQty": step, "maxQty": max_qty, "stepSize": step},
            {"filterType": "MARKET_LOT_SIZE", "minQty": step, "maxQty": max_qty, "stepSize": step},
            {"filterType": "MAX_NUM_ORDERS", "limit": 200},
            {"filterType": "MAX_NUM_ALGO_ORDERS", "limit": 10},
            {"filterType": "MIN_NOTIONAL", "notional": str(inst.min_notional)},
            dict(price_band.BINANCE_PERCENT_PRICE),
        ],
        "orderTypes": ["LIMIT", "MARKET", "STOP", "STOP_MARKET", "TAKE_PROFIT", "TAKE_PROFIT_MARKET",
                       "TRAILING_STOP_MARKET"],
        "timeInForce": ["GTC", "IOC", "FOK", "GTX", "GTD"],
        "permissionSets": ["GRID", "COPY"],
    }


def exchange_info() -> dict[str, Any]:
    """Every Binance perpetual of the catalogue with its filters (``pricePrecision`` / ``quantityPrecision`` are the
    decimals of the tick / step)."""
    return {"timezone": "UTC", "serverTime": _now_ms(), "futuresType": "U_MARGINED",
            "rateLimits": [{k: v for k, v in r.items() if k != "count"} for r in RATE_LIMITS],
            "exchangeFilters": [],
            "assets": [{"asset": "USDT", "marginAvailable": True, "autoAssetExchange": "-10000"}],
            "symbols": [_symbol_info(i) for i in catalogue.BINANCE.values()]}


class BinanceRest:
    """The REST routes over one emulator's market (``market`` is None when replaying recorded frames)."""

    def __init__(self, market: Callable[[], MarketDriver | None]) -> None:
        self._market = market
        self._trading = BinanceTradingRest()
        self._routes: dict[tuple[str, str], Callable[[HttpRequest], HttpReply]] = {
            ("GET", "/ping"): lambda r: HttpReply(200, {}),
            ("GET", "/time"): lambda r: HttpReply(200, {"serverTime": _now_ms()}),
            ("GET", "/exchangeInfo"): lambda r: HttpReply(200, exchange_info()),
            ("GET", "/depth"): self._depth,
            ("GET", "/ticker/bookTicker"): self._book_ticker,
            ("GET", "/ticker/price"): self._price,
            ("GET", "/ticker/24hr"): self._ticker_24hr,
            ("GET", "/premiumIndex"): self._premium_index,
            ("GET", "/fundingRate"): self._funding_rate,
            ("GET", "/klines"): self._klines,
            ("GET", "/trades"): self._trades,
            ("GET", "/aggTrades"): self._agg_trades,
            ("POST", "/listenKey"): self._listen_key,
            ("PUT", "/listenKey"): self._listen_key,
            ("DELETE", "/listenKey"): self._listen_key,
        }

    def __call__(self, req: HttpRequest) -> HttpReply:
        signed = self._trading.route(req)  # trading and account endpoints (caerus.sim.binance.trading)
        if signed is not None:
            return signed
        if not req.path.startswith(PREFIX + "/"):
            return HttpReply(404, f"no endpoint at {req.path}\n", "text/plain")
        route = self._routes.get((req.method, req.path[len(PREFIX):]))
        if route is None:
            return HttpReply(404, f"no endpoint {req.method} {req.path}\n", "text/plain")
        return route(req)

    # -- market data ------------------------------------------------------------------------------------------
    def _symbol(self, req: HttpRequest, required: bool) -> tuple[str | None, HttpReply | None]:
        sym = req.query.get("symbol")
        if sym is None:
            if required:
                return None, _err(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or "
                                              "malformed.")
            return None, None
        if sym.upper() not in BINANCE_SYMBOLS:
            return None, _err(400, -1121, "Invalid symbol.")
        return sym.upper(), None

    def _driver(self) -> tuple[MarketDriver | None, HttpReply | None]:
        drv = self._market()
        if drv is None or not drv.quotes:
            return None, _err(503, -1001, "Internal error; unable to process your request. Please try again.")
        return drv, None

    def _depth(self, req: HttpRequest) -> HttpReply:
        sym, bad = self._symbol(req, required=True)
        if bad is not None or sym is None:
            return bad or _err(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
        try:
            limit = int(req.query.get("limit", "500"))
        except ValueError:
            return _err(400, -1100, "Illegal characters found in parameter 'limit'; legal range is '^[0-9]+$'.")
        if limit not in DEPTH_LIMITS:
            return _err(400, -1100, f"Illegal characters found in parameter 'limit'; legal values are "
                                    f"{', '.join(map(str, DEPTH_LIMITS))}.")
        drv, bad = self._driver()
        if bad is not None or drv is None:
            return bad or _err(503, -1001, "Internal error; unable to process your request. Please try again.")
        q = drv.quote_of(sym)
        if q is None:
            return _err(400, -1121, NOT_EMULATED.format(sym))
        book = drv.book(sym)
        bids, asks = book.top(limit)
        return HttpReply(200, frames.binance_depth_snapshot(bids, asks, book.update_id, book.t_ns, drv.epoch_ns,
                                                            drv.format_of(q.symbol)))

    def _each(self, req: HttpRequest,
              one: Callable[[MarketDriver, str, BinanceQuote, frames.InstrumentFormat], dict[str, Any]]) -> HttpReply:
        """``one`` for the asked symbol, or for every emulated symbol (listed order) when none is asked for."""
        sym, bad = self._symbol(req, required=False)
        if bad is not None:
            return bad
        drv, bad = self._driver()
        if bad is not None or drv is None:
            return bad or _err(503, -1001, "no market")
        if sym is not None:
            q = drv.quote_of(sym)
            if q is None:
                return _err(400, -1121, NOT_EMULATED.format(sym))
            return HttpReply(200, one(drv, sym, q, drv.format_of(q.symbol)))
        out = []
        for s in BINANCE_SYMBOLS:
            q = drv.quote_of(s)
            if q is not None:
                out.append(one(drv, s, q, drv.format_of(q.symbol)))
        return HttpReply(200, out)

    def _book_ticker(self, req: HttpRequest) -> HttpReply:
        def one(drv: MarketDriver, sym: str, q: BinanceQuote, f: frames.InstrumentFormat) -> dict[str, Any]:
            pd, qd = f.price_decimals, f.qty_decimals
            return {"symbol": sym, "bidPrice": f"{q.bid:.{pd}f}", "bidQty": f"{q.bid_qty:.{qd}f}",
                    "askPrice": f"{q.ask:.{pd}f}", "askQty": f"{q.ask_qty:.{qd}f}",
                    "time": frames.ms(drv.epoch_ns, q.t_ns), "lastUpdateId": q.update_id}
        return self._each(req, one)

    @staticmethod
    def _stats(drv: MarketDriver, sym: str, q: BinanceQuote, req: HttpRequest) -> TickerStats:
        """The symbol's session statistics from its trade tape (kept from now on when the query names the symbol);
        its mid and no trades while the tape has none."""
        tape = drv.binance_tape_of(sym, read="symbol" in req.query)
        if tape is not None and tape.stats.count:
            return tape.stats
        mid = (q.bid + q.ask) / 2
        return TickerStats(open=mid, high=mid, low=mid, last=mid)

    def _price(self, req: HttpRequest) -> HttpReply:
        def one(drv: MarketDriver, sym: str, q: BinanceQuote, f: frames.InstrumentFormat) -> dict[str, Any]:
            st = self._stats(drv, sym, q, req)
            px = st.last if st.count else (q.bid + q.ask) / 2
            return {"symbol": sym, "price": f"{px:.{f.price_decimals}f}", "time": frames.ms(drv.epoch_ns, q.t_ns)}
        return self._each(req, one)

    def _ticker_24hr(self, req: HttpRequest) -> HttpReply:
        def one(drv: MarketDriver, sym: str, q: BinanceQuote, f: frames.InstrumentFormat) -> dict[str, Any]:
            fields = frames.binance_ticker_fields(self._stats(drv, sym, q, req), q.t_ns, drv.epoch_ns, f)
            names = {"s": "symbol", "p": "priceChange", "P": "priceChangePercent", "w": "weightedAvgPrice",
                     "c": "lastPrice", "Q": "lastQty", "o": "openPrice", "h": "highPrice", "l": "lowPrice",
                     "v": "volume", "q": "quoteVolume", "O": "openTime", "C": "closeTime", "F": "firstId",
                     "L": "lastId", "n": "count"}
            return {names[k]: v for k, v in fields.items()}
        return self._each(req, one)

    def _premium_index(self, req: HttpRequest) -> HttpReply:
        def one(drv: MarketDriver, sym: str, q: BinanceQuote, f: frames.InstrumentFormat) -> dict[str, Any]:
            marks = drv.binance_marks_of(sym)
            assert marks is not None  # an emulated symbol (it has a quote)
            mark = frames.binance_mark_fields(marks, q.t_ns, drv.epoch_ns, f)
            return {"symbol": sym, "markPrice": mark["p"], "indexPrice": mark["i"],
                    "estimatedSettlePrice": mark["P"], "lastFundingRate": mark["r"], "interestRate": "0.00010000",
                    "nextFundingTime": mark["T"], "time": mark["E"]}
        return self._each(req, one)

    def _funding_rate(self, req: HttpRequest) -> HttpReply:
        """``GET /fapi/v1/fundingRate``: the settled 8-hour fundings of the session (caerus.sim.core.marks), oldest
        first, for the asked symbol or every emulated one; ``startTime`` / ``endTime`` / ``limit`` (100, at most
        1000)."""
        sym, bad = self._symbol(req, required=False)
        if bad is not None:
            return bad
        drv, bad = self._driver()
        if bad is not None or drv is None:
            return bad or _err(503, -1001, "no market")
        got = _limit_and_bounds(req, 100, 1000, ("startTime", "endTime"))
        if isinstance(got, HttpReply):
            return got
        limit, bounds = got
        rows = []
        for s in ([sym] if sym is not None else BINANCE_SYMBOLS):
            marks, q = drv.binance_marks_of(s), drv.quote_of(s)
            if marks is None or q is None:
                if sym is not None:
                    return _err(400, -1121, NOT_EMULATED.format(sym))
                continue
            pd = drv.format_of(q.symbol).price_decimals
            rows += [{"symbol": s, "fundingTime": h.time_ms, "fundingRate": f"{h.rate:.8f}",
                      "markPrice": f"{h.mark:.{pd}f}"} for h in marks.history
                     if (bounds["startTime"] is None or h.time_ms >= bounds["startTime"])
                     and (bounds["endTime"] is None or h.time_ms <= bounds["endTime"])]
        rows.sort(key=lambda r: (r["fundingTime"], r["symbol"]))
        return HttpReply(200, rows[:limit] if bounds["startTime"] is not None else rows[-limit:])

    # -- the trade tape ---------------------------------------------------------------------------------------
    def _tape_of(self, req: HttpRequest) -> tuple[Tape, frames.InstrumentFormat, int] | HttpReply:
        """(the asked symbol's trade tape, kept from now on; its format; the session epoch), or the refusal."""
        sym, bad = self._symbol(req, required=True)
        if bad is not None or sym is None:
            return bad or _err(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
        drv, bad = self._driver()
        if bad is not None or drv is None:
            return bad or _err(503, -1001, "no market")
        q = drv.quote_of(sym)
        tape = drv.binance_tape_of(sym)
        if q is None or tape is None:
            return _err(400, -1121, NOT_EMULATED.format(sym))
        return tape, drv.format_of(q.symbol), drv.epoch_ns

    def _tape_query(self, req: HttpRequest, most: int, bounds: tuple[str, ...]
                    ) -> tuple[Tape, frames.InstrumentFormat, int, int, dict[str, int | None]] | HttpReply:
        """The prologue of every tape query (klines, trades, aggTrades): (the asked symbol's tape, its format, the
        session epoch, ``limit`` (default 500, 1..``most``), each of ``bounds`` (``startTime``, ``fromId``...) as an
        integer or None), or the refusal. A bound that is not digits is the venue's -1100 naming the parameter."""
        got = self._tape_of(req)
        if isinstance(got, HttpReply):
            return got
        query = _limit_and_bounds(req, 500, most, bounds)
        if isinstance(query, HttpReply):
            return query
        return (*got, *query)

    def _klines(self, req: HttpRequest) -> HttpReply:
        """``GET /fapi/v1/klines``: bars from the trade tape, oldest first (the venue's 12-field rows)."""
        minutes = INTERVAL_MINUTES.get(req.query.get("interval", ""))
        got = self._tape_query(req, 1500, ("startTime", "endTime"))
        if isinstance(got, HttpReply):
            return got
        if minutes is None:
            return _err(400, -1120, "Invalid interval.")
        tape, fmt, _, limit, bounds = got
        start, end = (None if (ms := bounds[k]) is None else ms * 1_000_000 for k in ("startTime", "endTime"))
        bars = tape.bars_of(minutes, start, end)
        bars = bars[:limit] if start is not None else bars[-limit:]
        return HttpReply(200, [frames.binance_kline_row(b, minutes, fmt) for b in bars])

    def _trades(self, req: HttpRequest) -> HttpReply:
        """``GET /fapi/v1/trades``: the most recent trades, oldest first."""
        got = self._tape_query(req, 1000, ())
        if isinstance(got, HttpReply):
            return got
        tape, fmt, epoch, limit, _ = got
        recent = list(tape.recent)[-limit:]
        pd, qd = fmt.price_decimals, fmt.qty_decimals
        return HttpReply(200, [{"id": t.trade_id, "price": f"{t.px:.{pd}f}", "qty": f"{t.qty:.{qd}f}",
                                "quoteQty": f"{t.px * t.qty:.5f}", "time": frames.ms(epoch, t.t_ns),
                                "isBuyerMaker": t.buyer_is_maker} for t in recent])

    def _agg_trades(self, req: HttpRequest) -> HttpReply:
        """``GET /fapi/v1/aggTrades``: the recent trades as the aggTrade stream shows them (each trade is its own
        aggregate, ids as the stream's), oldest first; ``fromId`` / ``startTime`` / ``endTime`` narrow them."""
        got = self._tape_query(req, 1000, ("fromId", "startTime", "endTime"))
        if isinstance(got, HttpReply):
            return got
        tape, fmt, epoch, limit, bounds = got
        lo_id, lo_t, hi_t = bounds["fromId"], bounds["startTime"], bounds["endTime"]
        rows = []
        for t in tape.recent:
            when = frames.ms(epoch, t.t_ns)
            if (lo_id is not None and t.trade_id < lo_id) or (lo_t is not None and when < lo_t) or (
                    hi_t is not None and when > hi_t):
                continue
            rows.append(t)
        rows = rows[:limit] if lo_id is not None or lo_t is not None else rows[-limit:]
        pd, qd = fmt.price_decimals, fmt.qty_decimals
        return HttpReply(200, [{"a": t.trade_id, "p": f"{t.px:.{pd}f}", "q": f"{t.qty:.{qd}f}", "f": t.trade_id * 3,
                                "l": t.trade_id * 3 + 2, "T": frames.ms(epoch, t.t_ns) - 1, "m": t.buyer_is_maker}
                               for t in rows])

    # -- user data stream -------------------------------------------------------------------------------------
    def _listen_key(self, req: HttpRequest) -> HttpReply:
        key = listen_key(req.headers.get("X-MBX-APIKEY"))
        if key is None:
            return _err(401, -2015, "Invalid API-key, IP, or permissions for action.")
        if req.method == "POST":  # one key per account: the existing key while it is valid
            return HttpReply(200, {"listenKey": key})
        if req.method == "DELETE":
            DESK.listen_keys.discard(req.form().get("listenKey", key))
        return HttpReply(200, {})


def _limit_and_bounds(req: HttpRequest, default: int, most: int, bounds: tuple[str, ...]
                      ) -> tuple[int, dict[str, int | None]] | HttpReply:
    """``limit`` (``default``, 1..``most``) and each of ``bounds`` (``startTime``, ``fromId``...) as an integer or
    None, or the venue's -1100 naming the parameter that is not digits (or the limit out of range)."""
    text = req.query.get("limit", str(default))
    if not text.isdigit() or not 1 <= int(text) <= most:
        return _err(400, -1100, f"Illegal characters found in parameter 'limit'; legal range is 1..{most}.")
    values: dict[str, int | None] = {}
    for k in bounds:
        v = req.query.get(k)
        if v is not None and not v.isdigit():
            return _err(400, -1100, f"Illegal characters found in parameter '{k}'; legal range is '^[0-9]+$'.")
        values[k] = int(v) if v is not None else None
    return int(text), values
