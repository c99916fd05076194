"""The feed's configuration: one frozen struct built from the command line and validated before anything starts.

The venue's defaults come from its spec (caerus.venuekit.spec), found in the venues the feed app hands down
(:class:`~caerus.venuekit.spec.VenueCatalog`; this module never looks a venue up itself): base URL, symbol,
channels, routes, stream path, subscribe frames, keepalive, watchdog and rotation. This module only validates and
combines them, and derives the companion segment names. Bad settings raise the one
:class:`caerus.config.ConfigError`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from urllib.parse import urlsplit

from caerus import instruments
from caerus.config import ConfigBase, ConfigError
from caerus.ipc.wait import POLICIES, WaitPolicy
from caerus.net.connection_supervisor import Endpoint, SupervisorConfig
from caerus.plan import FEED_CLIENTS, parse_cpu_list
from caerus.venuekit.spec import VENUE_PLUGINS_ENV, UnknownVenue, VenueCatalog, VenueSpec

__all__ = ["ConfigError", "FeedConfig", "add_arguments", "companion_segment", "from_args"]


CLIENTS = FEED_CLIENTS


class FeedConfig(ConfigBase, frozen=True):
    venue: str
    spec: VenueSpec  # the venue's spec, as handed down (never looked up again)
    segment: str
    events_segment: str
    stats_segment: str
    base_url: str
    symbols: tuple[str, ...]  # the venue's names of the instruments, in instrument-id order of ``ids``
    ids: tuple[int, ...]  # each symbol's instrument id (BOOK.symbol)
    # each one's session name (--instruments; --symbols: the venue's names): its per-instrument latency tags
    names: tuple[str, ...]
    process: str  # this process's name (feed-<venue>, or feed-<venue>-<share> in a split): its .hlog and log lines
    split: bool  # a share of a venue split across feed processes (--share): per-instrument counters even for one
    connections: int  # the pool: instruments split into this many connections, each with its own supervisor
    instrument_stale_after_s: float  # the per-instrument watchdog
    channel: str
    route: str
    ca_file: str | None
    metrics_dir: Path | None
    wait_policy: WaitPolicy
    cpus: tuple[int, ...]
    capacity: int
    client: str  # "asyncio" (websockets' asyncio client) | "busy" (caerus.net.busy: recvmsg + kernel stamps)
    warm_every_us: float  # the busy client's shadow connection read this often while idle (caerus.feed.warm); 0: off
    max_frame_bytes: int
    keepalive_s: float | None
    parse_error_limit: int
    housekeeping_s: float
    supervisor: SupervisorConfig

    @property
    def url(self) -> str:
        return self.spec.feed.url(self.base_url, self.route)

    @property
    def symbol(self) -> str:
        """The first instrument's venue symbol (the single-instrument view)."""
        return self.symbols[0]

    def endpoint(self, symbols: tuple[str, ...] | None = None) -> Endpoint:
        """Where one connection of the pool subscribes: ``symbols`` (default: every instrument)."""
        feed = self.spec.feed
        return Endpoint(
            self.url,
            feed.subscribe(symbols or self.symbols, self.channel),
            keepalive_frame=feed.keepalive_frame if self.keepalive_s else None,
            keepalive_s=self.keepalive_s,
            max_size=self.max_frame_bytes,
        )

    def check(self) -> None:
        super().check()
        if self.warm_every_us < 0:
            raise ConfigError(f"--warm-every-us must be >= 0 (0 = off), got {self.warm_every_us}")
        if self.warm_every_us:
            if self.client != "busy":
                raise ConfigError(f"--warm-every-us keeps the busy client's path warm: --client is {self.client!r}")
            if self.wait_policy is WaitPolicy.SLEEP:
                raise ConfigError("--warm-every-us needs a busy-polling --wait-policy (spin, hybrid): a sleeping "
                                  "loop would be woken for every rehearsal")
            if self.spec.feed.book_frame is None:
                raise ConfigError(f"--warm-every-us: venue {self.venue!r} has no book_frame to make synthetic "
                                  "frames from")
        try:
            self.supervisor.validate()
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def companion_segment(segment: str, kind: str, venue: str) -> str:
    """``S.book.<venue>`` -> ``S.events.<venue>`` / ``S.stats.feed-<venue>``; otherwise ``<segment>.<kind>``."""
    head, sep, tail = segment.rpartition(".book.")
    if sep and tail == venue:
        return f"{head}.events.{venue}" if kind == "events" else f"{head}.stats.feed-{venue}"
    return f"{segment}.{kind}"


