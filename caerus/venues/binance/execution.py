"""Binance USD-M live transport: ``order.place`` over the WebSocket API, each request signed (HMAC-SHA256 or
Ed25519) with the params sorted by name.

``send_msg`` builds the params from the ORDER tuple, signs, writes one text frame and returns SENT; the venue's
answer (``{"id", "status", "result"|"error"}``) is correlated by request id on the reader thread and reported as
a :class:`VenueReply`: FILLED / PARTIAL / NOT_FILLED (IOC expired) / SENT (resting, acknowledged) /
VENUE_REJECTED (``venue_code`` = Binance error code, e.g. -1022 bad signature).

Venue truth: at start the transport takes a listen key (WS-API ``userDataStream.start``, kept alive with
``userDataStream.ping`` from the engine's idle work, renewed on ``listenKeyExpired``) and opens the user-data
stream (``/private/ws/<listenKey>`` on the stream host, the 2026 route) on a second connection (no transmit stamps:
nothing sent on it is an order; the listen key redacted from every line that shows its URL). Its
``ORDER_TRADE_UPDATE`` events go through the shared ledger (caerus.venuekit.account_stream): they
settle an order whose reply has not come, deliver the fills of a resting order, and confirm (or contradict:
``stream_mismatch``) what each reply said.

``query_status(order_id)`` asks ``order.status`` by the client order id every order carries (``caerus-<id>``);
the answer has the order's shape and is read by the same parser, delivered with ``by_query`` set. -2013 "Order
does not exist" means the venue never took the order: a rejection with nothing filled.

Many instruments: each order carries its instrument id (ORDER.symbol); its symbol and filters come from the
session's instrument list (caerus.instruments, ``instruments.json``): the price is rounded to the tick, the
quantity down to the lot step, and an order below the minimum quantity or notional is refused before it is signed
(``below_minimum``), as is one whose id is not in the list (``unknown_instrument``); both SEND_FAILED.
``venue_state`` reads every listed symbol's position in one ``v2/account.position`` query.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import math
import os
import time
from typing import Any
from urllib.parse import urlsplit

import msgspec

from caerus import wire
from caerus.instruments import BTC, InstrumentSet
from caerus.records.order import ORDER_ORDER_ID, ORDER_PX, ORDER_QTY, ORDER_SIDE, ORDER_SYMBOL, ORDER_TIF
from caerus.venuekit.account_stream import AccountStreamLedger, Verdict
from caerus.venuekit.credentials import CredentialsError
from caerus.venuekit.order_session import (
    LiveTransportBase,
    LiveTransportError,
    ReplySink,
    WsOrderSession,
    check_live_guard,
    check_mainnet_endpoint,
    check_network_binding,
    resolve_url,
)
from caerus.venuekit.order_transport import (
    ParsedReply,
    ReplyCallback,
    SendResult,
    VenueReply,
    VenueState,
    reply_number,
)
from caerus.venues.binance import ORDER_PATH, ORDER_URLS, data
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.signing import query_string

_TIF = {int(wire.Tif.IOC): "IOC", int(wire.Tif.GTC): "GTC", int(wire.Tif.ALO): "GTX"}
_IOC = int(wire.Tif.IOC)
_STREAM_HOSTS = {"mainnet": data.DEFAULT_BASE_URL, "testnet": data.TESTNET_BASE_URL}
USER_STREAM_PATH = "/private/ws/"
#: a listen key lives 60 min without a keepalive; ping well inside that
KEEPALIVE_S = 30 * 60.0
_SENT_FAILED = wire.Outcome.SEND_FAILED
# -1006 "unexpected response from the message bus, execution status unknown"; -1007 "timeout waiting for response
# from backend server, send status unknown; execution status unknown"
_STATUS_UNKNOWN_CODES = frozenset({-1006, -1007})
_encode = msgspec.json.Encoder().encode
log = logging.getLogger("caerus.execution.transports.binance")


def parse_order_reply(msg: dict[str, Any]) -> ParsedReply | None:
    """What an ``order.place`` reply says about the order, or None when it cannot be read.

    None means: do not resolve the order from this reply (it stays tracked until a reply that parses, a status
    query or a disconnect resolves it). A non-200 status is a rejection even when its ``error`` is not the
    documented object (a string, or absent). Fill price: ``avgPrice``; newer responses may omit it (acks in
    particular), so ``cumQuote / executedQty`` when a quantity filled. Non-finite or negative numbers, a fill
    without a price, or a 200 without a ``result`` object do not parse.
    """
    status_code = msg.get("status")
    error = msg.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if (isinstance(status_code, int) and status_code >= 500) or code in _STATUS_UNKNOWN_CODES:
        # The venue says it does not know whether the order executed: never a rejection (that would free the
        # position while the order may have filled). Tracked until a status query or a disconnect resolves it.
        return None
    if error is not None or status_code != 200:
        if (isinstance(status_code, int) and 200 < status_code < 600) or error is not None:
            body = error if isinstance(error, dict) else {"msg": error}
            code = body.get("code", 0)
            return (wire.Outcome.VENUE_REJECTED, 0.0, 0.0, code if isinstance(code, int) else 0,
                    str(body.get("msg", ""))[:200], "rejected")
        return None
    result = msg.get("result")
    if not isinstance(result, dict):
        return None
    return parse_order_result(result)


def parse_order_result(result: dict[str, Any]) -> ParsedReply | None:
    """What an order object says (an ``order.place`` / ``order.status`` result, or the same fields of a
    user-data ``ORDER_TRADE_UPDATE``), or None when unreadable."""
    status = result.get("status")
    qty = reply_number(result.get("executedQty", 0))
    if qty is None:
        return None
    px = 0.0
    if qty > 0.0:
        avg = reply_number(result.get("avgPrice"))
        if avg:
            px = avg
        else:  # absent, zero or unreadable: derive it from the quote quantity
            quote = reply_number(result.get("cumQuote"))
            if not quote:
                return None
            px = quote / qty
    if status == "FILLED" and qty > 0.0:
        return wire.Outcome.FILLED, px, qty, 0, str(status), "filled"
    if qty > 0.0 and status in ("PARTIALLY_FILLED", "EXPIRED", "CANCELED", "EXPIRED_IN_MATCH"):
        return wire.Outcome.PARTIAL, px, qty, 0, str(status), "partial"
    if status in ("EXPIRED", "CANCELED", "EXPIRED_IN_MATCH"):
        return wire.Outcome.NOT_FILLED, 0.0, 0.0, 0, str(status), "not_filled"
    if status == "NEW":  # accepted and resting
        return wire.Outcome.SENT, 0.0, 0.0, 0, str(status), "acked"
    return None  # FILLED or PARTIALLY_FILLED with nothing filled (contradicts itself), or a status we do not know


#: order statuses that end an order (any other leaves it live on the book)
_TERMINAL = frozenset({"FILLED", "EXPIRED", "CANCELED", "EXPIRED_IN_MATCH", "REJECTED"})


def parse_order_update(event: Any) -> tuple[str, ParsedReply, bool] | None:
    """An ``ORDER_TRADE_UPDATE`` user-data event: (client order id, what it says of the order, whether it ends
    the order), or None when it is another event or unreadable. ``z`` is the cumulative filled quantity, ``ap``
    the average price, ``X`` the order status."""
    if not isinstance(event, dict) or event.get("e") != "ORDER_TRADE_UPDATE":
        return None
    o = event.get("o")
    if not isinstance(o, dict) or not isinstance(o.get("c"), str) or not isinstance(o.get("X"), str):
        return None
    parsed = parse_order_result({"status": o["X"], "executedQty": o.get("z"), "avgPrice": o.get("ap")})
    if parsed is None:
        return None
    return o["c"], parsed, o["X"] in _TERMINAL


def parse_position(msg: Any, symbol: str) -> float:
    """The signed ``positionAmt`` of ``symbol`` in a ``v2/account.position`` answer (0.0 when the venue lists no
    position for it); LiveTransportError naming the venue's error or what was unreadable."""
    return parse_positions(msg, (symbol,))[0]


