"""Order entry for the venue emulator: answers Binance ``order.place`` and Hyperliquid ``post`` requests the way
the real venues do, including their rejections. Pure functions over a small state (credentials, last book, id
counters): no sockets, no logging, so the emulator's servers call them from any framework.

What is checked, and the errors given (Binance codes as documented for USD-M futures):
- Binance: method (-1000 unknown), apiKey known (-2015, HTTP 401), mandatory params (-1102), signature over the
  sorted params with the configured HMAC secret or Ed25519 public key (-1022), ``timestamp`` within
  ``recvWindow`` (-1021), symbol (-1121), side/type/timeInForce (-1117/-1116/-1115), quantity > 0 (-4003),
  quantity step and price tick (-1111 / -4014), price > 0 (-4001), quantity above max (-1013 LOT_SIZE).
  Success returns a RESULT-type order: IOC fills at the opposite best price if the limit crosses it (partially
  if the book's size is smaller, ending EXPIRED), else EXPIRED; GTC rests (NEW) unless it crosses; GTX expires
  if it would cross. Before the first book arrives (``update_book``) there is no liquidity: nothing fills.
- Hyperliquid: request shape (``type: error``), action type ``order``, EIP-712 signature recovering to the
  configured wallet (otherwise ``status: err`` "User or API Wallet 0x... does not exist."), nonce freshness and
  reuse, per order asset / price / size / minimum value, then IOC / GTC / ALO against the book like above.

Test credentials: :func:`configure_test_credentials` (in process), :func:`configure_from_env` (``CAERUS_SIM_*``
variables, for the emulator as a separate process), or :func:`configure_from_credentials_file` (the same 0600
TOML file the live transports read; only what is needed to verify is kept). Signatures are checked by the
emulator's own verifier (caerus.sim.verify), never by the production signing code it tests.
"""

from __future__ import annotations

import collections
import itertools
import os
import re
import secrets
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from eth_account import Account

from caerus.sim import catalogue
from caerus.sim.verify import binance_signature_ok, hyperliquid_signer

ENV_API_KEY = "CAERUS_SIM_BINANCE_API_KEY"
ENV_SECRET = "CAERUS_SIM_BINANCE_SECRET"
ENV_ED25519_PUBLIC_KEY_FILE = "CAERUS_SIM_BINANCE_ED25519_PUBLIC_KEY_FILE"
ENV_HL_ADDRESS = "CAERUS_SIM_HL_ADDRESS"
ENV_HL_NETWORK = "CAERUS_SIM_HL_NETWORK"
ENV_HL_VAULTS = "CAERUS_SIM_HL_VAULTS"  # comma-separated vault addresses the wallet may trade for

#: every symbol the emulated Binance lists (caerus.sim.catalogue): its rules and its catalogue name
BINANCE_SYMBOLS: dict[str, dict[str, Any]] = {
    sym: {"tick": i.tick, "step": i.step, "max_qty": i.max_qty, "min_notional": i.min_notional, "name": i.name,
          "qty_decimals": i.qty_decimals, "price_decimals": i.price_decimals}
    for sym, i in catalogue.BINANCE.items()}
#: every coin the emulated Hyperliquid lists, by asset index (meta order)
HL_ASSETS: dict[int, dict[str, Any]] = {
    i.hl_asset: {"coin": i.name, "sz_decimals": i.sz_decimals} for i in catalogue.HYPERLIQUID
    if i.hl_asset is not None}