def add_arguments(p: argparse.ArgumentParser, venues: VenueCatalog) -> None:
    p.add_argument("--venue", required=True,
                   help=f"venue name: {', '.join(venues.names())} (or one registered through "
                        f"{VENUE_PLUGINS_ENV})")
    p.add_argument("--segment", required=True, help="books ring (SWMR of BookRecord), e.g. S.book.binance")
    p.add_argument("--events-segment", help="events ring (default: S.events.<venue> derived from --segment)")
    p.add_argument("--stats-segment", help="counter block (default: S.stats.feed-<venue> derived from --segment)")
    p.add_argument("--url", help="venue base URL, scheme+host[:port] (the feed adds the venue path)")
    p.add_argument("--ca-file", help="PEM CA bundle to verify the venue certificate (the emulator's ca.pem)")
    p.add_argument("--symbol", help="one instrument by the venue's name: BTCUSDT (binance) or BTC (hyperliquid); "
                                    "default: the venue's BTC perpetual")
    p.add_argument("--symbols", help="several instruments by the venue's names, comma-separated (ids 0, 1, ...)")
    p.add_argument("--instruments", type=Path, metavar="FILE",
                   help="the session's instruments.json (caerus.instruments): every instrument, with its id")
    p.add_argument("--share", metavar="FIRST:END",
                   help="with --instruments: carry ids FIRST..END-1 only, this process's share of a venue the plan "
                        "split across feed processes (caerus.plan.feed_shares)")
    p.add_argument("--process-name", metavar="NAME",
                   help="this feed process's name, for its <metrics-dir>/<NAME>.hlog and log lines (default "
                        "feed-<venue>; a share's is feed-<venue>-<share>)")
    p.add_argument("--connections", type=int,
                   help="connections in the pool (instruments split evenly; default: as few as the venue's "
                        "per-connection limit allows)")
    p.add_argument("--instrument-stale-after", type=float,
                   help="per-instrument watchdog, seconds: an instrument silent this long on a live connection is "
                        "marked STALE (default: the connection watchdog's threshold)")
    p.add_argument("--channel", help="binance: bookTicker (default) | depth5; hyperliquid: bbo (default) | l2Book")
    p.add_argument("--route", help="stream route (binance: public (default) | market)")
    p.add_argument("--allow-silent-route", action="store_true",
                   help="accept a channel on a route known to be acknowledged and then silent (watchdog demos)")
    p.add_argument("--metrics-dir", type=Path, help="write <dir>/<process name>.hlog (default feed-<venue>.hlog)")
    p.add_argument("--stats-interval", type=float, default=0.1, help=argparse.SUPPRESS)
    p.add_argument("--wait-policy", default="sleep", choices=POLICIES,
                   help="spin/hybrid: busy-polling event loop; sleep: normal asyncio (default)")
    p.add_argument("--cpus", default="", help="CPU list to pin to, e.g. 0 or 0-1")
    p.add_argument("--client", default="asyncio", choices=CLIENTS,
                   help="asyncio: websockets' asyncio client (default); busy: our own read path (recvmsg with the "
                        "kernel's receive stamp, SSLObject, websockets' sans-I/O protocol), which records the "
                        "stack metric (t_recv - t_wire)")
    p.add_argument("--warm-every-us", type=float, default=0.0,
                   help="keep the busy client's receive path warm: a shadow connection in this process reads one "
                        "synthetic frame this often (microseconds) while the feed publishes nothing; needs --client "
                        "busy and a busy-polling --wait-policy (spin, hybrid). 0 = off (default)")
    p.add_argument("--capacity", type=int, default=4096, help="books ring capacity (power of two)")
    p.add_argument("--max-frame-bytes", type=int, default=1 << 20, help="largest accepted WebSocket message")
    p.add_argument("--stale-after", type=float, help="data watchdog threshold, seconds (venue default)")
    p.add_argument("--rotate-after", type=float,
                   help="make-before-break rotation age, seconds (venue default, binance 23 h; 0 = never)")
    p.add_argument("--rotation-timeout", type=float, default=30.0)
    p.add_argument("--keepalive", type=float,
                   help="application ping interval, seconds (venues that need one; hyperliquid default 20)")
    p.add_argument("--open-timeout", type=float, default=10.0, help="connect + TLS + upgrade timeout, seconds")
    p.add_argument("--backoff-base", type=float, default=0.5)
    p.add_argument("--backoff-cap", type=float, default=30.0)
    p.add_argument("--connects-per-min", type=float, default=10.0, help="new connections per minute (bucket)")
    p.add_argument("--connect-burst", type=int, default=2)
    p.add_argument("--rate-limited-delay", type=float, default=60.0, help="minimum wait after HTTP 429/418")
    p.add_argument("--parse-error-limit", type=int, default=100,
                   help="restart a connection after this many unparseable frames (when they are most of it)")


