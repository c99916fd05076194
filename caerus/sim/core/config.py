"""Emulator settings (one frozen object, validated before anything starts) and the live state servers share."""

from __future__ import annotations

import collections
import dataclasses
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caerus import fees
from caerus.sim.core.hub import Topics
from caerus.sim.core.market import MarketConfig
from caerus.sim.core.scenarios import SCENARIOS, VENUES, FaultBudget, Scenario


@dataclass(frozen=True)
class EmulatorConfig:
    cert_dir: Path
    host: str = "127.0.0.1"
    binance_port: int = 0  # 0 = ephemeral
    hyperliquid_port: int = 0
    scenario: Scenario = SCENARIOS["none"]
    market: MarketConfig = field(default_factory=MarketConfig)
    replay: Path | None = None  # frames file; replaces the market model
    # real captures (hftbacktest files, caerus.sim.core.capture_file): their Binance frames replace the model's Binance
    # side, Hyperliquid is the market's follower following the replayed mid (caerus.sim.core.replay_market)
    captures: tuple[Path, ...] = ()
    replay_retime: bool = False  # rewrite exchange timestamps in replayed frames to the scheduled send time
    replay_wait_s: float = 5.0  # start replay once every venue has a subscriber, or this long after the first
    binance_ping_interval_s: float = 180.0  # Binance sends a ping frame every 3 min...
    binance_pong_timeout_s: float = 600.0  # ...and disconnects without a pong within 10 min
    binance_max_lifetime_s: float = 86_400.0  # Binance closes every connection at 24 h
    binance_max_incoming_per_s: int = 10  # Binance disconnects a client sending more messages per second
    binance_max_streams: int = 1024  # streams one Binance stream connection may hold
    hl_idle_timeout_s: float = 60.0  # Hyperliquid closes a connection with no client message for 60 s
    hl_greeting: bool = False  # send the non-JSON greeting on every Hyperliquid connection
    hl_max_subscriptions_per_ip: int = 1000  # Hyperliquid: subscriptions one client IP may hold across connections
    hl_max_connections_per_ip: int = 10  # Hyperliquid: open WebSocket connections per client IP (429 beyond)
    # Every 127/8 address reaches a loopback listener, so per-IP limits alone do not bound the emulator: a local
    # user cycling source addresses gets 10 connections and 1000 subscriptions per address (issue 44). These
    # totals bound the whole process whatever the addresses (the fleet holds a handful of connections).
    hl_max_connections_total: int = 40  # Hyperliquid: open WebSocket connections from all clients (429 beyond)
    hl_max_subscriptions_total: int = 4000  # Hyperliquid: subscriptions held by all clients
    hl_max_subscription_bytes: int = 1024  # Hyperliquid: largest subscribe/unsubscribe message (a real one < 200)
    max_message_bytes: int = 1 << 20  # largest client message accepted
    metrics_dir: Path | None = None  # write venue-sim.hlog (emulator lateness) here
    # sched_yield after each top-of-book frame sent: the emulator shares a CPU with the fleet
    yield_after_top: bool = False
    # what the accounts pay per fill (caerus.fees): Binance VIP level (0 = regular: 2.0 / 5.0 bps maker / taker)
    # and Hyperliquid's perps tier (0: 1.5 / 4.5 bps)
    binance_fee_tier: int = 0
    hl_fee_tier: int = 0
    # Binance refuses a GTD order whose goodTillDate is not more than 600 s ahead (-5040); compressible for tests
    binance_gtd_min_lead_s: float = 600.0

    @property
    def seed(self) -> int:
        return self.market.seed

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting (nothing has been started yet)."""
        try:
            addr = ipaddress.ip_address(self.host)
        except ValueError:
            raise ValueError(f"--host must be a loopback IP address, got {self.host!r}") from None
        if not addr.is_loopback:
            raise ValueError(f"--host must be loopback (127.0.0.0/8 or ::1), got {self.host}")
        for name in ("binance_port", "hyperliquid_port"):
            port = getattr(self, name)
            if not 0 <= port <= 65535:
                raise ValueError(f"{name} must be 0..65535, got {port}")
        if self.binance_port and self.binance_port == self.hyperliquid_port:
            raise ValueError(f"binance_port and hyperliquid_port are both {self.binance_port}")
        for name in ("binance_ping_interval_s", "binance_pong_timeout_s", "binance_max_lifetime_s",
                     "hl_idle_timeout_s", "replay_wait_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("binance_max_incoming_per_s", "binance_max_streams", "hl_max_subscriptions_per_ip",
                     "hl_max_connections_per_ip", "hl_max_connections_total", "hl_max_subscriptions_total",
                     "hl_max_subscription_bytes", "max_message_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for total, per_ip in (("hl_max_connections_total", "hl_max_connections_per_ip"),
                              ("hl_max_subscriptions_total", "hl_max_subscriptions_per_ip")):
            if getattr(self, total) < getattr(self, per_ip):  # one address could never reach its own limit
                raise ValueError(f"{total} ({getattr(self, total)}) must be >= {per_ip} ({getattr(self, per_ip)})")
        if self.hl_max_subscription_bytes > self.max_message_bytes:
            raise ValueError(f"hl_max_subscription_bytes ({self.hl_max_subscription_bytes}) must be <= "
                             f"max_message_bytes ({self.max_message_bytes})")
        for venue, name in (("binance", "binance_fee_tier"), ("hyperliquid", "hl_fee_tier")):
            try:
                fees.tier(venue, getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        if not self.binance_gtd_min_lead_s >= 0:
            raise ValueError(f"binance_gtd_min_lead_s must be >= 0, got {self.binance_gtd_min_lead_s!r}")
        if self.replay is not None and not Path(self.replay).is_file():
            raise ValueError(f"replay file {self.replay} does not exist")
        if self.replay is not None and self.captures:
            raise ValueError("give either a frames file or capture files to replay, not both")
        for capture in self.captures:
            if not Path(capture).is_file():
                raise ValueError(f"capture file {capture} does not exist")
        self.market.validate()
        self.scenario.validate()

    def replace(self, **changes: object) -> EmulatorConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class VenueCounters:
    opened: int = 0
    closed: int = 0
    rejected: int = 0  # handshakes refused with an HTTP status (scenario or bad path)
    tls_failed: int = 0  # handshakes served the rogue certificate
    http_requests: int = 0  # plain HTTP (REST) requests answered on the venue's port
    # requests refused, by the limit's setting name (hl_max_connections_total, hl_max_subscription_bytes, ...) or
    # by what was wrong (invalid_subscription): stats() reports them, so a refusal is never silent
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    # subscriptions acknowledged and never fed, as the venue does for a stream on the route that does not carry it
    # (Binance: "trade on /market"), by stream kind and route: stats() reports them, so the silence is explained
    silent: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def active(self) -> int:
        return self.opened - self.closed


@dataclass
class SharedState:
    """What both servers and the driver share inside one event loop."""

    config: EmulatorConfig
    topics: Topics = field(default_factory=Topics)
    budget: FaultBudget = field(init=False)
    counters: dict[str, VenueCounters] = field(default_factory=lambda: {v: VenueCounters() for v in VENUES})
    # topic key -> current frame, sent to a new subscriber right after its ack (None: nothing yet / replay)
    snapshot: Callable[[str], str | None] = field(default=lambda key: None)
    # the live market model's driver (REST snapshots read its book and tape); None while replaying frames
    market: Any = None

    def __post_init__(self) -> None:
        self.budget = FaultBudget(self.config.scenario)