HL_MIN_NOTIONAL = 10.0
HL_NONCE_PAST_MS = 2 * 24 * 3600 * 1000
HL_NONCE_FUTURE_MS = 24 * 3600 * 1000
#: Binance USD-M rate limits (also in GET /fapi/v1/exchangeInfo); ``count`` is filled per reply from the desk's log
RATE_LIMITS = [
    {"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 2400},
    {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 300},
    {"rateLimitType": "ORDERS", "interval": "MINUTE", "intervalNum": 1, "limit": 1200},
]
_INTERVAL_MS = {"SECOND": 1000, "MINUTE": 60_000}


@dataclass
class Book:
    bid_px: float
    bid_qty: float
    ask_px: float
    ask_qty: float


@dataclass
class OrderDesk:
    """The emulator's order-entry state. One module-level instance backs the module functions."""

    binance_api_key: str | None = None
    binance_hmac_secret: str | None = None
    binance_ed25519_public_key: Ed25519PublicKey | None = None
    hyperliquid_address: str | None = None
    hyperliquid_network: str = "any"  # "mainnet" | "testnet" | "any" (which phantom-agent source is accepted)
    hyperliquid_vaults: set[str] = field(default_factory=set)  # vault addresses the wallet may trade for
    hl_orders: dict[int, dict[str, Any]] = field(default_factory=dict)  # oid -> order record (POST /info queries)
    hl_cloids: dict[str, int] = field(default_factory=dict)  # client order id (0x + 32 hex) -> oid
    binance_orders: dict[int, dict[str, Any]] = field(default_factory=dict)  # orderId -> the order as last answered
    binance_client_ids: dict[str, int] = field(default_factory=dict)  # clientOrderId -> orderId
    # book key (see book_key) -> (position in the instrument, signed; average entry price): what fills built,
    # what position queries answer
    positions: dict[str, tuple[float, float]] = field(default_factory=dict)
    # account events (user-data stream payloads) per venue, queued by the order functions and drained by the
    # servers after each answer (drain_events): this module stays free of sockets
    events: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"binance": [], "hyperliquid": []})
    trade_ids: itertools.count = field(default_factory=lambda: itertools.count(7_000_001))
    listen_keys: set[str] = field(default_factory=set)  # Binance user-data stream keys (REST or WS-API issued)
    binance_clock_offset_ms: int = 0  # the venue's clock ahead of this host's by this much (tests of skew)
    books: dict[str, Book] = field(default_factory=dict)  # book key (see book_key) -> top of book
    seen_nonces: set[int] = field(default_factory=set)
    ids: itertools.count = field(default_factory=lambda: itertools.count(1_000_001))
    requests_ms: collections.deque[tuple[int, bool]] = field(default_factory=collections.deque)  # (ms, is order)


DESK = OrderDesk()


# --- configuration -----------------------------------------------------------------------------------------

def configure_test_credentials(*, binance_api_key: str | None = None, binance_hmac_secret: str | None = None,
                               binance_ed25519_public_key: Ed25519PublicKey | bytes | None = None,
                               hyperliquid_address: str | None = None, hyperliquid_network: str = "any",
                               hyperliquid_vaults: tuple[str, ...] = ()) -> None:
    """Which credentials the emulator accepts. ``binance_ed25519_public_key`` may be PEM bytes."""
    if isinstance(binance_ed25519_public_key, bytes):
        key = load_pem_public_key(binance_ed25519_public_key)
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("binance_ed25519_public_key is not an Ed25519 public key")
        binance_ed25519_public_key = key
    if hyperliquid_network not in ("mainnet", "testnet", "any"):
        raise ValueError(f"hyperliquid_network must be mainnet|testnet|any, got {hyperliquid_network!r}")
    DESK.binance_api_key = binance_api_key
    DESK.binance_hmac_secret = binance_hmac_secret
    DESK.binance_ed25519_public_key = binance_ed25519_public_key
    DESK.hyperliquid_address = hyperliquid_address.lower() if hyperliquid_address else None
    DESK.hyperliquid_network = hyperliquid_network
    DESK.hyperliquid_vaults = {v.lower() for v in hyperliquid_vaults}


def configure_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Configure from ``CAERUS_SIM_*`` variables; returns False when none is set (nothing configured)."""
    env = os.environ if env is None else env
    if not any(env.get(k) for k in (ENV_API_KEY, ENV_HL_ADDRESS)):
        return False
    pub = None
    if env.get(ENV_ED25519_PUBLIC_KEY_FILE):
        with open(env[ENV_ED25519_PUBLIC_KEY_FILE], "rb") as f:
            pub = f.read()
    configure_test_credentials(binance_api_key=env.get(ENV_API_KEY) or None,
                               binance_hmac_secret=env.get(ENV_SECRET) or None, binance_ed25519_public_key=pub,
                               hyperliquid_address=env.get(ENV_HL_ADDRESS) or None,
                               hyperliquid_network=env.get(ENV_HL_NETWORK) or "any",
                               hyperliquid_vaults=tuple(v.strip() for v in env.get(ENV_HL_VAULTS, "").split(",")
                                                        if v.strip()))
    return True


def configure_from_credentials_file(path: str | os.PathLike[str]) -> None:
    """Accept the credentials in the live transports' TOML file (either venue table may be absent).

    Read here with the emulator's own code (not caerus.execution.credentials): only what verification needs is
    kept, the Binance HMAC secret or the Ed25519 *public* key and the Hyperliquid wallet *address*.
    """
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"emulator credentials file {path}: cannot read it as TOML ({type(exc).__name__})") \
            from None
    kwargs: dict[str, Any] = {}
    b = doc.get("binance")
    if isinstance(b, dict):
        kwargs["binance_api_key"] = _text(b, "binance", "api_key", path)
        if b.get("secret"):
            kwargs["binance_hmac_secret"] = _text(b, "binance", "secret", path)
        else:
            key_file = Path(_text(b, "binance", "ed25519_private_key_file", path))
            key = load_pem_private_key((path.parent / key_file).read_bytes(), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError(f"emulator credentials file {path}: binance key is not an Ed25519 key")
            kwargs["binance_ed25519_public_key"] = key.public_key()
    h = doc.get("hyperliquid")
    if isinstance(h, dict):
        kwargs["hyperliquid_address"] = Account.from_key(_text(h, "hyperliquid", "private_key", path)).address
    configure_test_credentials(**kwargs)


def _text(table: dict[str, Any], venue: str, name: str, path: Path) -> str:
    value = table.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"emulator credentials file {path}: {venue}.{name} must be a non-empty string")
    return value


def book_key(venue: str, name: str = "BTC") -> str:
    """Where the desk keeps an instrument's book and position: the venue for BTC (as the BTC-only desk always
    did), ``venue:NAME`` for every other catalogue instrument."""
    return venue if name == "BTC" else f"{venue}:{name}"


def update_book(venue: str, bid_px: float, bid_qty: float, ask_px: float, ask_qty: float, symbol: str = "BTC"
                ) -> None:
    """Top of book of instrument ``symbol`` (catalogue name) the fill check uses (venue 'binance' |
    'hyperliquid'); the market driver calls this for every emulated instrument's top."""
    DESK.books[book_key(venue, symbol)] = Book(bid_px, bid_qty, ask_px, ask_qty)


