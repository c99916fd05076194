"""Execution engine configuration (risk limits, paper trading, supervisor): frozen config structs from TOML.

Load it with ``caerus.config.load_config(ExecutionConfig, path, "execution")``: a bad file raises ConfigError
naming the file and the field (``$.risk.max_order_qty``) so the CLI exits 2 before it creates or attaches anything.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from caerus import fees
from caerus.config import ConfigBase, ConfigError, NonNegative, Positive

__all__ = ["CEILINGED", "HARD_MAX_BOOK_AGE_MS", "HARD_MAX_ORDERS_PER_S", "HARD_MAX_ORDER_AGE_MS",
           "HARD_MAX_ORDER_NOTIONAL", "HARD_MAX_POSITION", "HARD_MAX_POSITION_NOTIONAL", "HARD_MAX_TOTAL_NOTIONAL",
           "HARD_PRICE_BAND_BPS", "ExecutionConfig", "InstrumentLimits", "PaperConfig", "RiskConfig"]

# Hard ceilings, in code on purpose: a config file may lower a limit, never lift it above these (a config above
# one is a ConfigError naming both values). Changing one is a reviewed code change, not an edit on a host. The
# ceiling of [risk] field ``f`` is ``HARD_<F>`` here, and ``f`` is listed in CEILINGED: one definition each.
HARD_MAX_ORDER_NOTIONAL = 25_000.0  # USD per order (px * qty)
HARD_MAX_POSITION = 0.25  # BTC, |projected position|
HARD_MAX_ORDERS_PER_S = 100  # accepted orders in any one-second window
HARD_MAX_POSITION_NOTIONAL = 25_000.0  # USD, |projected position| * price, per instrument
HARD_MAX_TOTAL_NOTIONAL = 100_000.0  # USD, the sum of that over every instrument
# 5 %: Binance's own percent-price filter on BTC perps is of this order; a band wider than that is no fat-finger
# guard for an IOC crossing the spread.
HARD_PRICE_BAND_BPS = 500.0
# A target-venue book older than 5 s prices nothing (the strategy's own Hyperliquid default is 5 s too: bbo only
# arrives when the top changes).
HARD_MAX_BOOK_AGE_MS = 5_000.0
# An order decided more than a second before pickup (or that far in the future) is a replay or a stuck queue.
HARD_MAX_ORDER_AGE_MS = 1_000.0
#: the [risk] fields with a hard ceiling (``HARD_<FIELD>``)
CEILINGED = ("max_order_notional", "max_position", "max_position_notional", "max_total_notional", "max_orders_per_s",
             "price_band_bps", "max_book_age_ms", "max_order_age_ms")


class InstrumentLimits(ConfigBase, frozen=True):
    """One instrument's own size limits (``[risk.instruments.ETH]``), in its own units."""

    max_order_qty: Positive
    max_position: Positive


class RiskConfig(ConfigBase, frozen=True):
    """Pre-trade checks, in the order they run: kill switch, size, notional, position, rate, book, price band.

    Size limits are in an instrument's own units: ``max_order_qty`` and ``max_position`` are the first
    instrument's (BTC in every default session), ``[risk.instruments.NAME]`` gives another instrument its own;
    an instrument with neither is bounded by the notional limits alone. Notional limits (USD) hold for every
    instrument, and ``max_total_notional`` and ``max_orders_per_s`` for all of them together.
    """

    max_order_qty: Positive = 0.01  # BTC per order (the first instrument)
    max_order_notional: Positive = 2_500.0  # USD per order (px * qty); ceiling HARD_MAX_ORDER_NOTIONAL
    max_position: Positive = 0.01  # |position| in BTC if every accepted or resting order filled in full
    # per instrument: |projected position| * the price of the order that moves it; ceiling
    # HARD_MAX_POSITION_NOTIONAL
    max_position_notional: Positive = 10_000.0
    max_total_notional: Positive = 25_000.0  # the sum of that over every instrument; ceiling HARD_MAX_TOTAL_NOTIONAL
    instruments: dict[str, InstrumentLimits] = msgspec.field(default_factory=dict)
    max_orders_per_s: Annotated[int, msgspec.Meta(ge=1)] = 20  # sliding one-second window
    price_band_bps: Positive = 50.0  # |limit - target venue mid| / mid; ceiling HARD_PRICE_BAND_BPS
    # Reject (NO_BOOK) when the target venue has no valid, fresh book. Live transports always require one. With
    # false, an order with no book at all passes the book check, but the price band still applies whenever the
    # venue has a book (even a stale one), and a non-finite price never passes (BAD_PRICE).
    require_book: bool = True
    # a book older than this (by local receipt) counts as no book; ceiling HARD_MAX_BOOK_AGE_MS
    max_book_age_ms: Positive = 5_000.0
    # An order whose t_decision is older than this at pickup (or ahead of the clock by as much) is refused
    # (STALE_ORDER): a replayed or long-queued record is never sent. Ceiling HARD_MAX_ORDER_AGE_MS.
    max_order_age_ms: Positive = 1_000.0

    def check(self) -> None:
        super().check()
        check_ceilings(self)


