"""The session's instrument list from the venues: fetch both listings, join them by name, cache the result.

``--symbols BTC,ETH,SOL`` names what to trade; Binance ``exchangeInfo`` and Hyperliquid ``meta`` (fetched once,
before any process starts) say whether each is listed and with which rules. A symbol either venue does not list
stops the session before it starts anything, naming the symbol and the venue. The joined list is written into the
session folder as ``instruments.json`` (caerus.instruments.FILE_NAME) together with the raw listings it came from,
and every process of the session reads that file.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

from caerus.instruments import FILE_NAME, Instrument, InstrumentError, InstrumentSet, SymbolRequest, save
from caerus.net.rest import RestError
from caerus.net.ws import client_ssl_context
from caerus.venuekit.listing import ListingError
from caerus.venues.binance import listing as binance_listing
from caerus.venues.hyperliquid import listing as hl_listing

LISTINGS_FILE = "listings.json"


def join(requests: tuple[SymbolRequest, ...], exchange_info: Any, meta: Any) -> InstrumentSet:
    """The instrument list for ``requests`` from the two listings; InstrumentError naming every symbol that is
    missing on a venue (all of them at once: one failed start tells the whole story)."""
    try:
        bn = binance_listing.parse_exchange_info(exchange_info)
        hl = hl_listing.parse_meta(meta)
    except ListingError as exc:
        raise InstrumentError(f"venue listing unusable: {exc}") from None
    missing = []
    for req in requests:
        if req.binance_symbol not in bn:
            missing.append(f"{req.name}: Binance lists no trading perpetual {req.binance_symbol}")
        if req.hl_coin not in hl:
            missing.append(f"{req.name}: Hyperliquid lists no perpetual {req.hl_coin}")
    if missing:
        raise InstrumentError("unknown or unlisted symbol: " + "; ".join(missing))
    out = []
    for i, req in enumerate(requests):
        b, h = bn[req.binance_symbol], hl[req.hl_coin]
        out.append(Instrument(id=i, name=req.name, binance_symbol=b.symbol, hl_coin=h.coin, tick_size=b.tick_size,
                              lot_size=b.lot_size, min_qty=b.min_qty, min_notional=b.min_notional, hl_asset=h.asset,
                              sz_decimals=h.sz_decimals))
    return InstrumentSet(out)


def fetch_listings(binance_stream_base: str, hyperliquid_stream_base: str, *, ca_file: str | None = None,
                   timeout_s: float = 10.0) -> tuple[Any, Any]:
    """(exchangeInfo, meta) from the venues behind these stream bases; InstrumentError naming the failed call."""
    ctx: ssl.SSLContext = client_ssl_context(ca_file)
    try:
        info = binance_listing.fetch(binance_listing.rest_base(binance_stream_base), ctx, timeout_s)
        meta = hl_listing.fetch(hl_listing.rest_base(hyperliquid_stream_base), ctx, timeout_s)
    except RestError as exc:
        raise InstrumentError(f"cannot read the venues' instrument listings: {exc}") from None
    return info, meta


def resolve_into(folder: Path, requests: tuple[SymbolRequest, ...], binance_stream_base: str,
                 hyperliquid_stream_base: str, *, ca_file: str | None = None, timeout_s: float = 10.0) -> Path:
    """Fetch, join and write ``folder/instruments.json`` (and the raw listings beside it); returns its path."""
    info, meta = fetch_listings(binance_stream_base, hyperliquid_stream_base, ca_file=ca_file, timeout_s=timeout_s)
    instruments = join(requests, info, meta)
    folder.mkdir(parents=True, exist_ok=True)
    wanted_bn = {i.binance_symbol for i in instruments}
    wanted_hl = {i.hl_coin for i in instruments}
    # what the venues said about the traded instruments, for the record (not the whole universe)
    kept = {"binance": [s for s in info.get("symbols", []) if isinstance(s, dict) and s.get("symbol") in wanted_bn],
            "hyperliquid": [dict(u, asset=i) for i, u in enumerate(meta.get("universe", []))
                            if isinstance(u, dict) and u.get("name") in wanted_hl]}
    (folder / LISTINGS_FILE).write_text(json.dumps(kept, indent=1) + "\n")
    return save(instruments, folder / FILE_NAME)
