"""Binance USD-M live transport: ``order.place`` over the WebSocket API, each request signed (HMAC-SHA256 or
Ed25519) with the params sorted by name.

``send_msg`` builds the params from the ORDER tuple, signs, writes one text frame and returns SENT; the venue's
answer (``{"id", "status", "result"|"error"}``) is correlated by request id on the reader thread and reported as
a :class:`VenueReply`: FILLED / PARTIAL / NOT_FILLED (IOC expired) / SENT (resting, acknowledged) /
VENUE_REJECTED (``venue_code`` = Binance error code, e.g. -1022 bad signature).
"""

from __future__ import annotations

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
    ReplyCallback,
    SendResult,
    VenueReply,
)
from caerus.execution.transports.live import (
    LiveTransportBase,
    ReplySink,
    WsOrderSession,
    check_live_guard,
    resolve_url,
)
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.binance.signing import query_string

_TIF = {int(wire.Tif.IOC): "IOC", int(wire.Tif.GTC): "GTC", int(wire.Tif.ALO): "GTX"}
_SENT_FAILED = wire.Outcome.SEND_FAILED
_encode = msgspec.json.Encoder().encode


class BinanceTransport(LiveTransportBase):
    """Live Binance USD-M order entry. Construct via ``make_live_transport('binance', ...)``."""

    name = "binance"

    def __init__(self, *, network: str | None, credentials: BinanceCredentials, enable_live: bool = False,
                 url: str | None = None, ca_file: str | None = None, on_reply: ReplyCallback | None = None,
                 symbol: str = "BTCUSDT", price_decimals: int = 1, qty_decimals: int = 3,
                 recv_window_ms: int = 5000) -> None:
        check_live_guard("binance", enable_live=enable_live, network=network)
        if not isinstance(credentials, BinanceCredentials):
            raise CredentialsError(f"binance transport needs BinanceCredentials, got {type(credentials).__name__}")
        self.network = network
        assert network is not None  # check_live_guard refused anything but a named network
        self.url = resolve_url("binance", network, url)
        self._api_key = credentials.api_key.reveal()
        self._signer = credentials.signer()
        self._symbol = symbol
        self._pfmt = f"{{:.{price_decimals}f}}"
        self._qfmt = f"{{:.{qty_decimals}f}}"
        self._recv_window = recv_window_ms
        self._sink = ReplySink(on_reply)
        self._pending: dict[int, int] = {}  # request id -> order_id (engine thread inserts, reader pops)
        self._next_id = 1
        self._session = WsOrderSession(self.url, ca_file=ca_file, name="binance-orders",
                                       on_message=self._on_message, on_disconnect=self._on_disconnect)
        # engine-thread counters
        self.sent = 0
        self.send_failed = 0
        # reader-thread counters
        self.reply_counts: dict[str, int] = {"filled": 0, "partial": 0, "not_filled": 0, "acked": 0, "rejected": 0,
                                        "unmatched": 0, "lost_in_flight": 0}

    # --- engine side -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._session.start()

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
            "timestamp": now_ms,
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

    def summary(self) -> dict[str, object]:
        """Final JSON-able summary (the execution process writes it to <metrics-dir>/<name>.json); no secrets."""
        return {"transport": self.name, "network": self.network, "url": self.url, "signer": self._signer.kind,
                "counters": self.stats()}

    # --- reader side -----------------------------------------------------------------------------------
    def _on_message(self, msg: dict[str, Any], t_recv: int) -> None:
        req_id = msg.get("id")
        order_id = self._pending.pop(req_id, None) if isinstance(req_id, int) else None
        if order_id is None:
            self.reply_counts["unmatched"] += 1
            return
        error = msg.get("error")
        if error is not None or msg.get("status") != 200:
            error = error or {}
            self.reply_counts["rejected"] += 1
            self._sink.deliver(VenueReply(order_id, wire.Outcome.VENUE_REJECTED, 0.0, 0.0,
                                          int(error.get("code", 0)), t_recv, str(error.get("msg", ""))))
            return
        result = msg["result"]
        status = result.get("status")
        qty = float(result.get("executedQty") or 0.0)
        px = float(result.get("avgPrice") or 0.0)
        if status == "FILLED":
            outcome, key = wire.Outcome.FILLED, "filled"
        elif status in ("PARTIALLY_FILLED",) or (status in ("EXPIRED", "CANCELED") and qty > 0):
            outcome, key = wire.Outcome.PARTIAL, "partial"
        elif status in ("EXPIRED", "CANCELED", "EXPIRED_IN_MATCH"):
            outcome, key = wire.Outcome.NOT_FILLED, "not_filled"
        else:  # NEW: accepted and resting
            outcome, key = wire.Outcome.SENT, "acked"
        self.reply_counts[key] += 1
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, 0, t_recv, str(status)))

    def _on_disconnect(self) -> None:
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