def ceiling_of(name: str) -> float:
    """The hard ceiling of [risk] field ``name`` (read at call time: tests may patch the constant)."""
    value: float = globals()[f"HARD_{name.upper()}"]
    return value


def check_ceilings(cfg: RiskConfig) -> None:
    """ConfigError when a limit is above its hard ceiling, naming the field, its value and the ceiling."""
    for name in CEILINGED:
        value, ceiling = getattr(cfg, name), ceiling_of(name)
        if not value <= ceiling:  # nan too (a RiskConfig built in code skips the finite check)
            raise ConfigError(f"{name} = {value:.10g} is above the hard ceiling {ceiling:g} (caerus.execution.config."
                              f"HARD_{name.upper()}): config may only lower a limit")


class PaperConfig(ConfigBase, frozen=True):
    """Paper trading: fills against the target venue's book prevailing ``latency_ms`` after the send.

    Fees: every paper fill takes liquidity (IOC), so it pays its venue's taker rate at the configured tier of the
    one schedule the emulator and the backtest charge too (caerus.fees: Binance regular 5.0 bps, Hyperliquid
    tier 0 4.5 bps), unless ``fee_bps`` fixes one rate for every venue."""

    # 0 = fill at once against the latest book, inside send_msg (one EXEC record per order); > 0 = fill against
    # the book prevailing latency_ms later, reported as a second EXEC record (flags & EXEC_FLAG_REPLY).
    latency_ms: NonNegative = 0.0
    fee_bps: NonNegative | None = None  # one fixed taker fee (bps of notional) for every venue; None: the tiers
    binance_fee_tier: Annotated[int, msgspec.Meta(ge=0)] = 0  # Binance VIP level (0 = regular)
    hyperliquid_fee_tier: Annotated[int, msgspec.Meta(ge=0)] = 0  # Hyperliquid 14-day volume tier
    limit_to_top_size: bool = True  # fill at most the top-of-book size (rest of the IOC cancelled: PARTIAL)
    markout_ms: tuple[Positive, ...] = (100.0, 1000.0, 5000.0)  # horizons for fill markouts

    def check(self) -> None:
        super().check()
        for venue in fees.VENUES:
            try:
                fees.tier(venue, getattr(self, f"{venue}_fee_tier"))
            except ValueError as exc:
                raise ConfigError(f"{venue}_fee_tier: {exc}") from None

    def taker_bps(self, venue: str) -> float:
        """The taker fee (bps of notional) a paper fill on ``venue`` ("binance" | "hyperliquid") pays."""
        if self.fee_bps is not None:
            return self.fee_bps
        return fees.taker_bps(venue, getattr(self, f"{venue}_fee_tier"))

    def fee_tier(self, venue: str) -> str | None:
        """The name of the schedule's tier ``venue``'s paper fills pay (None: ``fee_bps`` fixes the rate)."""
        if self.fee_bps is not None:
            return None
        return fees.tier(venue, getattr(self, f"{venue}_fee_tier")).name


class ExecutionConfig(ConfigBase, frozen=True):
    risk: RiskConfig = RiskConfig()
    paper: PaperConfig = PaperConfig()
    kill_file: str = ""  # every order is rejected (KILL_SWITCH) once this file exists
    max_errors: Annotated[int, msgspec.Meta(ge=1)] = 10  # halt after this many loop errors ...
    error_window_s: Positive = 60.0  # ... within this many seconds
    housekeeping_ms: Positive = 100.0
    idle_spins: Annotated[int, msgspec.Meta(ge=0)] = 10  # hybrid wait policy: empty polls before each yield
    max_pending: Annotated[int, msgspec.Meta(ge=1)] = 65_536  # orders awaiting a venue reply, kept for EXEC
    # A sent order with no final reply this long after t_sent becomes UNKNOWN (orders.timed_out): it keeps
    # counting toward the position in full and the transport is asked for its status (never resent).
    reply_timeout_ms: Positive = 5_000.0
    # Live transports: every this many seconds, with nothing in flight, the venue's position is read again and
    # compared with the engine's; a difference halts trading (caerus.execution.reconcile). 0 = never.
    reconcile_interval_s: NonNegative = 10.0
    # Live transports: once trading halts (kill switch, error budget, a venue mismatch), cancel the resting orders
    # and send one reduce-only order per instrument bringing the venue's position to 0 (caerus.execution.unwind).
    # Off by default: a halt otherwise leaves the position as it is for an operator to decide.
    flatten_on_halt: bool = False

    def check(self) -> None:
        super().check()  # nested [risk] / [paper] included, markout_ms too
        if self.risk.max_order_qty > self.risk.max_position:
            raise ConfigError(f"risk.max_order_qty ({self.risk.max_order_qty}) must not exceed "
                              f"risk.max_position ({self.risk.max_position})")
        for name, lim in self.risk.instruments.items():
            if lim.max_order_qty > lim.max_position:
                raise ConfigError(f"risk.instruments.{name}.max_order_qty ({lim.max_order_qty}) must not exceed "
                                  f"its max_position ({lim.max_position})")
        if len(set(self.paper.markout_ms)) != len(self.paper.markout_ms):
            raise ConfigError(f"paper.markout_ms has duplicate horizons: {list(self.paper.markout_ms)}")

