"""Order entry for the venue emulator: answers Binance ``order.place`` and Hyperliquid ``post`` requests the way
the real venues do, including their rejections. Pure functions over a small state (credentials, last book, id
counters): no sockets, no logging, so the emulator's servers call them from any framework.

This module is the entry point the servers (caerus.sim.core.order_entry) and tests use; the work is done per venue in
caerus.sim.binance.ws_api (the WebSocket API's method table over binance_algo, binance_orders and binance_auth)
and caerus.sim.hyperliquid.orders over the shared desk and account state in caerus.sim.core.desk (imports go that way
only: this module -> a venue's modules -> the desk; .importlinter's sim-order-entry-layers).

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
refused. Price bands (caerus.sim.core.price_band, from the market's mark, caerus.sim.core.marks): Binance PERCENT_PRICE
-4016 / -4024 on a LIMIT place or modify, Hyperliquid's 80% from the reference price on every order and modify.
Resting orders fill at their price when the market's top of book (``update_book``) reaches them. Money and
positions live in one ledger (caerus.sim.core.ledger) both venues' views read.

Test credentials: :func:`configure_test_credentials` (in process), :func:`configure_from_env` (``CAERUS_SIM_*``
variables, for the emulator as a separate process), or :func:`configure_from_credentials_file` (the same 0600
TOML file the live transports read; only what is needed to verify is kept). Signatures are checked by the
emulator's own verifier (caerus.sim.core.verify), never by the production signing code it tests.
"""

from __future__ import annotations

from collections.abc import Callable

from caerus.sim.binance import algo as binance_algo
from caerus.sim.binance import orders as binance_orders
from caerus.sim.binance.auth import (
    MAX_RECV_WINDOW_MS,
    REST_VERIFIED,
    binance_user_data_error,
    listen_key,
    new_session,
)
from caerus.sim.binance.orders import (
    BINANCE_SYMBOLS,
    binance_account,
    binance_balance,
    binance_commission_rate,
)
from caerus.sim.binance.ws_api import RATE_LIMITS, binance_ws_api_response
from caerus.sim.core.desk import (
    DESK,
    ENV_API_KEY,
    ENV_ED25519_PUBLIC_KEY_FILE,
    ENV_HL_ADDRESS,
    ENV_HL_NETWORK,
    ENV_HL_VAULTS,
    ENV_SECRET,
    MAX_ORDERS_KEPT,
    Book,
    OrderDesk,
    book_key,
    configure_fees,
    configure_from_credentials_file,
    configure_from_env,
    configure_test_credentials,
    configure_venue,
    drain_events,
    fee_tier,
    mark,
    position,
    reset,
)
from caerus.sim.hyperliquid import orders as hyperliquid_orders
from caerus.sim.hyperliquid.orders import (
    HL_ASSETS,
    HL_MAX_LEVERAGE,
    HL_MIN_NOTIONAL,
    HL_NONCE_FUTURE_MS,
    HL_NONCE_PAST_MS,
    HL_SCHEDULE_CANCEL_MIN_MS,
    hyperliquid_action,
    hyperliquid_clearinghouse_state,
    hyperliquid_info,
    hyperliquid_info_order,
    hyperliquid_open_orders,
    hyperliquid_post_response,
    hyperliquid_user_fills,
)

binance_algo_query = binance_algo.query  # GET /fapi/v1/algoOrder
binance_algo_listing = binance_algo.listing  # GET /fapi/v1/openAlgoOrders, allAlgoOrders
binance_algo_cancel_all = binance_algo.cancel_all  # DELETE /fapi/v1/algoOpenOrders

__all__ = [
    "BINANCE_SYMBOLS",
    "DESK",
    "ENV_API_KEY",
    "ENV_ED25519_PUBLIC_KEY_FILE",
    "ENV_HL_ADDRESS",
    "ENV_HL_NETWORK",
    "ENV_HL_VAULTS",
    "ENV_SECRET",
    "HL_ASSETS",
    "HL_MAX_LEVERAGE",
    "HL_MIN_NOTIONAL",
    "HL_NONCE_FUTURE_MS",
    "HL_NONCE_PAST_MS",
    "HL_SCHEDULE_CANCEL_MIN_MS",
    "MAX_ORDERS_KEPT",
    "MAX_RECV_WINDOW_MS",
    "RATE_LIMITS",
    "REST_VERIFIED",
    "Book",
    "OrderDesk",
    "binance_account",
    "binance_algo_cancel_all",
    "binance_algo_listing",
    "binance_algo_query",
    "binance_balance",
    "binance_commission_rate",
    "binance_user_data_error",
    "binance_ws_api_response",
    "book_key",
    "configure_fees",
    "configure_from_credentials_file",
    "configure_from_env",
    "configure_test_credentials",
    "configure_venue",
    "drain_events",
    "fee_tier",
    "hyperliquid_action",
    "hyperliquid_clearinghouse_state",
    "hyperliquid_info",
    "hyperliquid_info_order",
    "hyperliquid_open_orders",
    "hyperliquid_post_response",
    "hyperliquid_user_fills",
    "listen_key",
    "mark",
    "new_session",
    "on_clock",
    "position",
    "reset",
    "update_book",
]


def _binance_on_book(key: str, book: Book) -> None:
    binance_orders.on_book(key, book)
    if DESK.binance_algo_open or DESK.binance_algo_triggered:  # none placed yet (the fleet's case): no call
        binance_algo.on_book(key, book)


# What each venue's order handling does with a new top of book: the one place update_book learns the venues.
_ON_BOOK: dict[str, Callable[[str, Book], None]] = {
    "binance": _binance_on_book,
    "hyperliquid": hyperliquid_orders.on_book,
}


def update_book(venue: str, bid_px: float, bid_qty: float, ask_px: float, ask_qty: float, symbol: str = "BTC",
                mark: float | None = None) -> None:
    """Top of book of instrument ``symbol`` (catalogue name) the fill check uses (venue 'binance' |
    'hyperliquid', a key of ``_ON_BOOK``) and its mark (price bands, positions' mark and unrealised PnL); the
    market driver calls this for every emulated instrument's top. The venue's resting orders it reaches fill."""
    on_book = _ON_BOOK[venue]
    key = book_key(venue, symbol)
    books = DESK.books
    prev = books.get(key)
    if prev is None:
        last = None
    elif bid_px < prev.bid_px:
        last = prev.bid_px  # a seller hit the old bid
    elif ask_px > prev.ask_px:
        last = prev.ask_px  # a buyer lifted the old ask
    else:
        last = prev.last
    book = books[key] = Book(bid_px, bid_qty, ask_px, ask_qty, mark, last)
    on_book(key, book)


def on_clock() -> None:
    """The emulator's clock ticked (the account-event pump, every 20 ms): what is due at a time, not at a price,
    happens now whether or not the market moved: Binance GTD orders (plain and conditional) expire."""
    now_ms = binance_orders.venue_now_ms()
    binance_orders.expire_due(now_ms)
    binance_algo.on_clock(now_ms)