def reset() -> None:
    """Forget credentials, books, nonces and ids (tests)."""
    global DESK
    DESK = OrderDesk()


def _fill(venue: str, is_buy: bool, px: float, qty: float, name: str = "BTC") -> None:
    """Book a fill into the venue's position in ``name`` (average entry price kept for the position queries)."""
    key = book_key(venue, name)
    pos, entry = DESK.positions.get(key, (0.0, 0.0))
    signed = qty if is_buy else -qty
    new = round(pos + signed, 8)
    if new == 0.0:
        entry = 0.0
    elif pos == 0.0 or (pos > 0) != (new > 0):
        entry = px  # opened, or flipped through zero: the fill's price
    elif (pos > 0) == (signed > 0):
        entry = (entry * abs(pos) + px * qty) / abs(new)  # added to: weighted average
    DESK.positions[key] = (new, entry)


MAX_ORDERS_KEPT = 100_000  # per venue: status queries reach this far back; older records are forgotten


def _forget_oldest(records: dict[int, Any], ids: dict[str, int]) -> None:
    """Keep the order records bounded (insertion order is age): a long session's memory stays flat."""
    while len(records) > MAX_ORDERS_KEPT:
        del records[next(iter(records))]
    while len(ids) > MAX_ORDERS_KEPT:
        del ids[next(iter(ids))]


def drain_events(venue: str) -> list[dict[str, Any]]:
    """The account events queued since the last drain (oldest first)."""
    out = DESK.events[venue]
    DESK.events[venue] = []
    return out


def _binance_events(result: dict[str, Any], params: dict[str, Any], now_ms: int) -> None:
    """ORDER_TRADE_UPDATE events for one answered order (NEW, then TRADE for a fill, then EXPIRED for what an
    IOC did not fill) and an ACCOUNT_UPDATE when the position changed, as the user-data stream sends them."""
    filled, status = float(result["executedQty"]), result["status"]
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qd = spec["qty_decimals"]

    def order_update(x: str, big_x: str, last_qty: float, trade_id: int) -> dict[str, Any]:
        return {"e": "ORDER_TRADE_UPDATE", "E": now_ms, "T": now_ms, "o": {
            "s": result["symbol"], "c": result["clientOrderId"], "S": result["side"], "o": "LIMIT",
            "f": result["timeInForce"], "q": result["origQty"], "p": result["price"],
            "ap": result["avgPrice"] if filled else "0", "sp": "0", "x": x, "X": big_x, "i": result["orderId"],
            "l": f"{last_qty:.{qd}f}", "z": f"{filled if x != 'NEW' else 0.0:.{qd}f}",
            "L": result["avgPrice"] if last_qty else "0", "N": "USDT", "n": "0", "T": now_ms, "t": trade_id,
            "b": "0", "a": "0", "m": False, "R": False, "wt": "CONTRACT_PRICE", "ot": "LIMIT", "ps": "BOTH",
            "cp": False, "rp": "0", "pP": False, "si": 0, "ss": 0, "V": "NONE", "pm": "NONE", "gtd": 0}}

    out = DESK.events["binance"]
    out.append(order_update("NEW", "NEW", 0.0, 0))
    if filled:
        out.append(order_update("TRADE", "FILLED" if status == "FILLED" else "PARTIALLY_FILLED", filled,
                                next(DESK.trade_ids)))
    if status == "EXPIRED":
        out.append(order_update("EXPIRED", "EXPIRED", 0.0, 0))
    if filled:
        amt, entry = position("binance", spec["name"])
        out.append({"e": "ACCOUNT_UPDATE", "E": now_ms, "T": now_ms, "a": {
            "m": "ORDER", "B": [{"a": "USDT", "wb": "0", "cw": "0", "bc": "0"}],
            "P": [{"s": result["symbol"], "pa": f"{amt:.{qd}f}", "ep": _px(entry, spec), "bep": _px(entry, spec),
                   "cr": "0", "up": "0", "mt": "cross", "iw": "0", "ps": "BOTH"}]}})


