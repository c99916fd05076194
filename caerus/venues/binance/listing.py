"""Binance USD-M futures ``exchangeInfo``: which perpetuals trade, and each one's price, lot and notional rules.

Read once at session start (caerus.session.instruments) from ``GET /fapi/v1/exchangeInfo``; only a symbol whose
``contractType`` is PERPETUAL and ``status`` TRADING counts as listed. A listing whose filters are missing or not
positive numbers is refused with an error naming the symbol, never guessed.
"""

from __future__ import annotations

import math
import ssl
from dataclasses import dataclass
from typing import Any

from caerus.net.rest import request_json, rest_base_for
from caerus.venuekit.listing import ListingError
from caerus.venues.binance.data import DEFAULT_BASE_URL, TESTNET_BASE_URL

REST_BASE_URL = "https://fapi.binance.com"
TESTNET_REST_BASE_URL = "https://testnet.binancefuture.com"
EXCHANGE_INFO_PATH = "/fapi/v1/exchangeInfo"


@dataclass(frozen=True)
class BinanceListing:
    symbol: str
    tick_size: float
    lot_size: float
    min_qty: float
    min_notional: float


def rest_base(stream_base: str) -> str:
    """The REST base that lists the instruments of a stream base (the emulator serves both on one port)."""
    return rest_base_for(stream_base, {DEFAULT_BASE_URL: REST_BASE_URL, TESTNET_BASE_URL: TESTNET_REST_BASE_URL})


def fetch(rest: str, ssl_context: ssl.SSLContext | None, timeout_s: float) -> Any:
    return request_json(rest.rstrip("/") + EXCHANGE_INFO_PATH, ssl_context=ssl_context, timeout_s=timeout_s)


def _number(value: object, what: str, symbol: str, positive: bool = True) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ListingError(f"{symbol}: {what} {value!r} is not a number") from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ListingError(f"{symbol}: {what} {value!r} must be {'> 0' if positive else '>= 0'}")
    return x


def parse_exchange_info(obj: Any) -> dict[str, BinanceListing]:
    """Trading perpetuals by symbol. ListingError when the answer is not an exchangeInfo."""
    if not isinstance(obj, dict) or not isinstance(obj.get("symbols"), list):
        raise ListingError("exchangeInfo has no symbols list")
    out: dict[str, BinanceListing] = {}
    for entry in obj["symbols"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("symbol"), str):
            continue
        if entry.get("contractType") != "PERPETUAL" or entry.get("status") != "TRADING":
            continue
        symbol = entry["symbol"]
        filters = {f.get("filterType"): f for f in entry.get("filters", []) if isinstance(f, dict)}
        price, lot = filters.get("PRICE_FILTER"), filters.get("LOT_SIZE")
        if price is None or lot is None:
            raise ListingError(f"{symbol}: exchangeInfo lacks PRICE_FILTER or LOT_SIZE")
        notional = filters.get("MIN_NOTIONAL", {}).get("notional", 0)
        out[symbol] = BinanceListing(
            symbol=symbol,
            tick_size=_number(price.get("tickSize"), "tickSize", symbol),
            lot_size=_number(lot.get("stepSize"), "stepSize", symbol),
            min_qty=_number(lot.get("minQty", 0), "minQty", symbol, positive=False),
            min_notional=_number(notional, "MIN_NOTIONAL", symbol, positive=False),
        )
    return out