def _instruments(a: argparse.Namespace, venue: str, spec: VenueSpec
                 ) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    """The venue symbols, instrument ids and instrument names from --instruments, --symbols or --symbol (one of
    them; without a list the names are the venue's symbols)."""
    given = [name for name in ("symbol", "symbols", "instruments") if getattr(a, name, None)]
    if len(given) > 1:
        both = " and ".join("--" + g for g in given)
        raise ConfigError(f"give one of --symbol, --symbols, --instruments, not {both}")
    if a.instruments:
        try:
            insts = instruments.load(a.instruments)
        except instruments.InstrumentError as exc:
            raise ConfigError(f"--instruments: {exc}") from None
        name_of = spec.feed.instrument_symbol
        if name_of is None:
            raise ConfigError(f"--instruments: {venue} has no column in an instrument list; use --symbols")
        mine = tuple(insts)[_share(getattr(a, "share", None), len(insts))]
        return tuple(name_of(i) for i in mine), tuple(i.id for i in mine), tuple(i.name for i in mine)
    if getattr(a, "share", None):
        raise ConfigError("--share picks ids of --instruments; it needs --instruments")
    if a.symbols:
        symbols = tuple(s.strip() for s in a.symbols.split(","))
        if any(not s for s in symbols) or len(set(symbols)) != len(symbols):
            raise ConfigError(f"--symbols {a.symbols!r}: distinct, non-empty names separated by commas")
        # a symbol that is not letters and digits cannot name a latency tag: then the ids do
        names = symbols if all(s.isalnum() for s in symbols) else tuple(map(str, range(len(symbols))))
        return symbols, tuple(range(len(symbols))), names
    symbol = a.symbol or spec.feed.default_symbol
    return (symbol,), (0,), (symbol,)


def _share(text: str | None, n: int) -> slice:
    """``FIRST:END`` -> the slice of the instrument list it names (ids are positions in it); the whole list for None."""
    if not text:
        return slice(0, n)
    first, sep, end = text.partition(":")
    try:
        lo, hi = int(first), int(end)
    except ValueError:
        lo = hi = -1
    if not sep or not 0 <= lo < hi <= n:
        raise ConfigError(f"--share {text!r} must be FIRST:END with 0 <= FIRST < END <= {n} (the instruments file "
                          f"lists {n})")
    return slice(lo, hi)


