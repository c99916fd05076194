"""The emulator's order desk as the sim and signing unit tests open it: test credentials, a BTC book on both
venues, and Binance WebSocket API requests signed with the test secret.

Plain code (no fixture): each test module keeps its own autouse ``desk`` fixture and calls :func:`open_desk`
(or opens the desk for a wallet key with :func:`desk_open`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eth_account import Account

from caerus.sim import orders
from caerus.venues.binance.signing import BinanceHmacSigner, sign_params

API_KEY = "k" * 64
SECRET = "s" * 64
BTC_BOOK = (99_990.0, 5.0, 100_000.0, 5.0)  # bid, bid size, ask, ask size
HL_KEY = "0x" + "11" * 32  # the test wallet's private key (it signs Hyperliquid actions)


def open_desk(hl_address: str, api_key: str = API_KEY, secret: str = SECRET) -> None:
    """A fresh desk that accepts these credentials, with the BTC book on both venues."""
    orders.reset()
    orders.configure_test_credentials(binance_api_key=api_key, binance_hmac_secret=secret,
                                      hyperliquid_address=hl_address)
    orders.update_book("binance", *BTC_BOOK)
    orders.update_book("hyperliquid", *BTC_BOOK)


@contextmanager
def desk_open(hl_key: str = HL_KEY) -> Iterator[None]:
    """:func:`open_desk` for the wallet of ``hl_key`` while the block runs; the desk is reset after it."""
    open_desk(Account.from_key(hl_key).address)
    try:
        yield
    finally:
        orders.reset()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def binance_call(method: str, **params: Any) -> dict[str, Any]:
    """The desk's reply to a signed Binance WebSocket API ``method`` on BTCUSDT (``params`` add or override)."""
    now = now_ms()
    base = {"apiKey": API_KEY, "symbol": "BTCUSDT", "timestamp": now, **params}
    return orders.binance_ws_api_response(
        {"id": 1, "method": method, "params": sign_params(base, BinanceHmacSigner(SECRET))}, now_ms=now)


def binance_order(now: int, symbol: str, price: str, quantity: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """A signed Binance ``order.place`` request: an IOC limit buy (``overrides`` add or replace any parameter,
    these three included)."""
    params: dict[str, Any] = {"apiKey": API_KEY, "symbol": symbol, "side": "BUY", "type": "LIMIT",
                              "timeInForce": "IOC", "price": price, "quantity": quantity, "timestamp": now,
                              "recvWindow": 5000, **overrides}
    return {"id": 1, "method": "order.place", "params": sign_params(params, BinanceHmacSigner(SECRET))}
