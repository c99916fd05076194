"""Hyperliquid perpetuals: market data (``data``, ``feed``), order entry (``execution``, ``signing``,
``credentials``), and the :data:`SPEC` the venue registry hands to generic code.

Importing this package is cheap (URLs, decoders, the credentials type); the feed loop and the order transport
(with eth-account) are imported by the spec's factories only when a process builds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from caerus.instruments import Instrument
from caerus.venuekit.spec import CredentialSpec, FeedSpec, OrderEntrySpec, VenueSpec
from caerus.venues.hyperliquid import credentials, data, nonces
from caerus.wire import Venue

NAME = "hyperliquid"
ORDER_URLS = {"mainnet": "wss://api.hyperliquid.xyz/ws", "testnet": "wss://api.hyperliquid-testnet.xyz/ws"}
#: the server closes a connection it has received nothing on for this long
IDLE_LIMIT_S = 60.0


def _url(base: str, route: str = "ws") -> str:
    return data.url(base)


def _subscribe(symbols: Sequence[str], channel: str) -> tuple[bytes, ...]:
    return data.subscribe_frames(tuple(symbols), channel)


def _symbol(instrument: Instrument) -> str:
    return instrument.hl_coin


def _sink(out: Any, **kw: Any) -> Any:
    from caerus.venues.hyperliquid.feed import HyperliquidSink

    return HyperliquidSink(out, **kw)


def _transport(**kw: Any) -> Any:
    from caerus.venues.hyperliquid.execution import HyperliquidTransport

    return HyperliquidTransport(**kw)


SPEC = VenueSpec(
    name=NAME,
    code=int(Venue.HYPERLIQUID),
    feed=FeedSpec(
        default_base_url=data.DEFAULT_BASE_URL,
        testnet_base_url=data.TESTNET_BASE_URL,
        default_symbol=data.DEFAULT_SYMBOL,
        channels=data.CHANNELS,
        routes=("ws",),
        url=_url,
        subscribe=_subscribe,
        sink=_sink,
        stale_after_s=data.DEFAULT_STALE_AFTER_S,
        book_frame=data.book_frame,
        keepalive_frame=data.PING_FRAME,
        keepalive_s=data.DEFAULT_KEEPALIVE_S,
        keepalive_max_s=IDLE_LIMIT_S,
        instrument_symbol=_symbol,
        # 1000 subscriptions per client IP in all: the feed's whole pool stays within it
        max_per_connection=data.MAX_SUBSCRIPTIONS,
        # 10 connections per IP, less one for order entry and one for a rotation candidate
        max_connections=data.MAX_CONNECTIONS - 2,
    ),
    order_entry=OrderEntrySpec(
        urls=ORDER_URLS,
        path=data.PATH,
        transport=_transport,
        credentials=CredentialSpec(from_table=credentials.from_table, env_table=credentials.env_table,
                                   kind=credentials.HyperliquidCredentials),
        state_dir=nonces.default_state_dir,
    ),
)
