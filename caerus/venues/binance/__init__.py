"""Binance USD-M futures: market data (``data``, ``feed``), order entry (``execution``, ``signing``,
``credentials``), and the :data:`SPEC` the venue registry hands to generic code.

Importing this package is cheap (URLs, decoders, the credentials type); the feed loop and the order transport are
imported by the spec's factories only when a process builds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from caerus.instruments import Instrument
from caerus.venuekit.spec import CredentialSpec, FeedSpec, OrderEntrySpec, VenueSpec
from caerus.venues.binance import credentials, data
from caerus.wire import Venue

NAME = "binance"
ORDER_URLS = {"mainnet": "wss://ws-fapi.binance.com/ws-fapi/v1",
              "testnet": "wss://testnet.binancefuture.com/ws-fapi/v1"}
ORDER_PATH = "/ws-fapi/v1"


def _subscribe(symbols: Sequence[str], channel: str) -> tuple[bytes, ...]:
    return data.subscribe_frames(tuple(symbols), channel)


def _symbol(instrument: Instrument) -> str:
    return instrument.binance_symbol


def _sink(out: Any, **kw: Any) -> Any:
    from caerus.venues.binance.feed import BinanceSink

    return BinanceSink(out, **kw)


def _transport(**kw: Any) -> Any:
    from caerus.venues.binance.execution import BinanceTransport

    return BinanceTransport(**kw)


SPEC = VenueSpec(
    name=NAME,
    code=int(Venue.BINANCE),
    feed=FeedSpec(
        default_base_url=data.DEFAULT_BASE_URL,
        testnet_base_url=data.TESTNET_BASE_URL,
        default_symbol=data.DEFAULT_SYMBOL,
        channels=data.CHANNELS,
        routes=tuple(data.ROUTES),
        channel_routes=data.CHANNEL_ROUTES,
        route_note=data.ROUTE_NOTE,
        url=data.url,
        subscribe=_subscribe,
        sink=_sink,
        stale_after_s=data.DEFAULT_STALE_AFTER_S,
        book_frame=data.book_frame,
        rotate_after_s=data.DEFAULT_ROTATE_AFTER_S,
        instrument_symbol=_symbol,
        max_per_connection=data.MAX_STREAMS_PER_CONNECTION,
    ),
    order_entry=OrderEntrySpec(
        urls=ORDER_URLS,
        path=ORDER_PATH,
        transport=_transport,
        credentials=CredentialSpec(from_table=credentials.from_table, env_table=credentials.env_table,
                                   kind=credentials.BinanceCredentials),
    ),
)