def _hl_events(record: dict[str, Any], status: str, fill: tuple[float, float] | None, now_ms: int) -> None:
    """``orderUpdates`` (the order's state) and ``userFills`` (the fill) events for one answered order."""
    out = DESK.events["hyperliquid"]
    out.append({"channel": "orderUpdates", "data": [{"order": record, "status": status, "statusTimestamp": now_ms}]})
    if fill is not None:
        px, qty = fill
        szi, _ = position("hyperliquid", record["coin"])
        szd = _sz_decimals(record["coin"])
        start = szi - (qty if record["side"] == "B" else -qty)
        out.append({"channel": "userFills", "data": {"user": DESK.hyperliquid_address, "fills": [{
            "coin": record["coin"], "px": _hl_px(px, szd), "sz": _hl_sz(qty, szd),
            "side": record["side"], "time": now_ms, "startPosition": f"{start:.{szd}f}",
            "dir": "Open Long" if record["side"] == "B" else "Open Short", "closedPnl": "0.0",
            "hash": f"0x{record['oid']:064x}", "oid": record["oid"], "crossed": True, "fee": "0.0",
            "tid": next(DESK.trade_ids), "feeToken": "USDC",
            **({"cloid": record["cloid"]} if record["cloid"] else {})}]}})


def position(venue: str, name: str = "BTC") -> tuple[float, float]:
    """(signed position in instrument ``name``, average entry price) the desk holds on ``venue``."""
    return DESK.positions.get(book_key(venue, name), (0.0, 0.0))


def _px(value: float, spec: dict[str, Any]) -> str:
    """A Binance price in an order answer: at least 2 decimals, more when the symbol's tick has more."""
    return f"{value:.{max(2, spec['price_decimals'])}f}"


def _sz_decimals(coin: str) -> int:
    inst = catalogue.BY_NAME.get(coin)
    return inst.sz_decimals if inst is not None else 5


def _hl_px(px: float, sz_decimals: int) -> str:
    """A Hyperliquid price: at most ``6 - szDecimals`` decimals, trailing zeros dropped (one kept)."""
    decimals = max(0, 6 - sz_decimals)
    text = f"{px:.{decimals}f}"
    if decimals == 0:
        return text
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def _hl_sz(sz: float, sz_decimals: int) -> str:
    return f"{sz:.{sz_decimals}f}".rstrip("0").rstrip(".") if sz_decimals else f"{sz:.0f}"


def _cross(venue: str, is_buy: bool, px: float, qty: float, name: str = "BTC") -> tuple[float, float] | None:
    """(fill price, fill qty) when a limit at ``px`` crosses instrument ``name``'s book; None when it does not
    (also when the instrument has no book: listed but not emulated in this session, or no market yet)."""
    book = DESK.books.get(book_key(venue, name))
    if book is None:  # no market: no liquidity to take
        return None
    if is_buy and px >= book.ask_px:
        return book.ask_px, min(qty, book.ask_qty)
    if not is_buy and px <= book.bid_px:
        return book.bid_px, min(qty, book.bid_qty)
    return None


# --- Binance ---------------------------------------------------------------------------------------------------

def _rate_limits(now_ms: int) -> list[dict[str, Any]]:
    """The limits with this connection's usage: requests in the last minute, orders in each order window."""
    log = DESK.requests_ms
    while log and log[0][0] <= now_ms - 60_000:
        log.popleft()
    out = []
    for lim in RATE_LIMITS:
        window = _INTERVAL_MS[str(lim["interval"])] * int(lim["intervalNum"])  # type: ignore[call-overload]
        orders_only = lim["rateLimitType"] == "ORDERS"
        count = sum(1 for t, is_order in log if t > now_ms - window and (is_order or not orders_only))
        out.append({**lim, "count": count})
    return out


def _b_error(req_id: Any, code: int, msg: str, status: int = 400) -> dict[str, Any]:
    return {"id": req_id, "status": status, "error": {"code": code, "msg": msg}}