def from_args(a: argparse.Namespace, venues: VenueCatalog) -> FeedConfig:
    """Build and validate the config for ``--venue`` out of ``venues`` (what the app hands down); raises ConfigError
    naming the first bad setting."""
    venue = a.venue
    try:
        spec = venues.get(venue)
    except UnknownVenue as exc:
        raise ConfigError(f"--venue: {exc}") from None
    feed = spec.feed
    symbols, ids, names = _instruments(a, venue, spec)
    per_conn = feed.max_per_connection
    need = -(-len(symbols) // per_conn)
    connections = a.connections if a.connections is not None else need
    if not need <= connections <= min(len(symbols), feed.max_connections):
        raise ConfigError(f"--connections {connections}: {len(symbols)} {venue} instruments need "
                          f"{need}..{min(len(symbols), feed.max_connections)} connections (at most {per_conn} per "
                          f"connection, {feed.max_connections} connections)")
    channel = a.channel or feed.channels[0]
    if channel not in feed.channels:
        raise ConfigError(f"--channel {channel!r} is not a {venue} channel: {', '.join(feed.channels)}")
    route = a.route or feed.channel_routes.get(channel) or feed.routes[0]
    if route not in feed.routes:
        raise ConfigError(f"--route {route!r} is not a {venue} route: {', '.join(feed.routes)}")
    carrier = feed.channel_routes.get(channel)
    if carrier is not None and route != carrier and not a.allow_silent_route:
        raise ConfigError(f"--route {route} with --channel {channel} would be silent: {feed.route_note}. Use --route "
                          f"{carrier}, or add --allow-silent-route to demonstrate the data watchdog")
    if not a.segment or any(c in a.segment for c in "/ \0"):
        raise ConfigError(f"--segment {a.segment!r} is not a valid segment name")
    base = (a.url or feed.default_base_url).rstrip("/")
    parts = urlsplit(base)
    if parts.scheme != "wss" or not parts.hostname:
        raise ConfigError(f"--url {base!r} must be wss://host[:port] (TLS only)")
    if parts.path or parts.query:
        raise ConfigError(f"--url {base!r} must be scheme+host[:port] only: the feed adds the venue path")
    if a.ca_file and not os.path.isfile(a.ca_file):
        raise ConfigError(f"--ca-file {a.ca_file!r} does not exist")
    cap = a.capacity
    if cap < 2 or cap & (cap - 1):
        raise ConfigError(f"--capacity must be a power of two >= 2, got {cap}")
    if a.max_frame_bytes < 1024:
        raise ConfigError(f"--max-frame-bytes must be >= 1024, got {a.max_frame_bytes}")
    if a.parse_error_limit < 1:
        raise ConfigError(f"--parse-error-limit must be >= 1, got {a.parse_error_limit}")
    try:
        cpus = parse_cpu_list(a.cpus) if a.cpus else ()
    except ValueError:
        raise ConfigError(f"--cpus {a.cpus!r} is not a CPU list like 0-1,3") from None
    bad_cpus = [c for c in cpus if c not in os.sched_getaffinity(0)]
    if bad_cpus:
        raise ConfigError(f"--cpus {a.cpus!r}: CPUs {bad_cpus} are not available to this process")
    rotate = a.rotate_after if a.rotate_after is not None else feed.rotate_after_s
    keepalive = None
    if feed.keepalive_frame is not None:
        keepalive = a.keepalive if a.keepalive is not None else feed.keepalive_s
        if not 0 < keepalive < feed.keepalive_max_s:
            raise ConfigError(f"--keepalive must be in (0, {feed.keepalive_max_s:g}) s ({venue} closes idle "
                              f"connections at {feed.keepalive_max_s:g} s)")
    sup = SupervisorConfig(
        open_timeout_s=a.open_timeout,
        backoff_base_s=a.backoff_base,
        backoff_cap_s=a.backoff_cap,
        connects_per_min=a.connects_per_min,
        connect_burst=a.connect_burst,
        stale_after_s=a.stale_after if a.stale_after is not None else feed.stale_after_s,
        rotate_after_s=rotate if rotate > 0 else None,
        rotation_timeout_s=a.rotation_timeout,
        rate_limited_delay_s=a.rate_limited_delay,
    )
    if a.stats_interval <= 0:
        raise ConfigError("--stats-interval must be > 0")
    inst_stale = a.instrument_stale_after if a.instrument_stale_after is not None else sup.stale_after_s
    if a.instrument_stale_after is not None and not inst_stale > 0:
        raise ConfigError(f"--instrument-stale-after must be > 0, got {inst_stale}")
    process = getattr(a, "process_name", None) or f"feed-{venue}"
    if not process or any(c in process for c in "/ \0"):
        raise ConfigError(f"--process-name {process!r} is not a usable name (it names a file)")
    cfg = FeedConfig(
        venue=venue,
        spec=spec,
        segment=a.segment,
        events_segment=a.events_segment or companion_segment(a.segment, "events", venue),
        stats_segment=a.stats_segment or companion_segment(a.segment, "stats", venue),
        base_url=base,
        symbols=symbols,
        ids=ids,
        names=names,
        process=process,
        split=bool(getattr(a, "share", None)),
        connections=connections,
        instrument_stale_after_s=inst_stale,
        channel=channel,
        route=route,
        ca_file=a.ca_file,
        metrics_dir=a.metrics_dir,
        wait_policy=WaitPolicy(a.wait_policy),
        cpus=cpus,
        capacity=cap,
        client=a.client,
        warm_every_us=a.warm_every_us,
        max_frame_bytes=a.max_frame_bytes,
        keepalive_s=keepalive,
        parse_error_limit=a.parse_error_limit,
        housekeeping_s=a.stats_interval,
        supervisor=sup,
    )
    cfg.check()
    return cfg
