"""Hyperliquid live transport: order actions posted over the WebSocket (``{"method":"post","id":N,"request":
{"type":"action","payload":{action, nonce, signature, vaultAddress}}}``), signed like the SDK's
``sign_l1_action`` (see caerus.venues.hyperliquid.signing).

Prices are rounded as the venue requires for perps (at most 5 significant figures and ``6 - sz_decimals``
decimals), sizes to ``sz_decimals``. Replies (``{"channel":"post","data":{"id":N,"response":...}}``) become
VenueReplies: ``filled`` -> FILLED/PARTIAL, ``resting`` -> SENT (acknowledged), IOC "could not immediately match"
-> NOT_FILLED, any other error -> VENUE_REJECTED. Hyperliquid has no numeric error codes, so ``venue_code`` says
where the rejection came from: -1 order status error, -2 action refused (``status: err``, e.g. a signature that
recovers to an unknown wallet), -3 request refused (``type: error``).

Every order carries a client order id (``cloid``, 0x + the order id as 32 hex digits), so ``query_status``
can ask ``orderStatus`` over the same connection (an ``info`` post) for an order whose reply never came; the
answer is read by :func:`parse_order_status` and delivered with ``by_query`` set. Never a resend.

Venue truth: the same connection subscribes to the account's ``orderUpdates`` and ``userFills`` (again after every
reconnect). An update for an order whose reply has not come settles it at once (``stream_resolved``: a lost reply
no longer waits for the deadline); an update for an order a reply already settled is compared with that reply
(``stream_confirmed``, or ``stream_mismatch`` logged with both sides); an update that fills or ends an order
resting on the book is delivered as its reply (caerus.venuekit.account_stream). The fills settle too:
fills that complete an order awaiting its reply settle it (``fills_resolved``), and the fills of every order are
checked against what its reply said (``fills_confirmed``; more, or less after a grace period, is a mismatch naming
the instrument and both sides, and the position watch halts trading on it). ``userFills``' first message after a
subscription is the account's history (``isSnapshot``): skipped, its fills were counted when they happened.

Many instruments: each order carries its instrument id (ORDER.symbol); the asset index, ``szDecimals`` and coin
come from the session's instrument list (caerus.instruments, ``instruments.json``). An order whose id is not in
the list is refused before it is signed (``unknown_instrument``, SEND_FAILED), as is one the venue would refuse
for its size (``below_minimum``): a size that is 0 on the coin's ``szDecimals``, or worth less than
:data:`MIN_ORDER_VALUE` at its limit price. ``venue_state`` reads every listed
coin's position and open orders in one pair of queries.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

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
from caerus.venues.hyperliquid import ORDER_URLS, data
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials
from caerus.venues.hyperliquid.nonces import NonceReservation
from caerus.venues.hyperliquid.signing import order_action, order_wire

_TIF = {int(wire.Tif.IOC): "Ioc", int(wire.Tif.GTC): "Gtc", int(wire.Tif.ALO): "Alo"}
_IOC = int(wire.Tif.IOC)
CODE_ORDER_ERROR = -1
CODE_ACTION_ERROR = -2
CODE_REQUEST_ERROR = -3
#: USD: Hyperliquid refuses an order worth less ("Order must have minimum value of $10"); reduce-only orders aside
MIN_ORDER_VALUE = 10.0
#: distinct rejection texts counted in ``rejects_by_reason``; any further text counts under "other"
_MAX_REASONS = 16
_NO_MATCH = "could not immediately match"
_encode = msgspec.json.Encoder().encode
log = logging.getLogger("caerus.execution.transports.hyperliquid")


#: order statuses of an order still live on the book (an update with any other status ends the order)
_LIVE = frozenset({"open", "triggered"})
#: order statuses that mean "accepted, not yet filled" (a trigger or a fill still to come), never a rejection
_WAITING = frozenset({"waitingForFill", "waitingForTrigger"})


def parse_post_response(response: Any, size: float) -> ParsedReply | None:
    """What the ``response`` of a ``post`` reply says about an order of ``size``, or None when it cannot be read.

    None means: do not resolve the order from this reply (it stays tracked until a reply that parses, a status
    query or a disconnect resolves it): a string ``response``, no ``statuses``, a fill with a missing, negative or
    non-finite size or price, a status of unknown shape. ``waitingForFill`` / ``waitingForTrigger`` are accepted
    orders (SENT), not rejections.
    """
    if not isinstance(response, dict):
        return None
    if response.get("type") != "action":
        if response.get("type") == "error":  # the request itself was refused: nothing was placed
            return wire.Outcome.VENUE_REJECTED, 0.0, 0.0, CODE_REQUEST_ERROR, str(response.get("payload"))[:200], \
                "rejected"
        return None
    payload = response.get("payload")
    if not isinstance(payload, dict):
        return None
    if payload.get("status") != "ok":
        if payload.get("status") == "err":
            return wire.Outcome.VENUE_REJECTED, 0.0, 0.0, CODE_ACTION_ERROR, str(payload.get("response"))[:200], \
                "rejected"
        return None
    inner = payload.get("response")
    data = inner.get("data") if isinstance(inner, dict) else None
    statuses = data.get("statuses") if isinstance(data, dict) else None
    if not isinstance(statuses, list) or not statuses:
        return None
    status = statuses[0]
    if isinstance(status, str):
        return (wire.Outcome.SENT, 0.0, 0.0, 0, status, "acked") if status in _WAITING else None
    if not isinstance(status, dict):
        return None
    if "filled" in status:
        f = status["filled"]
        if not isinstance(f, dict):
            return None
        qty, px = reply_number(f.get("totalSz")), reply_number(f.get("avgPx"))
        if qty is None or px is None or qty <= 0.0 or px <= 0.0:
            return None
        full = qty >= size - 1e-12
        return (wire.Outcome.FILLED if full else wire.Outcome.PARTIAL, px, qty, 0, f"oid={f.get('oid')}",
                "filled" if full else "partial")
    if "resting" in status:
        resting = status["resting"]
        oid = resting.get("oid") if isinstance(resting, dict) else None
        return wire.Outcome.SENT, 0.0, 0.0, 0, f"resting oid={oid}", "acked"
    if "error" in status:
        text = str(status["error"])[:200]
        if _NO_MATCH in text:
            return wire.Outcome.NOT_FILLED, 0.0, 0.0, 0, text, "not_filled"
        return wire.Outcome.VENUE_REJECTED, 0.0, 0.0, CODE_ORDER_ERROR, text, "rejected"
    return None


_CLOSED = frozenset({"filled", "canceled", "marginCanceled", "vaultWithdrawalCanceled", "openInterestCapCanceled",
                     "selfTradeCanceled", "reduceOnlyCanceled", "siblingFilledCanceled", "delistedCanceled",
                     "liquidatedCanceled", "scheduledCancel", "rejected", "tickRejected", "minTradeNtlRejected",
                     "perpMarginRejected", "reduceOnlyRejected", "badAloPxRejected", "iocCancelRejected",
                     "badTriggerPxRejected", "marketOrderNoLiquidityRejected"})


def cloid(order_id: int) -> str:
    """The client order id an order carries: 0x + the order id as 32 hex digits (128 bits)."""
    return f"0x{order_id & ((1 << 128) - 1):032x}"


def parse_order_status(response: Any) -> ParsedReply | None:
    """What an ``orderStatus`` info answer (the ``response`` of an info post) says, or None when unreadable.

    ``unknownOid``: the venue never took the order (nothing filled). ``open``: resting (SENT), or PARTIAL when
    part of it filled. ``filled``: FILLED. Any cancel or reject: NOT_FILLED, or PARTIAL for what filled first.
    The answer has no average fill price: the order's limit price is reported, the worst price it could have
    filled at.
    """
    if not isinstance(response, dict) or response.get("type") != "info":
        return None
    payload = response.get("payload")
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, dict):
        return None
    if data.get("status") == "unknownOid":
        return wire.Outcome.NOT_FILLED, 0.0, 0.0, 0, "unknownOid: the venue never took the order", "query_unknown"
    rec = data.get("order")
    if data.get("status") != "order" or not isinstance(rec, dict):
        return None
    return order_state(rec.get("order"), rec.get("status"))


def order_state(order: Any, status: Any) -> ParsedReply | None:
    """What an order record and its status say (an ``orderStatus`` answer, an ``orderUpdates`` event); None
    when unreadable. The record has no average fill price: the limit price is reported, the worst it could be."""
    if not isinstance(order, dict) or not isinstance(status, str):
        return None
    orig, left = reply_number(order.get("origSz")), reply_number(order.get("sz"))
    px = reply_number(order.get("limitPx"))
    if orig is None or left is None or px is None or left > orig or px <= 0.0 or orig <= 0.0:
        return None
    filled = orig - left
    if status == "filled":
        return wire.Outcome.FILLED, px, orig, 0, status, "query_filled"
    if status in ("open", "triggered"):
        if filled > 1e-12:
            return wire.Outcome.PARTIAL, px, filled, 0, status, "query_partial"
        return wire.Outcome.SENT, 0.0, 0.0, 0, status, "query_open"
    if status in _CLOSED or status.endswith(("Canceled", "Rejected")):
        if filled > 1e-12:
            return wire.Outcome.PARTIAL, px, filled, 0, status, "query_partial"
        return wire.Outcome.NOT_FILLED, 0.0, 0.0, 0, status, "query_not_filled"
    return None


def _signed(value: Any, what: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise LiveTransportError(f"hyperliquid: {what}: unreadable number {str(value)[:40]!r}") from None
    if not math.isfinite(x):
        raise LiveTransportError(f"hyperliquid: {what}: non-finite number")
    return x


def parse_positions(state: Any, coins: tuple[str, ...]) -> tuple[float, ...]:
    """The signed ``szi`` of each of ``coins`` in a ``clearinghouseState`` answer (0.0 where there is no
    position); other coins are not ours to trade and are ignored."""
    if not isinstance(state, dict) or not isinstance(state.get("assetPositions"), list):
        raise LiveTransportError("hyperliquid: position query: the answer has no assetPositions")
    index: dict[Any, int] = {c: i for i, c in enumerate(coins)}
    totals = [0.0] * len(coins)
    for entry in state["assetPositions"]:
        pos = entry.get("position") if isinstance(entry, dict) else None
        i = index.get(pos.get("coin")) if isinstance(pos, dict) else None
        if i is not None and isinstance(pos, dict):
            totals[i] += _signed(pos.get("szi"), f"position query ({coins[i]})")
    return tuple(totals)


def parse_position(state: Any, coin: str) -> float:
    """The signed ``szi`` of ``coin`` in a ``clearinghouseState`` answer (0.0 when there is no position)."""
    return parse_positions(state, (coin,))[0]


def parse_open_orders(orders: Any, coins: tuple[str, ...]) -> tuple[tuple[float, ...], tuple[tuple[int, ...], ...]]:
    """Per coin of ``coins``: the signed size of its open orders in an ``openOrders`` answer (buys +, sells -) and
    their venue order ids (sorted)."""
    if not isinstance(orders, list):
        raise LiveTransportError("hyperliquid: open-orders query: the answer is not a list")
    index: dict[Any, int] = {c: i for i, c in enumerate(coins)}
    totals = [0.0] * len(coins)
    oids: list[list[int]] = [[] for _ in coins]
    for o in orders:
        i = index.get(o.get("coin")) if isinstance(o, dict) else None
        if i is None:
            continue
        sz = abs(_signed(o.get("sz"), f"open-orders query ({coins[i]})"))
        totals[i] += sz if o.get("side") == "B" else -sz
        oid = o.get("oid")
        if isinstance(oid, int) and not isinstance(oid, bool):
            oids[i].append(oid)
    return tuple(totals), tuple(tuple(sorted(x)) for x in oids)


def parse_resting(orders: Any, coin: str) -> float:
    """Signed size of the open orders on ``coin`` in an ``openOrders`` answer (buys +, sells -)."""
    return parse_open_orders(orders, (coin,))[0][0]


def parse_fill(fill: Any) -> tuple[str, float, float] | None:
    """(cloid, size, price) of one ``userFills`` fill, or None when it carries no cloid (not ours) or cannot be
    read."""
    if not isinstance(fill, dict) or not isinstance(fill.get("cloid"), str):
        return None
    sz, px = reply_number(fill.get("sz")), reply_number(fill.get("px"))
    if sz is None or px is None or sz <= 0.0 or px <= 0.0:
        return None
    return fill["cloid"], sz, px


def round_price(px: float, sz_decimals: int) -> float:
    """Perp price rule: <= 5 significant figures and <= 6 - szDecimals decimals (integers always allowed)."""
    return round(float(f"{px:.5g}"), 6 - sz_decimals)


class HyperliquidTransport(LiveTransportBase):
    """Live Hyperliquid order entry. Construct via ``make_live_transport('hyperliquid', ...)``."""

    name = "hyperliquid"
    venue = int(wire.Venue.HYPERLIQUID)  # the wire code of the records it sends and answers

    def __init__(self, *, network: str | None, credentials: HyperliquidCredentials, enable_live: bool = False,
                 url: str | None = None, ca_file: str | None = None, on_reply: ReplyCallback | None = None,
                 asset: int = 0, sz_decimals: int = 5, coin: str = "BTC", instruments: InstrumentSet | None = None,
                 fills_grace_s: float = 5.0,
                 confirm_mainnet: str | os.PathLike[str] | None = None,
                 state_dir: str | os.PathLike[str] | None = None, allow_custom_mainnet_url: bool = False) -> None:
        check_live_guard("hyperliquid", enable_live=enable_live, network=network)
        if not isinstance(credentials, HyperliquidCredentials):
            raise CredentialsError(f"hyperliquid transport needs HyperliquidCredentials, got "
                                   f"{type(credentials).__name__}")
        self.network = network
        assert network is not None  # check_live_guard refused anything but a named network
        check_network_binding("hyperliquid", credentials, network, confirm_mainnet)
        self.url = resolve_url("hyperliquid", network, url, urls=ORDER_URLS, path=data.PATH,
                               allow_custom_mainnet_url=allow_custom_mainnet_url)
        self._signer = credentials.signer(is_mainnet=network == "mainnet")
        self._vault = credentials.vault_address
        # per instrument id: (asset index, szDecimals); ``asset``/``sz_decimals``/``coin`` describe a single
        # instrument when no list is given (the single-symbol fleet's BTC)
        if instruments is None:
            instruments = InstrumentSet([dataclasses.replace(BTC, hl_coin=coin, hl_asset=asset,
                                                             sz_decimals=sz_decimals)])
        self.instruments = instruments
        self._rules = tuple((i.hl_asset, i.sz_decimals) for i in instruments)
        self._coins = tuple(i.hl_coin for i in instruments)
        self._n = len(instruments)
        self.sent_by = [0] * self._n  # orders sent per instrument id
        self._coin_id = {c: k for k, c in enumerate(self._coins)}
        self.fills_by = [0] * self._n  # our fills per instrument id, as userFills tells them (reader thread)
        self._sink = ReplySink(on_reply)
        self._pending: dict[int, tuple[int, float]] = {}  # request id -> (order_id, size sent)
        self._queries: dict[int, int] = {}  # status-query request id -> order_id
        self._waiters = {}  # request id -> waiter (start-up reconciliation)
        # Nonces strictly increasing across restarts (caerus.venues.hyperliquid.nonces), one file per network and
        # account under ``state_dir``; without one, within this process only (benchmarks, tests).
        self._nonces = None if state_dir is None else NonceReservation(
            Path(state_dir) / f"hyperliquid-{network}-{credentials.account_id}.nonce")
        # orders by cloid, checked against ``orderUpdates`` and ``userFills``
        self.ledger = AccountStreamLedger("hyperliquid", fills=True, fills_grace_s=fills_grace_s)
        # Request ids: next() on a count is atomic under the GIL, so the position watch's helper thread can
        # ask the venue while the engine thread sends orders.
        self._ids = itertools.count(1)
        self._session = WsOrderSession(self.url, ca_file=ca_file, name="hyperliquid-orders",
                                       on_message=self._on_message, on_disconnect=self._on_disconnect,
                                       idle_ping=b'{"method":"ping"}', idle_ping_s=30.0,
                                       on_connect=self._subscribe_account)
        self.sent = 0
        self.send_failed = 0
        self.reply_counts: dict[str, int] = {"filled": 0, "partial": 0, "not_filled": 0, "acked": 0, "rejected": 0,
                                        "unmatched": 0, "unparsed": 0, "lost_in_flight": 0, "venue_errors": 0,
                                        "queries": 0, "query_answers": 0, "query_unparsed": 0,
                                        "query_send_failed": 0, "stream_resolved": 0, "stream_confirmed": 0,
                                        "stream_mismatch": 0, "stream_unmatched": 0, "nonce_exhausted": 0,
                                        "fills": 0, "fills_resolved": 0, "fills_confirmed": 0, "fills_mismatch": 0,
                                        "fills_unmatched": 0, "fills_snapshot": 0, "unknown_instrument": 0,
                                        "below_minimum": 0}
        # the venue's rejections by its text (each names the asset), so a session says why, not only how many
        self.rejects_by_reason: dict[str, int] = {}

    @property
    def address(self) -> str:
        return self._signer.address

    # --- engine side -----------------------------------------------------------------------------------
    def start(self) -> None:
        if self._nonces is not None:
            self._signer.next_nonce(self._nonces.start(time.time_ns() // 1_000_000))  # every nonce now above it
        self._session.start()

    def pump(self, now: int) -> None:
        """Engine idle work: keep the nonce reservation ahead (a file write every few minutes, never per order)."""
        if self._nonces is not None:  # ahead of the last nonce and of the clock (orders use either)
            self._nonces.extend_if_due(max(self._signer.last_nonce, now // 1_000_000))
        late = self.ledger.overdue()  # fills still short of what a reply said, past the grace period
        if late:
            self.reply_counts["fills_mismatch"] += late
            log.warning("%s", self.ledger.last_mismatch)

    def close(self) -> None:
        super().close()
        if self._nonces is not None:
            self._nonces.close(self._signer.last_nonce)

    def build_request(self, order: tuple, req_id: int, now_ms: int) -> dict[str, Any]:
        """The signed post request for ``order`` (also used by the benchmark); IndexError for an instrument id
        outside the session's list (nothing signed)."""
        asset, szd = self._rules[order[ORDER_SYMBOL]] if 0 <= order[ORDER_SYMBOL] < self._n else self._unknown(order)
        sz = round(order[ORDER_QTY], szd)
        action = order_action([order_wire(asset, order[ORDER_SIDE] > 0, round_price(order[ORDER_PX], szd), sz,
                                          tif=_TIF.get(order[ORDER_TIF], "Ioc"), cloid=cloid(order[ORDER_ORDER_ID]))])
        nonce = self._signer.next_nonce(now_ms)
        payload = {"action": action, "nonce": nonce, "signature": self._signer.sign_action(action, nonce),
                   "vaultAddress": self._vault}
        return {"method": "post", "id": req_id, "request": {"type": "action", "payload": payload}}

    def _unknown(self, order: tuple) -> tuple[int, int]:
        raise IndexError(f"hyperliquid: order {order[ORDER_ORDER_ID]}: instrument id {order[ORDER_SYMBOL]} is not in "
                         f"the session's list of {self._n}")

    def send_msg(self, order: tuple) -> SendResult:
        sym = order[ORDER_SYMBOL]
        if not 0 <= sym < self._n:  # refused before anything is signed or a nonce taken
            self.reply_counts["unknown_instrument"] += 1
            self.send_failed += 1
            return SendResult(wire.Outcome.SEND_FAILED, t_sent=time.time_ns())
        size = round(order[ORDER_QTY], self._rules[sym][1])
        if size <= 0.0 or size * order[ORDER_PX] < MIN_ORDER_VALUE:  # the venue would refuse it: no nonce, unsigned
            self.reply_counts["below_minimum"] += 1
            self.send_failed += 1
            return SendResult(wire.Outcome.SEND_FAILED, t_sent=time.time_ns())
        req_id = next(self._ids)
        now_ms = time.time_ns() // 1_000_000
        if self._nonces is not None and max(now_ms, self._signer.last_nonce + 1) > self._nonces.reserved:
            self.reply_counts["nonce_exhausted"] += 1  # idle work has not extended the reservation: never reuse
            self.send_failed += 1
            return SendResult(wire.Outcome.SEND_FAILED, t_sent=time.time_ns())
        try:
            frame = _encode(self.build_request(order, req_id, now_ms))
        except ValueError:  # price/size not representable on the wire: refuse, counted
            self.send_failed += 1
            return SendResult(wire.Outcome.SEND_FAILED, t_sent=time.time_ns())
        self._pending[req_id] = (order[ORDER_ORDER_ID], size)
        c = cloid(order[ORDER_ORDER_ID])
        self.ledger.awaiting(c, req_id, order[ORDER_TIF] == _IOC, self.instruments[sym].name, size)
        if self._session.send(frame, tag=order[ORDER_ORDER_ID]):
            self.sent += 1
            self.sent_by[sym] += 1
            return SendResult(wire.Outcome.SENT, t_sent=time.time_ns())
        self._pending.pop(req_id, None)
        self.ledger.forget(c)
        self.send_failed += 1
        return SendResult(wire.Outcome.SEND_FAILED, t_sent=time.time_ns())

    def rehearse(self, order: tuple) -> None:
        """A shadow order: the action built, hashed, signed and encoded as ``send_msg`` would, then dropped. It
        takes a nonce it never sends (Hyperliquid accepts gaps; nonces only have to grow), and none past the
        crash-safe reservation, which only ``send_msg``'s housekeeping extends."""
        now_ms = time.time_ns() // 1_000_000
        if self._nonces is not None and max(now_ms, self._signer.last_nonce + 1) > self._nonces.reserved:
            return
        try:
            _encode(self.build_request(order, 0, now_ms))
        except (ValueError, IndexError):
            return  # not representable: a real order would be refused the same way (counted there)
        self.rehearsed += 1

    def _subscribe_account(self) -> None:
        """(Re)subscribe to the account's order updates on the order connection (called after each connect)."""
        user = self._vault or self.address
        self._session.send(_encode({"method": "subscribe", "subscription": {"type": "orderUpdates", "user": user}}))
        self._session.send(_encode({"method": "subscribe", "subscription": {"type": "userFills", "user": user}}))

    def query_status(self, order_id: int) -> bool:
        """Ask the venue what became of ``order_id`` by its cloid (engine thread). Never resends the order."""
        req_id = next(self._ids)
        user = self._vault or self.address
        frame = _encode({"method": "post", "id": req_id, "request": {"type": "info", "payload": {
            "type": "orderStatus", "user": user, "oid": cloid(order_id)}}})
        self._queries[req_id] = order_id
        if self._session.send(frame):
            self.reply_counts["queries"] += 1
            return True
        self._queries.pop(req_id, None)
        self.reply_counts["query_send_failed"] += 1
        return False

    def _info(self, payload: dict[str, Any], timeout_s: float, what: str) -> Any:
        req_id = next(self._ids)
        frame = _encode({"method": "post", "id": req_id, "request": {"type": "info", "payload": payload}})
        response = self._request(req_id, frame, timeout_s, what)
        if not isinstance(response, dict) or response.get("type") != "info" \
                or not isinstance(response.get("payload"), dict):
            raise LiveTransportError(f"hyperliquid: {what} refused: {str(response)[:200]}")
        return response["payload"].get("data")

    def _action(self, action: dict[str, Any], timeout_s: float, what: str) -> Any:
        """One signed action posted on the order connection and its answer's first status (blocking, bounded;
        off the hot path). Raises naming the venue's refusal."""
        now_ms = time.time_ns() // 1_000_000
        if self._nonces is not None:  # a nonce past the crash-safe reservation is never used
            self._nonces.extend_if_due(max(self._signer.last_nonce, now_ms))
        nonce = self._signer.next_nonce(now_ms)
        req_id = next(self._ids)
        payload = {"action": action, "nonce": nonce, "signature": self._signer.sign_action(action, nonce),
                   "vaultAddress": self._vault}
        frame = _encode({"method": "post", "id": req_id, "request": {"type": "action", "payload": payload}})
        response = self._request(req_id, frame, timeout_s, what)
        body = response.get("payload") if isinstance(response, dict) else None
        inner = body.get("response") if isinstance(body, dict) and body.get("status") == "ok" else None
        data = inner.get("data") if isinstance(inner, dict) else None
        statuses = data.get("statuses") if isinstance(data, dict) else None
        if not isinstance(statuses, list) or not statuses:
            raise LiveTransportError(f"hyperliquid: {what} refused: {str(body or response)[:200]}")
        return statuses[0]

    def cancel(self, order_id: int, instrument: int, timeout_s: float) -> bool:
        """``cancelByCloid`` (shutdown): True cancelled, False no longer open (never placed, filled or cancelled)."""
        status = self._action({"type": "cancelByCloid", "cancels": [{"asset": self._rules[instrument][0],
                                                                     "cloid": cloid(order_id)}]},
                              timeout_s, f"cancel of order {order_id}")
        if status == "success":
            return True
        if isinstance(status, dict) and "never placed" in str(status.get("error")):
            return False
        raise LiveTransportError(f"hyperliquid: cancel of order {order_id} refused: {str(status)[:200]}")

    def reduce_position(self, instrument: int, size: float, px: float, timeout_s: float) -> float:
        """A reduce-only IOC limit order taking ``size`` (the signed position) off at ``px`` (a price through the
        book: Hyperliquid has no market orders); the size filled (0.0 when nothing matched)."""
        asset, szd = self._rules[instrument]
        action = order_action([order_wire(asset, size < 0, round_price(px, szd), round(abs(size), szd),
                                          reduce_only=True, tif="Ioc")])
        status = self._action(action, timeout_s, f"reduce-only order on {self._coins[instrument]}")
        parsed = parse_post_response({"type": "action", "payload": {"status": "ok", "response": {
            "data": {"statuses": [status]}}}}, abs(size))
        if parsed is None or parsed[0] == wire.Outcome.VENUE_REJECTED:
            raise LiveTransportError(f"hyperliquid: reduce-only order on {self._coins[instrument]} refused: "
                                     f"{str(status)[:200]}")
        return parsed[2]

    def venue_state(self, timeout_s: float) -> VenueState:
        """The account's position (``clearinghouseState``) and open orders (``openOrders``) on every listed coin,
        read before the first order and by the position watch."""
        user = self._vault or self.address
        state = self._info({"type": "clearinghouseState", "user": user}, timeout_s, "position query")
        open_orders = self._info({"type": "openOrders", "user": user}, timeout_s, "open-orders query")
        resting, oids = parse_open_orders(open_orders, self._coins)
        return VenueState(parse_positions(state, self._coins), resting, oids)

    def summary(self) -> dict[str, object]:
        """Final JSON-able summary (the execution process writes it to <metrics-dir>/<name>.json); no secrets."""
        return {"transport": self.name, "network": self.network, "url": self.url, "address": self.address,
                "counters": self.stats(), "sent_by_instrument": dict(zip(self.instruments.names, self.sent_by,
                                                                         strict=True)),
                "fills_by_instrument": dict(zip(self.instruments.names, self.fills_by, strict=True)),
                "rejects_by_reason": dict(self.rejects_by_reason)}

    # --- reader side -----------------------------------------------------------------------------------
    def _on_message(self, msg: Any, t_recv: int) -> None:
        if not isinstance(msg, dict):
            self.reply_counts["unmatched"] += 1
            return
        channel = msg.get("channel")
        if channel != "post":
            if channel == "orderUpdates":
                self._on_order_updates(msg.get("data"), t_recv)
            elif channel == "userFills":
                self._on_user_fills(msg.get("data"), t_recv)
            elif channel == "error":
                self.reply_counts["venue_errors"] += 1
            return  # pong, greetings, subscription acks
        data = msg.get("data")
        req_id = data.get("id") if isinstance(data, dict) else None
        if isinstance(data, dict) and self._answered(req_id, data.get("response")):
            return
        if isinstance(data, dict) and isinstance(req_id, int) and req_id in self._queries:
            self._on_query_answer(req_id, data.get("response"), t_recv)
            return
        if not isinstance(data, dict) or not isinstance(req_id, int) or req_id not in self._pending:
            self.reply_counts["unmatched"] += 1
            return
        order_id, size = self._pending[req_id]
        parsed = parse_post_response(data.get("response"), size)
        if parsed is None:
            # The order stays tracked (in_flight counts it): a later reply, a status query or a disconnect
            # resolves it, never this unreadable one.
            self.reply_counts["unparsed"] += 1
            return
        self._pending.pop(req_id, None)
        outcome, px, qty, code, text, key = parsed
        self.reply_counts[key] += 1
        if key == "rejected":  # rare: counted off the fill path
            reason = text if text in self.rejects_by_reason or len(self.rejects_by_reason) < _MAX_REASONS \
                else "other"
            self.rejects_by_reason[reason] = self.rejects_by_reason.get(reason, 0) + 1
        self.ledger.settled(cloid(order_id), order_id, outcome, qty)
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, text))

    def _take_pending(self, req_id: int) -> int | None:
        entry = self._pending.pop(req_id, None)
        return None if entry is None else entry[0]

    def _on_order_updates(self, updates: Any, t_recv: int) -> None:
        """Reader thread: the account's order updates, checked against (or settling) our orders by cloid."""
        if not isinstance(updates, list):
            self.reply_counts["unparsed"] += 1
            return
        for update in updates:
            order = update.get("order") if isinstance(update, dict) else None
            c = order.get("cloid") if isinstance(order, dict) else None
            parsed = order_state(order, update.get("status")) if isinstance(c, str) else None
            if parsed is None or not isinstance(c, str):
                self.reply_counts["stream_unmatched"] += 1  # not ours (another client, no cloid) or unreadable
                continue
            outcome, px, qty, code, text, _key = parsed
            verdict, order_id = self.ledger.on_update(c, outcome, qty, text not in _LIVE, self._take_pending)
            if verdict is Verdict.SETTLE:
                self.reply_counts["stream_resolved"] += 1
                self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, f"orderUpdates: {text}"))
            elif verdict is not Verdict.IGNORE:
                self.reply_counts[f"stream_{verdict.value}"] += 1
                if verdict is Verdict.MISMATCH:
                    log.warning("%s", self.ledger.last_mismatch)

    def _on_user_fills(self, data: Any, t_recv: int) -> None:
        """Reader thread: the account's fills, summed per cloid and checked against (or settling) our orders."""
        fills = data.get("fills") if isinstance(data, dict) else None
        if not isinstance(fills, list):
            self.reply_counts["unparsed"] += 1
            return
        if data.get("isSnapshot") is True:  # the history sent on subscribing: counted when it happened
            self.reply_counts["fills_snapshot"] += 1
            return
        for fill in fills:
            parsed = parse_fill(fill)
            if parsed is None:
                self.reply_counts["fills_unmatched"] += 1  # not ours (no cloid) or unreadable
                continue
            c, sz, px = parsed
            self.reply_counts["fills"] += 1
            k = self._coin_id.get(fill.get("coin"))
            if k is not None:
                self.fills_by[k] += 1
            verdict, order_id, outcome, total, avg = self.ledger.on_fill(c, sz, px, self._take_pending)
            if verdict is Verdict.SETTLE:
                self.reply_counts["fills_resolved"] += 1
                self._sink.deliver(VenueReply(order_id, outcome, avg, total, 0, t_recv, "userFills"))
            elif verdict is Verdict.CONFIRMED:
                self.reply_counts["fills_confirmed"] += 1
            elif verdict is Verdict.MISMATCH:
                self.reply_counts["fills_mismatch"] += 1
                log.warning("%s", self.ledger.last_mismatch)
            elif verdict is Verdict.UNMATCHED:
                self.reply_counts["fills_unmatched"] += 1

    def _on_query_answer(self, req_id: int, response: Any, t_recv: int) -> None:
        order_id = self._queries.pop(req_id)
        parsed = parse_order_status(response)
        if parsed is None:
            self.reply_counts["query_unparsed"] += 1  # the order stays UNKNOWN; the engine asks again
            return
        outcome, px, qty, code, text, _key = parsed
        self.reply_counts["query_answers"] += 1
        self.ledger.settled(cloid(order_id), order_id, outcome, qty)
        self._sink.deliver(VenueReply(order_id, outcome, px, qty, code, t_recv, text, by_query=True))

    def _on_disconnect(self) -> None:
        self._queries.clear()  # unanswered queries: the engine asks again after the next reply timeout
        self.ledger.reset_awaiting()
        t = time.time_ns()
        while self._pending:
            try:
                _, (order_id, _size) = self._pending.popitem()
            except KeyError:
                break
            self.reply_counts["lost_in_flight"] += 1
            self._sink.deliver(VenueReply(order_id, wire.Outcome.SEND_FAILED, 0.0, 0.0, 0, t,
                                          "connection lost before the venue answered; order state unknown"))

    def __repr__(self) -> str:
        return f"HyperliquidTransport(network={self.network}, url={self.url}, address={self.address})"