def _decimal(v: Any) -> Decimal | None:
    """A decimal from a JSON string or number (the venue accepts both for price and quantity)."""
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        return None
    try:
        d = Decimal(str(v))
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


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
    elif method in ("v2/account.position", "account.position"):
        reply = _binance_positions(msg, now_ms)
    elif method in ("userDataStream.start", "userDataStream.ping", "userDataStream.stop"):
        reply = _binance_user_stream(msg)
    else:
        reply = _binance_answer(msg, now_ms)
    # an accepted order counts against the order limits; every request against the request weight
    DESK.requests_ms.append((now_ms, method in ("order.place", "v1/order.place") and "result" in reply))
    params = msg.get("params") if isinstance(msg, dict) else None
    if not (isinstance(params, dict) and params.get("returnRateLimits") in (False, "false")):
        reply["rateLimits"] = _rate_limits(now_ms)
    return reply


def _binance_answer(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    req_id = msg.get("id") if isinstance(msg, dict) else None
    if not isinstance(msg, dict) or msg.get("method") not in ("order.place", "v1/order.place"):
        method = msg.get("method") if isinstance(msg, dict) else None
        return _b_error(req_id, -1000, f"Unknown method {method!r}; this emulator answers order.place, "
                                       "order.status, v2/account.position, userDataStream.* and time only.")
    params = msg.get("params")
    if not isinstance(params, dict):
        return _b_error(req_id, -1102, "Mandatory parameter 'params' was not sent, was empty/null, or malformed.")
    api_key = params.get("apiKey")
    if not api_key or api_key != DESK.binance_api_key:
        return _b_error(req_id, -2015, "Invalid API-key, IP, or permissions for action.", status=401)
    for name in ("symbol", "side", "type", "quantity", "timestamp", "signature"):
        if params.get(name) in (None, ""):
            return _b_error(req_id, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or "
                                           "malformed.")
    if not binance_signature_ok(params, hmac_secret=DESK.binance_hmac_secret,
                                ed25519_public_key=DESK.binance_ed25519_public_key):
        return _b_error(req_id, -1022, "Signature for this request is not valid.")
    # The venue takes integers as JSON numbers or strings (the official SDK sends recvWindow as a string).
    ts, window = _integer(params.get("timestamp")), _integer(params.get("recvWindow", 5000))
    if ts is None or window is None:
        return _b_error(req_id, -1102, "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.")
    if ts >= now_ms + 1000 or now_ms - ts > window:
        return _b_error(req_id, -1021, "Timestamp for this request is outside of the recvWindow.")
    spec = BINANCE_SYMBOLS.get(params["symbol"])
    if spec is None:
        return _b_error(req_id, -1121, "Invalid symbol.")
    side, otype, tif = params["side"], params["type"], params.get("timeInForce", "GTC")
    if side not in ("BUY", "SELL"):
        return _b_error(req_id, -1117, "Invalid side.")
    if otype != "LIMIT":
        return _b_error(req_id, -1116, "Invalid orderType.")
    if tif not in ("GTC", "IOC", "FOK", "GTX"):
        return _b_error(req_id, -1115, "Invalid timeInForce.")
    qty, price = _decimal(params["quantity"]), _decimal(params.get("price"))
    if qty is None or price is None:
        return _b_error(req_id, -1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
    if qty <= 0:
        return _b_error(req_id, -4003, "Quantity less than or equal to zero.")
    if price <= 0:
        return _b_error(req_id, -4001, "Price less than 0.")
    if qty % spec["step"] != 0:
        return _b_error(req_id, -1111, "Precision is over the maximum defined for this asset.")
    if price % spec["tick"] != 0:
        return _b_error(req_id, -4014, "Price not increased by tick size.")
    if qty > spec["max_qty"]:
        return _b_error(req_id, -1013, "Filter failure: LOT_SIZE")

    fill = _cross("binance", side == "BUY", float(price), float(qty), spec["name"])
    if tif == "GTX" and fill is not None:
        status, fpx, fqty = "EXPIRED", 0.0, 0.0  # post-only would have taken liquidity
    elif fill is None:
        status, fpx, fqty = ("NEW" if tif == "GTC" else "EXPIRED"), 0.0, 0.0
    else:
        fpx, fqty = fill
        status = "FILLED" if fqty >= float(qty) else ("PARTIALLY_FILLED" if tif == "GTC" else "EXPIRED")
        if tif == "FOK" and status != "FILLED":
            status, fpx, fqty = "EXPIRED", 0.0, 0.0
    if fqty > 0:
        _fill("binance", side == "BUY", fpx, fqty, spec["name"])
    result = {
        "orderId": next(DESK.ids), "symbol": params["symbol"], "status": status,
        "clientOrderId": params.get("newClientOrderId") or f"sim{now_ms}",
        "price": str(price), "avgPrice": _px(fpx, spec), "origQty": str(qty),
        "executedQty": f"{fqty:.{spec['qty_decimals']}f}", "cumQty": f"{fqty:.{spec['qty_decimals']}f}",
        "cumQuote": f"{fpx * fqty:.5f}", "timeInForce": tif, "type": otype,
        "reduceOnly": params.get("reduceOnly") in (True, "true"), "closePosition": False, "side": side,
        "positionSide": "BOTH", "stopPrice": "0.00", "workingType": "CONTRACT_PRICE", "priceProtect": False,
        "origType": otype, "priceMatch": "NONE", "selfTradePreventionMode": "NONE", "goodTillDate": 0,
        "updateTime": now_ms,
    }
    DESK.binance_orders[result["orderId"]] = result
    DESK.binance_client_ids[result["clientOrderId"]] = result["orderId"]
    _forget_oldest(DESK.binance_orders, DESK.binance_client_ids)
    _binance_events(result, params, now_ms)
    return {"id": req_id, "status": 200, "result": result}


def _binance_user_data_error(msg: dict[str, Any], now_ms: int) -> dict[str, Any] | None:
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
    if not binance_signature_ok(params, hmac_secret=DESK.binance_hmac_secret,
                                ed25519_public_key=DESK.binance_ed25519_public_key):
        return _b_error(req_id, -1022, "Signature for this request is not valid.")
    ts, window = _integer(params.get("timestamp")), _integer(params.get("recvWindow", 5000))
    if ts is None or window is None or ts >= now_ms + 1000 or now_ms - ts > window:
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
    bad = _binance_user_data_error(msg, now_ms)
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
    book = DESK.books.get(book_key("binance", spec["name"]))
    mark = (book.bid_px + book.ask_px) / 2 if book else entry
    return {"symbol": symbol, "positionSide": "BOTH", "positionAmt": f"{amt:.{spec['qty_decimals']}f}",
            "entryPrice": _px(entry, spec), "breakEvenPrice": _px(entry, spec), "markPrice": _px(mark, spec),
            "unRealizedProfit": f"{(mark - entry) * amt:.8f}", "liquidationPrice": "0", "isolatedMargin": "0",
            "notional": f"{mark * amt:.8f}", "marginAsset": "USDT", "isolatedWallet": "0",
            "initialMargin": "0", "maintMargin": "0", "positionInitialMargin": "0", "openOrderInitialMargin": "0",
            "adl": 0, "bidNotional": "0", "askNotional": "0", "updateTime": now_ms}


def _binance_order_status(msg: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``order.status`` (USER_DATA, signed): the order as last answered, by ``orderId`` or ``origClientOrderId``;
    -2013 when this desk never took it."""
    bad = _binance_user_data_error(msg, now_ms)
    if bad is not None:
        return bad
    req_id, params = msg.get("id"), msg["params"]
    if params.get("symbol") in (None, ""):
        return _b_error(req_id, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
    order_id = _integer(params.get("orderId"))
    if order_id is None and isinstance(params.get("origClientOrderId"), str):
        order_id = DESK.binance_client_ids.get(params["origClientOrderId"])
    if order_id is None and "orderId" not in params and "origClientOrderId" not in params:
        return _b_error(req_id, -1102, "Param 'origClientOrderId' or 'orderId' must be sent, but both were empty/null!")
    result = DESK.binance_orders.get(order_id) if order_id is not None else None
    if result is None or result["symbol"] != params["symbol"]:
        return _b_error(req_id, -2013, "Order does not exist.")
    return {"id": req_id, "status": 200, "result": {**result, "time": result["updateTime"]}}


# --- Hyperliquid -----------------------------------------------------------------------------------------------

def _hl(req_id: Any, response: dict[str, Any]) -> dict[str, Any]:
    return {"channel": "post", "data": {"id": req_id, "response": response}}


def _hl_request_error(req_id: Any, text: str) -> dict[str, Any]:
    return _hl(req_id, {"type": "error", "payload": text})


def _hl_recover(action: dict[str, Any], nonce: int, sig: dict[str, Any], vault: str | None,
                expires_after: int | None) -> list[str]:
    nets = {"mainnet": (True,), "testnet": (False,), "any": (True, False)}[DESK.hyperliquid_network]
    return [hyperliquid_signer(action, nonce, sig, is_mainnet=m, vault_address=vault,
                               expires_after=expires_after).lower() for m in nets]


def _hl_order_status(o: Any, now_ms: int) -> dict[str, Any]:
    if not isinstance(o, dict) or not {"a", "b", "p", "s", "r", "t"} <= o.keys():
        return {"error": "Invalid order: missing fields."}
    spec = HL_ASSETS.get(o["a"]) if isinstance(o["a"], int) else None
    if spec is None:
        return {"error": f"Invalid asset {o['a']!r}."}
    px, sz = _decimal(o["p"]), _decimal(o["s"])
    sz_decimals = int(spec["sz_decimals"])
    if px is None or not px.is_finite() or px <= 0 or int(px.as_tuple().exponent) < -(6 - sz_decimals) \
            or (px != px.to_integral_value() and len(px.normalize().as_tuple().digits) > 5):
        return {"error": "Order has invalid price."}
    if sz is None or not sz.is_finite() or sz <= 0 or int(sz.as_tuple().exponent) < -sz_decimals:
        return {"error": "Order has invalid size."}
    if float(px) * float(sz) < HL_MIN_NOTIONAL:
        return {"error": f"Order must have minimum value of ${HL_MIN_NOTIONAL:.0f}. asset={o['a']}"}
    tif = (o["t"].get("limit") or {}).get("tif") if isinstance(o["t"], dict) else None
    if tif not in ("Ioc", "Gtc", "Alo"):
        return {"error": "Invalid order type."}
    is_buy = bool(o["b"])
    coin = str(spec["coin"])
    fill = _cross("hyperliquid", is_buy, float(px), float(sz), coin)
    oid = next(DESK.ids)
    _forget_oldest(DESK.hl_orders, DESK.hl_cloids)
    cloid = o.get("c") if isinstance(o.get("c"), str) else None
    record = {"coin": spec["coin"], "side": "B" if is_buy else "A", "limitPx": o["p"], "sz": o["s"], "oid": oid,
              "timestamp": now_ms, "origSz": o["s"], "cloid": cloid}
    if cloid is not None:
        DESK.hl_cloids[cloid.lower()] = oid
    if tif == "Alo" and fill is not None:
        book = DESK.books.get(book_key("hyperliquid", coin))
        bbo = f"{book.bid_px}@{book.ask_px}" if book else f"{px}"
        return {"error": f"Post only order would have immediately matched, bbo was {bbo}. asset={o['a']}"}
    if fill is None:
        if tif == "Ioc":
            return {"error": f"Order could not immediately match against any resting orders. asset={o['a']}"}
        DESK.hl_orders[oid] = {"order": record, "status": "open", "statusTimestamp": now_ms}
        _hl_events(record, "open", None, now_ms)
        return {"resting": {"oid": oid}}
    fpx, fqty = fill
    _fill("hyperliquid", is_buy, fpx, fqty, coin)
    # A partial fill: the rest of a Gtc order rests (open), an Ioc remainder is canceled.
    status = "filled" if fqty >= float(sz) else ("open" if tif == "Gtc" else "canceled")
    DESK.hl_orders[oid] = {"order": {**record, "sz": str(float(sz) - fqty)}, "status": status,
                           "statusTimestamp": now_ms}
    _hl_events(DESK.hl_orders[oid]["order"], status, fill, now_ms)
    return {"filled": {"totalSz": f"{fqty:.{spec['sz_decimals']}f}".rstrip("0").rstrip("."),
                       "avgPx": _hl_px(fpx, sz_decimals), "oid": oid}}


def hyperliquid_post_response(msg: dict[str, Any], *, now_ms: int | None = None) -> dict[str, Any]:
    """Hyperliquid's answer to one ``{"method":"post",...}`` frame (already JSON-decoded)."""
    req_id = msg.get("id") if isinstance(msg, dict) else None
    if not isinstance(msg, dict) or msg.get("method") != "post" or not isinstance(req_id, int):
        return _hl_request_error(req_id, "Invalid post request: expected {method: post, id: int, request}.")
    request = msg.get("request")
    if isinstance(request, dict) and request.get("type") == "info" and isinstance(request.get("payload"), dict):
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        info = hyperliquid_info(request["payload"], now)
        if info is None:
            return _hl_request_error(req_id, "Only orderStatus, clearinghouseState and openOrders info requests are "
                                             "served over post by this emulator.")
        return _hl(req_id, {"type": "info", "payload": {"type": request["payload"]["type"], "data": info}})
    if not isinstance(request, dict) or request.get("type") != "action" or not isinstance(request.get("payload"),
                                                                                         dict):
        return _hl_request_error(req_id, "Only action and info requests are supported by this emulator.")
    answer = hyperliquid_action(request["payload"], now_ms=now_ms)
    if isinstance(answer, str):
        return _hl_request_error(req_id, answer)
    return _hl(req_id, {"type": "action", "payload": answer})


_HL_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")


def hyperliquid_clearinghouse_state(now_ms: int) -> dict[str, Any]:
    """``clearinghouseState``: the desk's perp position in each coin (``szi`` signed) and a flat margin summary."""
    positions, notional = [], 0.0
    for inst in catalogue.HYPERLIQUID:
        szi, entry = position("hyperliquid", inst.name)
        if szi == 0.0:
            continue
        szd = inst.sz_decimals
        notional += abs(szi) * entry
        positions.append({"type": "oneWay", "position": {
            "coin": inst.name, "szi": f"{szi:.{szd}f}", "entryPx": f"{entry:.{max(0, 6 - szd)}f}",
            "positionValue": f"{abs(szi) * entry:.2f}", "unrealizedPnl": "0.0", "returnOnEquity": "0.0",
            "liquidationPx": None, "marginUsed": "0.0", "maxLeverage": 40, "leverage": {"type": "cross", "value": 20},
            "cumFunding": {"allTime": "0.0", "sinceOpen": "0.0", "sinceChange": "0.0"}}})
    summary = {"accountValue": "0.0", "totalNtlPos": f"{notional:.2f}", "totalRawUsd": "0.0",
               "totalMarginUsed": "0.0"}
    return {"marginSummary": summary, "crossMarginSummary": summary, "crossMaintenanceMarginUsed": "0.0",
            "withdrawable": "0.0", "assetPositions": positions, "time": now_ms}


def hyperliquid_open_orders() -> list[dict[str, Any]]:
    return [o["order"] for o in DESK.hl_orders.values() if o["status"] == "open"]


def hyperliquid_info(req: dict[str, Any], now_ms: int) -> Any:
    """The info answers an order client needs over a post (``orderStatus``, ``clearinghouseState``,
    ``openOrders``); None for any other type."""
    kind = req.get("type")
    if kind == "clearinghouseState":
        return hyperliquid_clearinghouse_state(now_ms)
    if kind == "openOrders":
        return hyperliquid_open_orders()
    return hyperliquid_info_order(req)


def hyperliquid_info_order(req: dict[str, Any]) -> dict[str, Any] | None:
    """The ``orderStatus`` info answer for ``{"type": "orderStatus", "user", "oid": int | cloid}`` (None when the
    request is not an orderStatus one): ``{"status": "order", "order": {...}}`` or ``{"status": "unknownOid"}``."""
    if req.get("type") != "orderStatus":
        return None
    oid = req.get("oid")
    if isinstance(oid, str):
        oid = DESK.hl_cloids.get(oid.lower())
    rec = DESK.hl_orders.get(oid) if isinstance(oid, int) and not isinstance(oid, bool) else None
    if rec is None:
        return {"status": "unknownOid"}
    return {"status": "order", "order": rec}


def hyperliquid_action(payload: Any, *, now_ms: int | None = None) -> dict[str, Any] | str:
    """The venue's answer to one signed action (the ``POST /exchange`` body, the WebSocket post's payload):
    ``{"status": "ok" | "err", "response": ...}``, or a str when the payload does not deserialize (HTTP 422)."""
    if not isinstance(payload, dict):
        return "Failed to deserialize the JSON body into the target type"
    action, nonce, sig = payload.get("action"), payload.get("nonce"), payload.get("signature")
    vault = payload.get("vaultAddress")
    expires_after = payload.get("expiresAfter")
    vault_ok = vault is None or (isinstance(vault, str) and _HL_ADDRESS.match(vault) is not None)
    expires_ok = expires_after is None or (isinstance(expires_after, int) and not isinstance(expires_after, bool))
    if not isinstance(action, dict) or isinstance(nonce, bool) or not isinstance(nonce, int) \
            or not isinstance(sig, dict) or not vault_ok or not expires_ok:
        return "Failed to deserialize the JSON body into the target type"
    if action.get("type") != "order" or not isinstance(action.get("orders"), list) or not action["orders"]:
        return {"status": "err", "response": f"Unsupported action type {action.get('type')!r}."}
    try:
        signers = _hl_recover(action, nonce, sig, vault, expires_after)
    except Exception as exc:  # any malformed signature (eth-keys raises its own types too): answered, not raised
        return f"Invalid signature: {type(exc).__name__}"
    if DESK.hyperliquid_address is None or DESK.hyperliquid_address not in signers:
        return {"status": "err", "response": f"User or API Wallet {signers[0]} does not exist."}
    if vault is not None and vault.lower() not in DESK.hyperliquid_vaults:
        return {"status": "err", "response": f"Vault not registered: {vault.lower()}"}
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if expires_after is not None and expires_after < now_ms:
        return {"status": "err", "response": f"Action expired: expiresAfter {expires_after} is before the "
                                             f"current time {now_ms}."}
    if not (now_ms - HL_NONCE_PAST_MS < nonce < now_ms + HL_NONCE_FUTURE_MS):
        return {"status": "err", "response": f"Invalid nonce: {nonce} is outside the allowed window."}
    if nonce in DESK.seen_nonces:
        return {"status": "err", "response": f"Invalid nonce: duplicate nonce {nonce}."}
    DESK.seen_nonces.add(nonce)
    statuses = [_hl_order_status(o, now_ms) for o in action["orders"]]
    return {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