def parse_positions(msg: Any, symbols: tuple[str, ...]) -> tuple[float, ...]:
    """The signed ``positionAmt`` of each of ``symbols`` in a ``v2/account.position`` answer (0.0 where the venue
    lists none; other symbols are not ours to trade and are ignored); LiveTransportError naming the venue's error
    or what was unreadable."""
    if not isinstance(msg, dict):
        raise LiveTransportError("binance: position query: unreadable answer")
    error = msg.get("error")
    if error is not None or msg.get("status") != 200:
        body = error if isinstance(error, dict) else {"msg": error}
        raise LiveTransportError(f"binance: position query refused: {body.get('code')} {str(body.get('msg'))[:200]}")
    result = msg.get("result")
    if not isinstance(result, list):
        raise LiveTransportError("binance: position query: the answer has no position list")
    index: dict[Any, int] = {s: i for i, s in enumerate(symbols)}
    totals = [0.0] * len(symbols)
    for p in result:
        i = index.get(p.get("symbol")) if isinstance(p, dict) else None
        if i is not None:
            value = p.get("positionAmt")
            try:
                if isinstance(value, bool) or not isinstance(value, str | int | float):
                    raise TypeError
                amt = float(value)  # signed: reply_number refuses negatives by design
            except (TypeError, ValueError):
                raise LiveTransportError(f"binance: position query: unreadable positionAmt of {symbols[i]} "
                                         f"{str(p.get('positionAmt'))[:40]!r}") from None
            if not math.isfinite(amt):
                raise LiveTransportError(f"binance: position query: non-finite positionAmt of {symbols[i]}")
            totals[i] += amt  # one-way mode: one entry (BOTH); hedge mode: LONG and SHORT add up
    return tuple(totals)


