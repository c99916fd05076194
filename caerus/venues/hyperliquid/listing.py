"""Hyperliquid ``meta``: the perpetuals' universe, where a coin's position is its asset index for orders.

Read once at session start (caerus.session.instruments) with ``POST /info {"type": "meta"}``. A coin flagged
``isDelisted`` is not listed (it keeps its index: indexes never shift). A universe entry without a name or an
integer ``szDecimals`` is refused with an error naming it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from caerus.net.rest import request_json, rest_base_for
from caerus.venuekit.listing import ListingError
from caerus.venues.hyperliquid.data import DEFAULT_BASE_URL, TESTNET_BASE_URL

REST_BASE_URL = "https://api.hyperliquid.xyz"
TESTNET_REST_BASE_URL = "https://api.hyperliquid-testnet.xyz"
INFO_PATH = "/info"


@dataclass(frozen=True)
class HlListing:
    coin: str
    asset: int
    sz_decimals: int


def rest_base(stream_base: str) -> str:
    """The REST base that lists the instruments of a stream base (the emulator serves both on one port)."""
    return rest_base_for(stream_base, {DEFAULT_BASE_URL: REST_BASE_URL, TESTNET_BASE_URL: TESTNET_REST_BASE_URL})


def fetch(rest: str, ssl_context: ssl.SSLContext | None, timeout_s: float) -> Any:
    return request_json(rest.rstrip("/") + INFO_PATH, body={"type": "meta"}, ssl_context=ssl_context,
                        timeout_s=timeout_s)


def parse_meta(obj: Any) -> dict[str, HlListing]:
    """Listed coins by name, with their asset index. ListingError when the answer is not a meta."""
    if not isinstance(obj, dict) or not isinstance(obj.get("universe"), list):
        raise ListingError("meta has no universe list")
    out: dict[str, HlListing] = {}
    for i, entry in enumerate(obj["universe"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ListingError(f"meta universe entry {i} has no name")
        sz = entry.get("szDecimals")
        if isinstance(sz, bool) or not isinstance(sz, int) or not 0 <= sz <= 6:
            raise ListingError(f"{entry['name']}: szDecimals {sz!r} is not an integer 0..6")
        if entry.get("isDelisted"):
            continue
        out[entry["name"]] = HlListing(entry["name"], i, sz)
    return out
