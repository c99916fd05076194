"""Binance USD-M live transport: ``order.place`` over the WebSocket API, each request signed (HMAC-SHA256 or
Ed25519) with the params sorted by name.

``send_msg`` builds the params from the ORDER tuple, signs, writes one text frame and returns SENT; the venue's
answer (``{"id", "status", "result"|"error"}``) is correlated by request id on the reader thread and reported as
a :class:`VenueReply`: FILLED / PARTIAL / NOT_FILLED (IOC expired) / SENT (resting, acknowledged) /
VENUE_REJECTED (``venue_code`` = Binance error code, e.g. -1022 bad signature).

``query_status(order_id)`` asks ``order.status`` by the client order id every order carries (``caerus-<id>``);
the answer has the order's shape and is read by the same parser, delivered with ``by_query`` set. -2013 "Order
does not exist" means the venue never took the order: a rejection with nothing filled.
"""

from __future__ import annotations

import logging
import math
import os
import time
from typing import Any

import msgspec

from caerus import wire
from caerus.execution.credentials import CredentialsError
from caerus.execution.transports.base import (
    O_ORDER_ID,
    O_PX,
    O_QTY,
    O_SIDE,
    O_TIF,
    ParsedReply,
    ReplyCallback,
    SendResult,
    VenueReply,
    VenueState,
    reply_number,
)
from caerus.execution.transports.live import (
    LiveTransportBase,
    LiveTransportError,
    ReplySink,
    WsOrderSession,
    check_live_guard,
    check_network_binding,
    resolve_url,
)
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.signing import query_string

_TIF = {int(wire.Tif.IOC): "IOC", int(wire.Tif.GTC): "GTC", int(wire.Tif.ALO): "GTX"}
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
    if status == "PARTIALLY_FILLED" or (status in ("EXPIRED", "CANCELED", "EXPIRED_IN_MATCH") and qty > 0.0):
        return wire.Outcome.PARTIAL, px, qty, 0, str(status), "partial"
    if status in ("EXPIRED", "CANCELED", "EXPIRED_IN_MATCH"):
        return wire.Outcome.NOT_FILLED, 0.0, 0.0, 0, str(status), "not_filled"
    if status == "NEW":  # accepted and resting
        return wire.Outcome.SENT, 0.0, 0.0, 0, str(status), "acked"
    return None  # FILLED with nothing filled, or a status we do not know


def parse_position(msg: Any, symbol: str) -> float:
    """The signed ``positionAmt`` of ``symbol`` in a ``v2/account.position`` answer (0.0 when the venue lists no
    position for it); LiveTransportError naming the venue's error or what was unreadable."""
    if not isinstance(msg, dict):
        raise LiveTransportError("binance: position query: unreadable answer")
    error = msg.get("error")
    if error is not None or msg.get("status") != 200:
        body = error if isinstance(error, dict) else {"msg": error}
        raise LiveTransportError(f"binance: position query refused: {body.get('code')} {str(body.get('msg'))[:200]}")
    result = msg.get("result")
    if not isinstance(result, list):
        raise LiveTransportError("binance: position query: the answer has no position list")
    total = 0.0
    for p in result:
        if isinstance(p, dict) and p.get("symbol") == symbol:
            value = p.get("positionAmt")
            try:
                if isinstance(value, bool) or not isinstance(value, str | int | float):
                    raise TypeError
                amt = float(value)  # signed: reply_number refuses negatives by design
            except (TypeError, ValueError):
                raise LiveTransportError(f"binance: position query: unreadable positionAmt "
                                         f"{str(p.get('positionAmt'))[:40]!r}") from None
            if not math.isfinite(amt):
                raise LiveTransportError("binance: position query: non-finite positionAmt")
            total += amt  # one-way mode: one entry (BOTH); hedge mode: LONG and SHORT add up
    return total