class _Rules:
    """One instrument's order rules, precomputed (the per-order path does arithmetic and formatting only)."""

    __slots__ = ("lot", "min_notional", "min_qty", "name", "pfmt", "qfmt", "symbol", "tick")

    def __init__(self, name: str, symbol: str, tick: float, lot: float, min_qty: float, min_notional: float,
                 price_decimals: int, qty_decimals: int) -> None:
        self.name, self.symbol = name, symbol
        self.tick, self.lot, self.min_qty, self.min_notional = tick, lot, min_qty, min_notional
        self.pfmt = f"{{:.{price_decimals}f}}"
        self.qfmt = f"{{:.{qty_decimals}f}}"

    def price(self, px: float) -> str:
        return self.pfmt.format(round(px / self.tick) * self.tick)  # the nearest tick

    def quantity(self, qty: float) -> float:
        return math.floor(qty / self.lot + 1e-9) * self.lot  # down to the lot step: never more than risk passed


#: order ids remembered with their instrument, for status queries of orders whose reply never came
_SYMBOLS_KEPT = 65_536


def _host_of(url: str) -> str:
    """``wss://host:port`` of a URL (an override's host serves the user-data route too: the emulator)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class BinanceTransport(LiveTransportBase):
    """Live Binance USD-M order entry. Construct via ``make_live_transport('binance', ...)``."""

    name = "binance"
    venue = int(wire.Venue.BINANCE)  # the wire code of the records it sends and answers

    def __init__(self, *, network: str | None, credentials: BinanceCredentials, enable_live: bool = False,
                 url: str | None = None, ca_file: str | None = None, on_reply: ReplyCallback | None = None,
                 symbol: str = "BTCUSDT", price_decimals: int = 1, qty_decimals: int = 3,
                 instruments: InstrumentSet | None = None,
                 recv_window_ms: int = 5000, confirm_mainnet: str | os.PathLike[str] | None = None,
                 user_stream: bool = True, user_stream_url: str | None = None,
                 allow_custom_mainnet_url: bool = False) -> None:
        check_live_guard("binance", enable_live=enable_live, network=network)
        if not isinstance(credentials, BinanceCredentials):
            raise CredentialsError(f"binance transport needs BinanceCredentials, got {type(credentials).__name__}")
        self.network = network
        assert network is not None  # check_live_guard refused anything but a named network
        check_network_binding("binance", credentials, network, confirm_mainnet)
        self.url = resolve_url("binance", network, url, urls=ORDER_URLS, path=ORDER_PATH,
                               allow_custom_mainnet_url=allow_custom_mainnet_url)
        # The user-data stream: the stream host of the network, or the override's own host (the emulator serves
        # every route on one port); bound to the published host on mainnet like the order URL.
        custom = self.url != ORDER_URLS[network]
        self._user_base = user_stream_url or (_host_of(self.url) if custom else _STREAM_HOSTS[network])
        check_mainnet_endpoint("binance", network, self._user_base, _STREAM_HOSTS["mainnet"],
                               allow_custom_mainnet_url, "user_stream_url")
        self._api_key = credentials.api_key.reveal()
        self._signer = credentials.signer()
        if instruments is None:  # one instrument described by ``symbol`` and its decimals; the venue judges the
            # minimums (the single-symbol fleet's behaviour)
            instruments = InstrumentSet([dataclasses.replace(
                BTC, binance_symbol=symbol, tick_size=10.0 ** -price_decimals, lot_size=10.0 ** -qty_decimals,
                min_qty=0.0, min_notional=0.0)])
        self.instruments = instruments
        self._rules = tuple(_Rules(i.name, i.binance_symbol, i.tick_size, i.lot_size, i.min_qty, i.min_notional,
                                   i.price_decimals, i.qty_decimals) for i in instruments)
        self._n = len(instruments)
        self.sent_by = [0] * self._n  # orders sent per instrument id
        self._symbols = tuple(i.binance_symbol for i in instruments)
        self._order_syms: collections.OrderedDict[int, int] = collections.OrderedDict()  # order id -> instrument
        self._recv_window = recv_window_ms
        self.clock_offset_ms = 0  # venue clock minus ours, measured at start (WS-API ``time``)
        self._sink = ReplySink(on_reply)
        self._pending: dict[int, int] = {}  # request id -> order_id (engine thread inserts, reader pops)
        self._queries: dict[int, int] = {}  # status-query request id -> order_id
        self._waiters = {}  # request id -> waiter (start-up reconciliation)
        # Request ids: next() on a count is atomic under the GIL, so the position watch's helper thread can
        # ask the venue while the engine thread sends orders.
        self._ids = itertools.count(1)
        self._session = WsOrderSession(self.url, ca_file=ca_file, name="binance-orders",
                                       on_message=self._on_message, on_disconnect=self._on_disconnect)
        self._ca_file = ca_file
        self._user_stream = user_stream
        self._user: WsOrderSession | None = None
        self.ledger = AccountStreamLedger("binance")  # orders by client order id, checked against the stream
        self._keepalive_due = 0.0  # time.monotonic() of the next listen-key keepalive
        self._user_requests: dict[int, str] = {}  # request id -> "ping" | "renew" (listen-key upkeep)
        self._renew = False  # the stream said listenKeyExpired: take a new key from idle work
        # engine-thread counters
        self.sent = 0
        self.send_failed = 0
        # reader-thread counters
        self.reply_counts: dict[str, int] = {"filled": 0, "partial": 0, "not_filled": 0, "acked": 0, "rejected": 0,
                                        "unmatched": 0, "unparsed": 0, "lost_in_flight": 0, "queries": 0,
                                        "query_answers": 0, "query_unparsed": 0, "query_send_failed": 0,
                                        "stream_events": 0, "stream_resolved": 0, "stream_confirmed": 0,
                                        "stream_mismatch": 0, "stream_unmatched": 0, "stream_unparsed": 0,
                                        "listen_key_pings": 0, "listen_key_renewals": 0,
                                        "listen_key_expired": 0, "unknown_instrument": 0, "below_minimum": 0}

    # --- engine side -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._session.start()
        try:
            self.clock_offset_ms = self._measure_clock_offset()
            if self._user_stream:
                self._open_user_stream()
        except BaseException:
            self.close()  # a start that fails leaves no connection or reader thread behind
            raise

    def _open_user_stream(self, timeout_s: float = 10.0) -> None:
        """Take a listen key and open the user-data stream; refuses to start without it (no venue truth)."""
        req_id = self._take_id()
        key = self._listen_key(self._request(req_id, self._listen_key_frame("userDataStream.start")(req_id),
                                             timeout_s, "user-data stream listen key"))
        self._user = WsOrderSession(self._user_base + USER_STREAM_PATH + key, ca_file=self._ca_file,
                                    name="binance-user", on_message=self._on_user_event,
                                    on_disconnect=self._on_user_disconnect, url_secret=key, stamp_tx=False)
        self._user.start()
        self._keepalive_due = time.monotonic() + KEEPALIVE_S

    def _take_id(self) -> int:
        req_id = next(self._ids)
        return req_id

    def _listen_key_frame(self, method: str) -> Any:
        # USER_STREAM requests carry the API key only, no signature
        return lambda req_id: _encode({"id": req_id, "method": method, "params": {"apiKey": self._api_key}})

    @staticmethod
    def _listen_key(msg: Any) -> str:
        result = msg.get("result") if isinstance(msg, dict) else None
        key = result.get("listenKey") if isinstance(result, dict) else None
        if not isinstance(key, str) or not key or "/" in key:
            # the venue's error, never the whole answer: an unusable key in it is still a key
            error = msg.get("error") if isinstance(msg, dict) else None
            raise LiveTransportError(f"binance: user-data stream refused: "
                                     f"{str(error)[:200] if error else 'no usable listenKey in the answer'}")
        return key

    def pump(self, now: int) -> None:
        """Engine idle work: the listen key's keepalive every 30 min, and a new key after ``listenKeyExpired``
        (never per order; both fire and forget, answered on the reader thread)."""
        if self._user is None:
            return
        if self._renew or time.monotonic() >= self._keepalive_due:
            kind = "renew" if self._renew else "ping"
            self._renew = False
            self._keepalive_due = time.monotonic() + KEEPALIVE_S
            req_id = self._take_id()
            self._user_requests[req_id] = kind
            method = "userDataStream.start" if kind == "renew" else "userDataStream.ping"
            if not self._session.send(self._listen_key_frame(method)(req_id)):
                self._user_requests.pop(req_id, None)
                self._renew = kind == "renew"  # asked again at the next idle pass

    def close(self) -> None:
        super().close()
        user, self._user = self._user, None
        if user is not None:
            user.close()

    def _measure_clock_offset(self, timeout_s: float = 10.0, samples: int = 3) -> int:
        """The venue's clock minus ours (ms), from WS-API ``time`` round trips: the sample with the shortest round
        trip wins (least queueing), its server time taken at the midpoint. Every signed request's ``timestamp``
        carries it, so a skewed host clock cannot push requests out of ``recvWindow`` (-1021)."""
        best: tuple[int, int] | None = None  # (round trip ns, offset ms)
        for _ in range(samples):
            req_id = next(self._ids)
            t0 = time.time_ns()
            msg = self._request(req_id, _encode({"id": req_id, "method": "time"}), timeout_s, "server time")
            t1 = time.time_ns()
            result = msg.get("result") if isinstance(msg, dict) else None
            server = result.get("serverTime") if isinstance(result, dict) else None
            if isinstance(server, bool) or not isinstance(server, int):
                raise LiveTransportError(f"binance: server time: unreadable answer {str(msg)[:200]}")
            offset = server - (t0 + t1) // 2_000_000
            if best is None or t1 - t0 < best[0]:
                best = (t1 - t0, offset)
        assert best is not None
        if abs(best[1]) > self._recv_window:
            log.warning("binance: this host's clock is %d ms off the venue's: corrected on every request, but fix "
                        "the clock (chrony)", best[1])
        return best[1]

    def _check(self, order: tuple) -> _Rules | None:
        """The order's instrument rules, or None (counted) when it cannot be sent: an instrument id outside the
        session's list, or a quantity (down to the lot) or notional below the symbol's minimum."""
        sym = order[ORDER_SYMBOL]
        if not 0 <= sym < self._n:
            self.reply_counts["unknown_instrument"] += 1
            return None
        rules = self._rules[sym]
        qty = rules.quantity(order[ORDER_QTY])
        if qty <= 0.0 or qty < rules.min_qty - 1e-12 or qty * order[ORDER_PX] < rules.min_notional:
            self.reply_counts["below_minimum"] += 1
            return None
        return rules

    def build_request(self, order: tuple, req_id: int, now_ms: int, rules: _Rules | None = None) -> dict[str, Any]:
        """The signed ``order.place`` request for ``order`` (also used by the benchmark); ``rules``: its
        instrument's (default: looked up by its id, IndexError outside the list)."""
        if rules is None:
            rules = self._rules[order[ORDER_SYMBOL]]
        params: dict[str, Any] = {
            "apiKey": self._api_key,
            "newClientOrderId": f"caerus-{order[ORDER_ORDER_ID]}",
            "newOrderRespType": "RESULT",  # IOC answers carry the final status and fills
            "price": rules.price(order[ORDER_PX]),
            "quantity": rules.qfmt.format(rules.quantity(order[ORDER_QTY])),
            "recvWindow": self._recv_window,
            "side": "BUY" if order[ORDER_SIDE] > 0 else "SELL",
            "symbol": rules.symbol,
            "timeInForce": _TIF.get(order[ORDER_TIF], "IOC"),
            "timestamp": now_ms + self.clock_offset_ms,
            "type": "LIMIT",
        }
        params["signature"] = self._signer.sign(query_string(params))
        return {"id": req_id, "method": "order.place", "params": params}

    def send_msg(self, order: tuple) -> SendResult:
        rules = self._check(order)
        if rules is None:  # refused before anything is signed
            self.send_failed += 1
            return SendResult(_SENT_FAILED, t_sent=time.time_ns())
        req_id = next(self._ids)
        frame = _encode(self.build_request(order, req_id, time.time_ns() // 1_000_000, rules))
        self._pending[req_id] = order[ORDER_ORDER_ID]
        syms = self._order_syms
        syms[order[ORDER_ORDER_ID]] = order[ORDER_SYMBOL]
        if len(syms) > _SYMBOLS_KEPT:
            syms.popitem(last=False)
        self.ledger.awaiting(f"caerus-{order[ORDER_ORDER_ID]}", req_id, order[ORDER_TIF] == _IOC, rules.name)
        if self._session.send(frame, tag=order[ORDER_ORDER_ID]):
            self.sent += 1
            self.sent_by[order[ORDER_SYMBOL]] += 1
            return SendResult(wire.Outcome.SENT, t_sent=time.time_ns())
        self._pending.pop(req_id, None)
        self.ledger.forget(f"caerus-{order[ORDER_ORDER_ID]}")
        self.send_failed += 1
        return SendResult(_SENT_FAILED, t_sent=time.time_ns())

    def rehearse(self, order: tuple) -> None:
        """A shadow order: the signed ``order.place`` frame built and encoded exactly as ``send_msg`` builds it,
        then dropped (no request id taken, nothing pending, nothing sent)."""
        sym = order[ORDER_SYMBOL]
        if not 0 <= sym < self._n:
            return  # a real order would be refused the same way (counted there)
        _encode(self.build_request(order, 0, time.time_ns() // 1_000_000, self._rules[sym]))
        self.rehearsed += 1

    def query_status(self, order_id: int) -> bool:
        """Ask the venue what became of ``order_id`` (engine thread). Never resends the order."""
        req_id = next(self._ids)
        symbol = self._symbols[self._order_syms.get(order_id, 0)]
        params: dict[str, Any] = {"apiKey": self._api_key, "origClientOrderId": f"caerus-{order_id}",
                                  "recvWindow": self._recv_window, "symbol": symbol,
                                  "timestamp": time.time_ns() // 1_000_000 + self.clock_offset_ms}
        params["signature"] = self._signer.sign(query_string(params))
        self._queries[req_id] = order_id
        if self._session.send(_encode({"id": req_id, "method": "order.status", "params": params})):
            self.reply_counts["queries"] += 1
            return True
        self._queries.pop(req_id, None)
        self.reply_counts["query_send_failed"] += 1
        return False

    def _signed_request(self, method: str, params: dict[str, Any], timeout_s: float, what: str) -> Any:
        """One signed WS-API request answered on the order connection (blocking, bounded; off the hot path)."""
        req_id = next(self._ids)
        params = {"apiKey": self._api_key, **params, "recvWindow": self._recv_window,
                  "timestamp": time.time_ns() // 1_000_000 + self.clock_offset_ms}
        params["signature"] = self._signer.sign(query_string(params))
        return self._request(req_id, _encode({"id": req_id, "method": method, "params": params}), timeout_s, what)

    def cancel(self, order_id: int, instrument: int, timeout_s: float) -> bool:
        """``order.cancel`` by client order id (shutdown): True cancelled, False no longer open (-2011)."""
        msg = self._signed_request("order.cancel", {"origClientOrderId": f"caerus-{order_id}",
                                                    "symbol": self._symbols[instrument]},
                                   timeout_s, f"cancel of order {order_id}")
        error = msg.get("error") if isinstance(msg, dict) else None
        if isinstance(error, dict) and error.get("code") == -2011:
            return False
        result = msg.get("result") if isinstance(msg, dict) else None
        if not isinstance(result, dict) or result.get("status") != "CANCELED":
            raise LiveTransportError(f"binance: cancel of order {order_id} refused: {str(error or msg)[:200]}")
        return True

    def reduce_position(self, instrument: int, size: float, px: float, timeout_s: float) -> float:
        """A reduce-only MARKET order taking ``size`` (the signed position) off (``px`` unused); the size filled."""
        rules = self._rules[instrument]
        msg = self._signed_request("order.place", {
            "newOrderRespType": "RESULT", "quantity": rules.qfmt.format(rules.quantity(abs(size))),
            "reduceOnly": "true", "side": "SELL" if size > 0 else "BUY", "symbol": rules.symbol, "type": "MARKET",
        }, timeout_s, f"reduce-only order on {rules.symbol}")
        parsed = parse_order_reply(msg) if isinstance(msg, dict) else None
        if parsed is None or parsed[0] == wire.Outcome.VENUE_REJECTED:
            raise LiveTransportError(f"binance: reduce-only order on {rules.symbol} refused: "
                                     f"{parsed[4] if parsed else str(msg)[:200]}")
        return parsed[2]

    def venue_state(self, timeout_s: float) -> VenueState:
        """The account's position on every listed symbol (``v2/account.position``: for one symbol, asked by name;
        for many, every position of the account in one answer), read before the first order and by the position
        watch. The futures WebSocket API lists no open orders: ``resting`` is 0 and ``open_orders`` None (an open
        GTC from before a restart is found by its status query when its order id comes up)."""
        req_id = next(self._ids)
        params: dict[str, Any] = {"apiKey": self._api_key, "recvWindow": self._recv_window,
                                  "timestamp": time.time_ns() // 1_000_000 + self.clock_offset_ms}
        if self._n == 1:
            params["symbol"] = self._symbols[0]
        params["signature"] = self._signer.sign(query_string(params))
        msg = self._request(req_id, _encode({"id": req_id, "method": "v2/account.position", "params": params}),
                            timeout_s, "position query")
        return VenueState(parse_positions(msg, self._symbols), (0.0,) * self._n)

    def summary(self) -> dict[str, object]:
        """Final JSON-able summary (the execution process writes it to <metrics-dir>/<name>.json); no secrets."""
        return {"transport": self.name, "network": self.network, "url": self.url, "signer": self._signer.kind,
                "clock_offset_ms": self.clock_offset_ms, "counters": self.stats(),
                "sent_by_instrument": dict(zip(self.instruments.names, self.sent_by, strict=True))}

    # --- reader side -----------------------------------------------------------------------------------
    def _on_message(self, msg: Any, t_recv: int) -> None:
        req_id = msg.get("id") if isinstance(msg, dict) else None
        if not isinstance(req_id, int):
            self.reply_counts["unmatched"] += 1
            return
        if self._answered(req_id, msg):
            return
        order_id = self._pending.get(req_id)
        if order_id is None:
            kind = self._user_requests.pop(req_id, None)
            if kind is not None:
                self._on_listen_key_answer(kind, msg)
            else:
                self._on_query_answer(req_id, msg, t_recv)
            return
        parsed = parse_order_reply(msg)
        if parsed is None:
            # The order stays tracked (in_flight counts it): a later reply, a status query or a disconnect
            # resolves it, never this unreadable one.
            self.reply_counts["unparsed"] += 1
            return
        if self._pending.pop(req_id, None) is None:
            return  # the account stream settled it a moment ago (its update is the same truth)
        outcome, px, qty, code, text, key = parsed
        self.reply_counts[key] += 1
        self.ledger.settled(f"caerus-{order_id}", order_id, outcome, qty)
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, text))

    def _on_query_answer(self, req_id: int, msg: dict[str, Any], t_recv: int) -> None:
        order_id = self._queries.pop(req_id, None)
        if order_id is None:
            self.reply_counts["unmatched"] += 1
            return
        parsed = parse_order_reply(msg)  # order.status answers with the order itself
        if parsed is None:
            self.reply_counts["query_unparsed"] += 1  # the order stays UNKNOWN; the engine asks again
            return
        outcome, px, qty, code, text, _key = parsed
        self.reply_counts["query_answers"] += 1
        self.ledger.settled(f"caerus-{order_id}", order_id, outcome, qty)
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, text, by_query=True))

    def _on_listen_key_answer(self, kind: str, msg: Any) -> None:
        """Reader thread: a keepalive's or a renewal's answer. A new key moves the user-data stream to it."""
        try:
            key = self._listen_key(msg)
        except LiveTransportError as exc:
            log.warning("binance: listen key %s refused (%s); asked again", kind, exc)
            self._renew = True
            return
        self.reply_counts["listen_key_pings" if kind == "ping" else "listen_key_renewals"] += 1
        user = self._user
        if user is not None and not user.url.endswith(USER_STREAM_PATH + key):
            user.set_url(self._user_base + USER_STREAM_PATH + key, url_secret=key)
            user.drop()  # its reader reconnects to the new key's stream

    def _on_user_event(self, msg: Any, t_recv: int) -> None:
        """User-data stream reader thread: ORDER_TRADE_UPDATE checked against (or settling) our orders."""
        self.reply_counts["stream_events"] += 1
        if isinstance(msg, dict) and isinstance(msg.get("data"), dict):
            msg = msg["data"]  # the combined-stream wrapper, if the route gives one
        event = msg.get("e") if isinstance(msg, dict) else None
        if event == "listenKeyExpired":
            self.reply_counts["listen_key_expired"] += 1
            self._renew = True  # idle work takes a new key; until then the stream is silent
            return
        if event != "ORDER_TRADE_UPDATE":
            return  # ACCOUNT_UPDATE, margin calls...: the position is reconciled from the venue's own query
        update = parse_order_update(msg)
        if update is None:
            self.reply_counts["stream_unparsed"] += 1
            return
        client_id, (outcome, px, qty, code, text, _key), terminal = update
        verdict, order_id = self.ledger.on_update(client_id, outcome, qty, terminal, self._take_pending)
        if verdict is Verdict.SETTLE:
            self.reply_counts["stream_resolved"] += 1
            self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, f"ORDER_TRADE_UPDATE: {text}"))
        elif verdict is not Verdict.IGNORE:
            self.reply_counts[f"stream_{verdict.value}"] += 1
            if verdict is Verdict.MISMATCH:
                log.warning("%s", self.ledger.last_mismatch)

    def _take_pending(self, req_id: int) -> int | None:
        return self._pending.pop(req_id, None)

    def _on_user_disconnect(self) -> None:
        """The user-data stream dropped (its reader reconnects): updates sent meanwhile are not replayed; replies,
        status queries and position reconciliation cover them."""

    def stats(self) -> dict[str, int]:
        out = super().stats()
        user = self._user
        if user is not None:
            out.update({"stream_disconnects": user.disconnects, "stream_reconnects": user.reconnects,
                        "stream_malformed": user.malformed})
        return out

    def _on_disconnect(self) -> None:
        self._queries.clear()  # unanswered queries: the engine asks again after the next reply timeout
        self.ledger.reset_awaiting()
        t = time.time_ns()
        while self._pending:
            try:
                _, order_id = self._pending.popitem()
            except KeyError:
                break
            self.reply_counts["lost_in_flight"] += 1
            self._sink.deliver(VenueReply(order_id, _SENT_FAILED, 0.0, 0.0, 0, t,
                                          "connection lost before the venue answered; order state unknown"))

    def __repr__(self) -> str:
        return f"BinanceTransport(network={self.network}, url={self.url}, signer={self._signer.kind})"
