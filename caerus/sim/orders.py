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

Life cycle (issue 33): Binance ``order.cancel`` (-2011 when not open), ``order.modify`` (in place, AMENDMENT),
MARKET orders (at the touch; a price is -1106), ``v2/account.status | balance``; rejections minNotional -4164,
duplicate open clientOrderId -4116, recvWindow > 60000 -1131, crossing GTX -5022, reduce-only beyond the
position -2022. Hyperliquid ``cancel``, ``cancelByCloid``, ``modify``, ``batchModify``, ``scheduleCancel`` (at
least 5 s ahead; the orders end ``scheduledCancel``) and ``updateLeverage``; reduce-only beyond the position is
refused. Price bands (caerus.sim.price_band, from the market's mark, caerus.sim.marks): Binance PERCENT_PRICE
-4016 / -4024 on a LIMIT place or modify, Hyperliquid's 80% from the reference price on every order and modify.
Resting orders fill at their price when the market's top of book (``update_book``) reaches them. Money and
positions live in one ledger (caerus.sim.ledger) both venues' views read.

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

from caerus.sim import catalogue, price_band
from caerus.sim.ledger import Fill, Ledger, hl_direction, start_balance_from_env
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
HL_MAX_LEVERAGE = 40  # every listed coin's maxLeverage in meta
HL_SCHEDULE_CANCEL_MIN_MS = 5000  # scheduleCancel's time must be at least 5 s ahead
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
    mark: float | None = None  # the market's mark (caerus.sim.marks); None: the mid stands in


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
    # positions, balances, realised PnL, leverage and fills history of both venues' accounts (caerus.sim.ledger)
    ledger: Ledger = field(default_factory=lambda: Ledger(start_balance_from_env()))
    # resting orders per book key: Hyperliquid oids and Binance orderIds the market's moves may fill
    hl_open: dict[str, set[int]] = field(default_factory=lambda: collections.defaultdict(set))
    binance_open: dict[str, set[int]] = field(default_factory=lambda: collections.defaultdict(set))
    hl_dead_man_ms: int | None = None  # scheduleCancel: every open order is canceled at this time
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


def update_book(venue: str, bid_px: float, bid_qty: float, ask_px: float, ask_qty: float, symbol: str = "BTC",
                mark: float | None = None) -> None:
    """Top of book of instrument ``symbol`` (catalogue name) the fill check uses (venue 'binance' |
    'hyperliquid') and its mark (price bands, positions' mark and unrealised PnL); the market driver calls this
    for every emulated instrument's top."""
    key = book_key(venue, symbol)
    book = DESK.books[key] = Book(bid_px, bid_qty, ask_px, ask_qty, mark)
    resting = DESK.hl_open if venue == "hyperliquid" else DESK.binance_open
    if resting.get(key) or (venue == "hyperliquid" and DESK.hl_dead_man_ms is not None):
        now_ms = time.time_ns() // 1_000_000
        if venue == "hyperliquid":
            _hl_dead_man(now_ms)
        _match_resting(venue, key, book, now_ms)


def reset() -> None:
    """Forget credentials, books, nonces and ids (tests)."""
    global DESK
    DESK = OrderDesk()


def _fill(venue: str, is_buy: bool, px: float, qty: float, name: str = "BTC") -> Fill:
    """Book a fill into the venue's account (position in ``name``, realised PnL): the one ledger both venues'
    views read."""
    return DESK.ledger.book_fill(venue, book_key(venue, name), is_buy, px, qty)


def mark(venue: str, name: str = "BTC") -> float | None:
    """The instrument's mark as the market driver computed it (caerus.sim.marks), the mid of the desk's top of book
    when it gave none (a test feeding books by hand); None before the first book."""
    book = DESK.books.get(book_key(venue, name))
    if book is None:
        return None
    return book.mark if book.mark is not None else (book.bid_px + book.ask_px) / 2


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


def _b_order_event(result: dict[str, Any], x: str, now_ms: int, last: tuple[float, float] = (0.0, 0.0),
                   trade_id: int = 0, realised: float = 0.0, maker: bool = False) -> None:
    """One ORDER_TRADE_UPDATE (execution type ``x``) for the order as it now stands; ``last`` is (price, qty) of
    the fill a TRADE event reports."""
    spec = BINANCE_SYMBOLS[result["symbol"]]
    qd = spec["qty_decimals"]
    lpx, lqty = last
    DESK.events["binance"].append({"e": "ORDER_TRADE_UPDATE", "E": now_ms, "T": now_ms, "o": {
        "s": result["symbol"], "c": result["clientOrderId"], "S": result["side"], "o": result["type"],
        "f": result["timeInForce"], "q": result["origQty"], "p": result["price"],
        "ap": result["avgPrice"], "sp": "0", "x": x, "X": result["status"], "i": result["orderId"],
        "l": f"{lqty:.{qd}f}", "z": result["executedQty"], "L": _px(lpx, spec) if lqty else "0", "N": "USDT",
        "n": "0", "T": now_ms, "t": trade_id, "b": "0", "a": "0", "m": maker, "R": result["reduceOnly"],
        "wt": "CONTRACT_PRICE", "ot": result["origType"], "ps": "BOTH", "cp": False, "rp": f"{realised:.8f}",
        "pP": False, "si": 0, "ss": 0, "V": "NONE", "pm": "NONE", "gtd": 0}})


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
    booked = _fill("binance", result["side"] == "BUY", px, qty, spec["name"])
    done = float(result["executedQty"]) + qty
    quote = float(result["cumQuote"]) + px * qty
    result.update(executedQty=f"{done:.{qd}f}", cumQty=f"{done:.{qd}f}", cumQuote=f"{quote:.5f}",
                  avgPrice=_px(quote / done, spec), updateTime=now_ms,
                  status="FILLED" if done >= float(result["origQty"]) - 1e-12 else "PARTIALLY_FILLED")
    trade_id = next(DESK.trade_ids)
    DESK.ledger.fills["binance"].appendleft({
        "buyer": result["side"] == "BUY", "commission": "0", "commissionAsset": "USDT", "id": trade_id,
        "maker": maker, "orderId": result["orderId"], "price": _px(px, spec), "qty": f"{qty:.{qd}f}",
        "quoteQty": f"{px * qty:.8f}", "realizedPnl": f"{booked.closed_pnl:.8f}", "side": result["side"],
        "positionSide": "BOTH", "symbol": result["symbol"], "time": now_ms})
    _b_order_event(result, "TRADE", now_ms, (px, qty), trade_id, booked.closed_pnl, maker)
    _b_account_event(result["symbol"], now_ms)


def _hl_events(record: dict[str, Any], status: str, now_ms: int) -> None:
    """An ``orderUpdates`` event: the order's state."""
    DESK.events["hyperliquid"].append({"channel": "orderUpdates", "data": [
        {"order": record, "status": status, "statusTimestamp": now_ms}]})


def _hl_trade(record: dict[str, Any], px: float, qty: float, now_ms: int, *, crossed: bool) -> None:
    """Book one fill of a Hyperliquid order: the ledger, the fills history (``userFills``) and the stream event,
    with the venue's ``dir``, ``startPosition`` and ``closedPnl``."""
    coin = record["coin"]
    booked = _fill("hyperliquid", record["side"] == "B", px, qty, coin)
    szd = _sz_decimals(coin)
    fill = {"coin": coin, "px": _hl_px(px, szd), "sz": _hl_sz(qty, szd), "side": record["side"], "time": now_ms,
            "startPosition": f"{booked.start:.{szd}f}", "dir": hl_direction(booked),
            "closedPnl": f"{booked.closed_pnl:.6f}", "hash": f"0x{record['oid']:064x}", "oid": record["oid"],
            "crossed": crossed, "fee": "0.0", "tid": next(DESK.trade_ids), "feeToken": "USDC",
            **({"cloid": record["cloid"]} if record["cloid"] else {})}
    DESK.ledger.fills["hyperliquid"].appendleft(fill)
    DESK.events["hyperliquid"].append({"channel": "userFills", "data": {"user": DESK.hyperliquid_address,
                                                                        "fills": [fill]}})
    DESK.events["hyperliquid"].append({"channel": "user", "data": {"fills": [fill]}})  # userEvents


def _match_resting(venue: str, key: str, book: Book, now_ms: int) -> None:
    """Fill the resting orders the market moved through: a buy at or above the ask, a sell at or below the bid,
    at the order's own price (it was the maker), up to the touch's size."""
    if venue == "hyperliquid":
        for oid in sorted(DESK.hl_open[key]):
            rec = DESK.hl_orders.get(oid)
            if rec is None or rec["status"] != "open":
                DESK.hl_open[key].discard(oid)
                continue
            order = rec["order"]
            px, left = float(order["limitPx"]), float(order["sz"])
            is_buy = order["side"] == "B"
            if (is_buy and book.ask_px <= px) or (not is_buy and book.bid_px >= px):
                qty = min(left, book.ask_qty if is_buy else book.bid_qty)
                if qty <= 0:
                    continue
                _hl_trade(order, px, qty, now_ms, crossed=False)
                order["sz"] = _hl_sz(left - qty, _sz_decimals(order["coin"]))
                if float(order["sz"]) <= 0:
                    rec["status"], rec["statusTimestamp"] = "filled", now_ms
                    DESK.hl_open[key].discard(oid)
                    _hl_events(order, "filled", now_ms)
        return
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


def _hl_dead_man(now_ms: int) -> None:
    """``scheduleCancel``: at its time every open order is canceled, and the schedule is spent."""
    if DESK.hl_dead_man_ms is not None and now_ms >= DESK.hl_dead_man_ms:
        DESK.hl_dead_man_ms = None
        for oids in DESK.hl_open.values():
            for oid in sorted(oids):
                _hl_cancel_oid(oid, None, now_ms, status="scheduledCancel")


def position(venue: str, name: str = "BTC") -> tuple[float, float]:
    """(signed position in instrument ``name``, average entry price) the desk holds on ``venue``."""
    return DESK.ledger.position(book_key(venue, name))


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
    DESK.requests_ms.append((now_ms, method in ("order.place", "v1/order.place") and "result" in reply))
    params = msg.get("params") if isinstance(msg, dict) else None
    if not (isinstance(params, dict) and params.get("returnRateLimits") in (False, "false")):
        reply["rateLimits"] = _rate_limits(now_ms)
    return reply


_PLACE = ("order.place", "v1/order.place")
_OPEN = ("NEW", "PARTIALLY_FILLED")
MAX_RECV_WINDOW_MS = 60_000


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
    qty = _decimal(params["quantity"])
    if otype == "MARKET" and params.get("price") not in (None, ""):
        return _b_error(req_id, -1106, "Parameter 'price' sent when not required.")
    price = _decimal(params.get("price")) if otype == "LIMIT" else Decimal(0)
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
    fill = _cross("binance", is_buy, float("inf") if otype == "MARKET" and is_buy else float(price), float(qty),
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
    _forget_oldest(DESK.binance_orders, DESK.binance_client_ids)
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
    qty, price = _decimal(params["quantity"]), _decimal(params["price"])
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
        _match_resting("binance", book_key("binance", spec["name"]), book, now_ms)
    return {"id": req_id, "status": 200, "result": dict(result)}


#: marks a request whose signature the REST layer already checked over the query string as sent (an object no
#: JSON frame can carry, so a WebSocket client cannot claim it)
REST_VERIFIED = object()


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
    wallet = start + realised PnL, unrealised PnL at the marks, initial margin = notional / leverage."""
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
    return {"totalInitialMargin": f"{margin:.8f}", "totalMaintMargin": f"{margin / 4:.8f}",
            "totalWalletBalance": f"{wallet:.8f}", "totalUnrealizedProfit": f"{upnl:.8f}",
            "totalMarginBalance": f"{equity:.8f}", "totalPositionInitialMargin": f"{margin:.8f}",
            "totalOpenOrderInitialMargin": "0.00000000", "totalCrossWalletBalance": f"{wallet:.8f}",
            "totalCrossUnPnl": f"{upnl:.8f}", "availableBalance": f"{avail:.8f}",
            "maxWithdrawAmount": f"{avail:.8f}", "assets": [asset], "positions": positions}


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
    is_buy = bool(o["b"])
    coin = str(spec["coin"])
    band = price_band.hyperliquid_refusal(px, mark("hyperliquid", coin))
    if band is not None:
        return {"error": band}
    if o["r"] is True:  # reduce only: against the position, and no larger than it
        szi, _ = position("hyperliquid", coin)
        if szi == 0.0 or (szi > 0) == is_buy or float(sz) > abs(szi) + 1e-12:
            return {"error": f"Reduce only order would increase position. asset={o['a']}"}
    elif float(px) * float(sz) < HL_MIN_NOTIONAL:
        return {"error": f"Order must have minimum value of ${HL_MIN_NOTIONAL:.0f}. asset={o['a']}"}
    tif = (o["t"].get("limit") or {}).get("tif") if isinstance(o["t"], dict) else None
    if tif not in ("Ioc", "Gtc", "Alo"):
        return {"error": "Invalid order type."}
    fill = _cross("hyperliquid", is_buy, float(px), float(sz), coin)
    if tif == "Alo" and fill is not None:
        book = DESK.books.get(book_key("hyperliquid", coin))
        bbo = f"{book.bid_px}@{book.ask_px}" if book else f"{px}"
        return {"error": f"Post only order would have immediately matched, bbo was {bbo}. asset={o['a']}"}
    if fill is None and tif == "Ioc":
        return {"error": f"Order could not immediately match against any resting orders. asset={o['a']}"}
    oid = next(DESK.ids)
    _forget_oldest(DESK.hl_orders, DESK.hl_cloids)
    cloid = o.get("c") if isinstance(o.get("c"), str) else None
    record = {"coin": spec["coin"], "side": "B" if is_buy else "A", "limitPx": o["p"], "sz": o["s"], "oid": oid,
              "timestamp": now_ms, "origSz": o["s"], "cloid": cloid}
    if cloid is not None:
        DESK.hl_cloids[cloid.lower()] = oid
    if fill is None:
        DESK.hl_orders[oid] = {"order": record, "status": "open", "statusTimestamp": now_ms}
        DESK.hl_open[book_key("hyperliquid", coin)].add(oid)
        _hl_events(record, "open", now_ms)
        return {"resting": {"oid": oid}}
    fpx, fqty = fill
    # A partial fill: the rest of a Gtc order rests (open), an Ioc remainder is canceled.
    status = "filled" if fqty >= float(sz) else ("open" if tif == "Gtc" else "canceled")
    record["sz"] = _hl_sz(float(sz) - fqty, sz_decimals)
    DESK.hl_orders[oid] = {"order": record, "status": status, "statusTimestamp": now_ms}
    if status == "open":
        DESK.hl_open[book_key("hyperliquid", coin)].add(oid)
    _hl_events(record, status, now_ms)
    _hl_trade(record, fpx, fqty, now_ms, crossed=True)
    return {"filled": {"totalSz": _hl_sz(fqty, sz_decimals), "avgPx": _hl_px(fpx, sz_decimals), "oid": oid}}


_NEVER_PLACED = "Order was never placed, already canceled, or filled."


def _hl_cancel_oid(oid: int | None, asset: int | None, now_ms: int, status: str = "canceled") -> str | dict[str, Any]:
    """Cancel one open order (``asset`` must be its coin's when given): "success", or the venue's error."""
    rec = DESK.hl_orders.get(oid) if oid is not None else None
    coin = HL_ASSETS[asset]["coin"] if asset in HL_ASSETS else None
    if rec is None or rec["status"] != "open" or (asset is not None and rec["order"]["coin"] != coin):
        return {"error": f"{_NEVER_PLACED} asset={asset}"}
    rec["status"], rec["statusTimestamp"] = status, now_ms
    assert oid is not None
    DESK.hl_open[book_key("hyperliquid", rec["order"]["coin"])].discard(oid)
    _hl_events(rec["order"], status, now_ms)
    return "success"


def _hl_oid(ref: Any) -> int | None:
    """An order reference of a cancel / modify: an oid, or a cloid (0x + 32 hex)."""
    if isinstance(ref, str):
        return DESK.hl_cloids.get(ref.lower())
    return ref if isinstance(ref, int) and not isinstance(ref, bool) else None


def _hl_modify(ref: Any, order: Any, now_ms: int) -> dict[str, Any]:
    """One modify: the open order is canceled and the new one placed (a new oid, as on the venue)."""
    oid = _hl_oid(ref)
    rec = DESK.hl_orders.get(oid) if oid is not None else None
    if rec is None or rec["status"] != "open":
        return {"error": "Cannot modify canceled or filled order"}
    if not isinstance(order, dict) or order.get("a") not in HL_ASSETS \
            or HL_ASSETS[order["a"]]["coin"] != rec["order"]["coin"]:
        return {"error": "Invalid order: missing fields."}
    _hl_cancel_oid(oid, None, now_ms)
    return _hl_order_status(order, now_ms)


def _hl_execute(action: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The signed, fresh action's effect and the venue's answer."""
    kind = action.get("type")
    if kind == "order":
        statuses = [_hl_order_status(o, now_ms) for o in action["orders"]]
        return {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
    if kind == "cancel":
        out = [_hl_cancel_oid(_hl_oid(c.get("o")), c.get("a"), now_ms) if isinstance(c, dict)
               else {"error": _NEVER_PLACED} for c in action["cancels"]]
        return {"status": "ok", "response": {"type": "cancel", "data": {"statuses": out}}}
    if kind == "cancelByCloid":
        out = [_hl_cancel_oid(_hl_oid(c.get("cloid")), c.get("asset"), now_ms) if isinstance(c, dict)
               else {"error": _NEVER_PLACED} for c in action["cancels"]]
        return {"status": "ok", "response": {"type": "cancel", "data": {"statuses": out}}}
    if kind == "modify":
        status = _hl_modify(action.get("oid"), action.get("order"), now_ms)
        if "error" in status:
            return {"status": "err", "response": status["error"]}
        return {"status": "ok", "response": {"type": "default"}}
    if kind == "batchModify":
        statuses = [_hl_modify(m.get("oid"), m.get("order"), now_ms) if isinstance(m, dict)
                    else {"error": "Invalid order: missing fields."} for m in action["modifies"]]
        return {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
    if kind == "scheduleCancel":
        when = action.get("time")
        if when is not None and when < now_ms + HL_SCHEDULE_CANCEL_MIN_MS:
            return {"status": "err", "response": "Scheduled cancel time too early, must be at least 5 seconds "
                                                 "from now."}
        DESK.hl_dead_man_ms = when
        return {"status": "ok", "response": {"type": "default"}}
    # updateLeverage (shape checked by _hl_shape_error)
    spec = HL_ASSETS[action["asset"]]
    if not 1 <= action["leverage"] <= HL_MAX_LEVERAGE:
        return {"status": "err", "response": f"Invalid leverage value. asset={action['asset']}"}
    DESK.ledger.leverage[book_key("hyperliquid", spec["coin"])] = (action["leverage"], action["isCross"])
    return {"status": "ok", "response": {"type": "default"}}


def _hl_shape_error(action: dict[str, Any]) -> str | None:
    """Why the action does not deserialize into one of the types this emulator executes (None: it does)."""
    kind = action.get("type")
    lists = {"order": "orders", "cancel": "cancels", "cancelByCloid": "cancels", "batchModify": "modifies"}
    if kind in lists:
        return None if isinstance(action.get(lists[kind]), list) and action[lists[kind]] else \
            f"Failed to deserialize the JSON body into the target type: {kind} needs a non-empty {lists[kind]}"
    if kind == "modify":
        return None if "oid" in action and isinstance(action.get("order"), dict) else \
            "Failed to deserialize the JSON body into the target type: modify needs oid and order"
    if kind == "scheduleCancel":
        t = action.get("time")
        return None if t is None or (isinstance(t, int) and not isinstance(t, bool)) else \
            "Failed to deserialize the JSON body into the target type: scheduleCancel time must be an integer"
    if kind == "updateLeverage":
        ok = action.get("asset") in HL_ASSETS and isinstance(action.get("isCross"), bool) \
            and isinstance(action.get("leverage"), int) and not isinstance(action.get("leverage"), bool)
        return None if ok else "Failed to deserialize the JSON body into the target type: updateLeverage needs " \
                               "asset, isCross and leverage"
    return "unsupported"


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
    """``clearinghouseState`` from the ledger: each coin's position (``szi`` signed) valued at the mark, its
    unrealised PnL and margin at the chosen leverage, and account value = start + realised + unrealised PnL."""
    positions, notional, margin, upnl_total = [], 0.0, 0.0, 0.0
    for inst in catalogue.HYPERLIQUID:
        key = book_key("hyperliquid", inst.name)
        szi, entry = DESK.ledger.position(key)
        if szi == 0.0:
            continue
        m = mark("hyperliquid", inst.name) or entry
        lev, cross = DESK.ledger.leverage_of(key)
        value, upnl = abs(szi) * m, DESK.ledger.unrealised(key, m)
        used = value / lev
        notional, margin, upnl_total = notional + value, margin + used, upnl_total + upnl
        szd = inst.sz_decimals
        positions.append({"type": "oneWay", "position": {
            "coin": inst.name, "szi": f"{szi:.{szd}f}", "entryPx": f"{entry:.{max(0, 6 - szd)}f}",
            "positionValue": f"{value:.2f}", "unrealizedPnl": f"{upnl:.6f}",
            "returnOnEquity": f"{upnl / used if used else 0.0:.6f}", "liquidationPx": None,
            "marginUsed": f"{used:.6f}", "maxLeverage": HL_MAX_LEVERAGE,
            "leverage": {"type": "cross", "value": lev} if cross else {"type": "isolated", "value": lev,
                                                                        "rawUsd": f"{-szi * entry:.6f}"},
            "cumFunding": {"allTime": "0.0", "sinceOpen": "0.0", "sinceChange": "0.0"}}})
    value = DESK.ledger.wallet("hyperliquid") + upnl_total
    summary = {"accountValue": f"{value:.6f}", "totalNtlPos": f"{notional:.6f}",
               "totalRawUsd": f"{DESK.ledger.wallet('hyperliquid'):.6f}", "totalMarginUsed": f"{margin:.6f}"}
    return {"marginSummary": summary, "crossMarginSummary": summary,
            "crossMaintenanceMarginUsed": f"{margin / 2:.6f}", "withdrawable": f"{max(0.0, value - margin):.6f}",
            "assetPositions": positions, "time": now_ms}


def hyperliquid_user_fills() -> list[dict[str, Any]]:
    """``userFills``: the account's fills, newest first (at most 2000, as the venue answers)."""
    return list(DESK.ledger.fills["hyperliquid"])


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
    shape = _hl_shape_error(action)
    if shape == "unsupported":
        return {"status": "err", "response": f"Unsupported action type {action.get('type')!r}."}
    if shape is not None:
        return shape
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
    _hl_dead_man(now_ms)
    return _hl_execute(action, now_ms)