class BinanceTransport(LiveTransportBase):
    """Live Binance USD-M order entry. Construct via ``make_live_transport('binance', ...)``."""

    name = "binance"

    def __init__(self, *, network: str | None, credentials: BinanceCredentials, enable_live: bool = False,
                 url: str | None = None, ca_file: str | None = None, on_reply: ReplyCallback | None = None,
                 symbol: str = "BTCUSDT", price_decimals: int = 1, qty_decimals: int = 3,
                 recv_window_ms: int = 5000, confirm_mainnet: str | os.PathLike[str] | None = None) -> None:
        check_live_guard("binance", enable_live=enable_live, network=network)
        if not isinstance(credentials, BinanceCredentials):
            raise CredentialsError(f"binance transport needs BinanceCredentials, got {type(credentials).__name__}")
        self.network = network
        assert network is not None  # check_live_guard refused anything but a named network
        check_network_binding("binance", credentials, network, confirm_mainnet)
        self.url = resolve_url("binance", network, url)
        self._api_key = credentials.api_key.reveal()
        self._signer = credentials.signer()
        self._symbol = symbol
        self._pfmt = f"{{:.{price_decimals}f}}"
        self._qfmt = f"{{:.{qty_decimals}f}}"
        self._recv_window = recv_window_ms
        self.clock_offset_ms = 0  # venue clock minus ours, measured at start (WS-API ``time``)
        self._sink = ReplySink(on_reply)
        self._pending: dict[int, int] = {}  # request id -> order_id (engine thread inserts, reader pops)
        self._queries: dict[int, int] = {}  # status-query request id -> order_id
        self._waiters = {}  # request id -> waiter (start-up reconciliation)
        self._next_id = 1
        self._session = WsOrderSession(self.url, ca_file=ca_file, name="binance-orders",
                                       on_message=self._on_message, on_disconnect=self._on_disconnect)
        # engine-thread counters
        self.sent = 0
        self.send_failed = 0
        # reader-thread counters
        self.reply_counts: dict[str, int] = {"filled": 0, "partial": 0, "not_filled": 0, "acked": 0, "rejected": 0,
                                        "unmatched": 0, "unparsed": 0, "lost_in_flight": 0, "queries": 0,
                                        "query_answers": 0, "query_unparsed": 0, "query_send_failed": 0}

    # --- engine side -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._session.start()
        try:
            self.clock_offset_ms = self._measure_clock_offset()
        except BaseException:
            self._session.close()  # a start that fails leaves no connection or reader thread behind
            raise

    def _measure_clock_offset(self, timeout_s: float = 10.0, samples: int = 3) -> int:
        """The venue's clock minus ours (ms), from WS-API ``time`` round trips: the sample with the shortest round
        trip wins (least queueing), its server time taken at the midpoint. Every signed request's ``timestamp``
        carries it, so a skewed host clock cannot push requests out of ``recvWindow`` (-1021)."""
        best: tuple[int, int] | None = None  # (round trip ns, offset ms)
        for _ in range(samples):
            req_id = self._next_id
            self._next_id = req_id + 1
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

    def build_request(self, order: tuple, req_id: int, now_ms: int) -> dict[str, Any]:
        """The signed ``order.place`` request for ``order`` (also used by the benchmark)."""
        params: dict[str, Any] = {
            "apiKey": self._api_key,
            "newClientOrderId": f"caerus-{order[O_ORDER_ID]}",
            "newOrderRespType": "RESULT",  # IOC answers carry the final status and fills
            "price": self._pfmt.format(order[O_PX]),
            "quantity": self._qfmt.format(order[O_QTY]),
            "recvWindow": self._recv_window,
            "side": "BUY" if order[O_SIDE] > 0 else "SELL",
            "symbol": self._symbol,
            "timeInForce": _TIF.get(order[O_TIF], "IOC"),
            "timestamp": now_ms + self.clock_offset_ms,
            "type": "LIMIT",
        }
        params["signature"] = self._signer.sign(query_string(params))
        return {"id": req_id, "method": "order.place", "params": params}

    def send_msg(self, order: tuple) -> SendResult:
        req_id = self._next_id
        self._next_id = req_id + 1
        frame = _encode(self.build_request(order, req_id, time.time_ns() // 1_000_000))
        self._pending[req_id] = order[O_ORDER_ID]
        if self._session.send(frame):
            self.sent += 1
            return SendResult(wire.Outcome.SENT, t_sent=time.time_ns())
        self._pending.pop(req_id, None)
        self.send_failed += 1
        return SendResult(_SENT_FAILED, t_sent=time.time_ns())

    def query_status(self, order_id: int) -> bool:
        """Ask the venue what became of ``order_id`` (engine thread). Never resends the order."""
        req_id = self._next_id
        self._next_id = req_id + 1
        params: dict[str, Any] = {"apiKey": self._api_key, "origClientOrderId": f"caerus-{order_id}",
                                  "recvWindow": self._recv_window, "symbol": self._symbol,
                                  "timestamp": time.time_ns() // 1_000_000 + self.clock_offset_ms}
        params["signature"] = self._signer.sign(query_string(params))
        self._queries[req_id] = order_id
        if self._session.send(_encode({"id": req_id, "method": "order.status", "params": params})):
            self.reply_counts["queries"] += 1
            return True
        self._queries.pop(req_id, None)
        self.reply_counts["query_send_failed"] += 1
        return False

    def venue_state(self, timeout_s: float) -> VenueState:
        """The account's position on the symbol (``v2/account.position``), read before the first order. The
        futures WebSocket API lists no open orders: ``resting`` is 0 (an open GTC from before a restart is
        found by its status query when its order id comes up)."""
        req_id = self._next_id
        self._next_id = req_id + 1
        params: dict[str, Any] = {"apiKey": self._api_key, "recvWindow": self._recv_window, "symbol": self._symbol,
                                  "timestamp": time.time_ns() // 1_000_000 + self.clock_offset_ms}
        params["signature"] = self._signer.sign(query_string(params))
        msg = self._request(req_id, _encode({"id": req_id, "method": "v2/account.position", "params": params}),
                            timeout_s, "position query")
        return VenueState(parse_position(msg, self._symbol), 0.0)

    def summary(self) -> dict[str, object]:
        """Final JSON-able summary (the execution process writes it to <metrics-dir>/<name>.json); no secrets."""
        return {"transport": self.name, "network": self.network, "url": self.url, "signer": self._signer.kind,
                "clock_offset_ms": self.clock_offset_ms, "counters": self.stats()}

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
            self._on_query_answer(req_id, msg, t_recv)
            return
        parsed = parse_order_reply(msg)
        if parsed is None:
            # The order stays tracked (in_flight counts it): a later reply, a status query or a disconnect
            # resolves it, never this unreadable one.
            self.reply_counts["unparsed"] += 1
            return
        self._pending.pop(req_id, None)
        outcome, px, qty, code, text, key = parsed
        self.reply_counts[key] += 1
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
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, text, by_query=True))

    def _on_disconnect(self) -> None:
        self._queries.clear()  # unanswered queries: the engine asks again after the next reply timeout
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
