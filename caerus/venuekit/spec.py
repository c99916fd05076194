"""What a venue package tells the generic code: one typed :class:`VenueSpec` per venue (the registry holds them).

The generic feed, execution, credentials and capture code know nothing venue-specific; they ask the spec. A spec
is cheap to import: it holds constants and *factories* that import the heavy parts (the feed loop, the order
transport, the signer) only when called, so a feed process never loads the order-entry stack and vice versa.

Nothing below the process entry points looks a venue up: each app (``caerus.feed.app``, ``caerus.execution.app``,
``caerus.capture.replay_app``) hands the specs down, as a :class:`VenueCatalog` (caerus.venues.registry is one) or
as the one :class:`VenueSpec` it resolved, so the generic code serves any venue it is given, registered or not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from caerus.instruments import Instrument


@dataclass(frozen=True)
class FeedSpec:
    """Market data: where to connect, what to send, how long silence may last, and the feed loop to run."""

    default_base_url: str
    testnet_base_url: str
    default_symbol: str
    channels: tuple[str, ...]  # the first is the default
    #: ``url(base, route)``: the full stream URL from a base (scheme + host[:port]) and a route name
    url: Callable[[str, str], str]
    #: ``subscribe(symbols, channel)``: the frames sent after the handshake for these venue symbols on one
    #: connection (raises ValueError past the venue's per-connection limit)
    subscribe: Callable[[Sequence[str], str], tuple[bytes, ...]]
    #: ``sink(outputs, symbols=(S, ...), ids=(I, ...), lanes=K, parse_error_limit=N)``: the venue's feed loop (a
    #: caerus.venuekit.feed_loop.FeedSink; typed Any so this lower layer does not import the feed)
    sink: Callable[..., Any]
    stale_after_s: float  # data watchdog default
    #: ``book_frame(seq, t_exchange_ms, symbol, bid, bid_qty, ask, ask_qty)``: the venue message that carries a
    #: captured top of book (capture replay rebuilds the emulator's frames file with it)
    book_frame: Callable[[int, int, str, float, float, float, float], str] | None = None
    routes: tuple[str, ...] = ("default",)  # the first is the default
    #: channel -> the only route that carries it (a venue that acknowledges a subscription on another route and
    #: then stays silent, like Binance since its 2026-03 routing split); empty: every route carries every channel
    channel_routes: Mapping[str, str] = field(default_factory=dict)
    #: why a channel on the wrong route is refused at start (shown in the error)
    route_note: str = ""
    rotate_after_s: float = 0.0  # make-before-break rotation age default (0 = never)
    keepalive_frame: bytes | None = None  # application ping, sent every keepalive_s when set
    keepalive_s: float = 0.0  # default interval
    keepalive_max_s: float = 0.0  # the venue's idle limit: the interval must stay below it
    #: the venue's name of a session instrument (Binance ``BTCUSDT``, Hyperliquid ``BTC``); None: the session
    #: name itself (a venue without a caerus.instruments column)
    instrument_symbol: Callable[[Instrument], str] | None = None
    #: instruments one connection may carry (streams or subscriptions); a pool needs more connections beyond it
    max_per_connection: int = 1024
    #: connections one client may hold at once (a pool larger than this is refused at start)
    max_connections: int = 10


@dataclass(frozen=True)
class CredentialSpec:
    """How the venue's order-entry credentials are read: a TOML table, or environment variables."""

    #: ``from_table(table, where, base_dir)`` -> the venue's credentials object (raises CredentialsError)
    from_table: Callable[[Mapping[str, object], str, Path | None], Any]
    #: ``from_env(env)`` -> the table ``from_table`` takes, read from the environment (raises CredentialsError)
    env_table: Callable[[Mapping[str, str]], dict[str, object]]
    #: the credentials type the transport accepts
    kind: type


@dataclass(frozen=True)
class OrderEntrySpec:
    """Live order entry: URLs per network, the path appended to an override base, the transport factory."""

    urls: Mapping[str, str]  # network name -> full URL
    path: str
    #: ``transport(network=, credentials=, enable_live=, url=, ca_file=, on_reply=, **options)``
    transport: Callable[..., Any]
    credentials: CredentialSpec
    #: ``state_dir()``: where the transport keeps state across restarts by default (Hyperliquid's nonce
    #: reservation), passed as its ``state_dir`` option; None: the transport keeps no state
    state_dir: Callable[[], Path] | None = None


@dataclass(frozen=True)
class VenueSpec:
    """Everything generic code needs about one venue."""

    name: str  # the --venue name, segment suffix and capture column value
    code: int  # the wire code in BookRecord.venue / OrderRecord.venue (caerus.wire.Venue for built-ins)
    feed: FeedSpec
    order_entry: OrderEntrySpec | None = None


#: the environment variable naming venue plugin modules to import (caerus.venues.registry.load_plugins)
VENUE_PLUGINS_ENV = "CAERUS_VENUE_PLUGINS"


class UnknownVenue(KeyError):
    """No venue of that name or code is built in or registered; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class VenueCatalog(Protocol):
    """The venues a process knows, handed down by its app (the module caerus.venues.registry is one)."""

    def get(self, name: str) -> VenueSpec:
        """The venue called ``name``; :class:`UnknownVenue` listing the known names otherwise."""
        ...

    def names(self) -> tuple[str, ...]:
        """Every known venue name."""
        ...

    def live_names(self) -> tuple[str, ...]:
        """The known venues with live order entry."""
        ...
