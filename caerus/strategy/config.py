"""Strategy configuration: a frozen config struct (caerus.config.ConfigBase) loaded from TOML before anything starts.

Every setting has a default that makes the venue emulator's market fire a few times a minute (jumps of tens of
bps, Hyperliquid trailing by ~100 ms). Load it with ``caerus.config.load_config(StrategyConfig, path, "strategy")``:
a bad file raises ConfigError naming the file and the offending field (``$.entry_bps``), so the CLI prints it and
exits 2 before attaching any segment.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from caerus.config import ConfigBase, ConfigError, NonNegative, Positive


class InstrumentParams(ConfigBase, frozen=True):
    """One instrument's own values (``[instruments.ETH]``); every field left out takes the strategy's default."""

    order_qty: Positive | None = None  # in the instrument's units
    max_position: Positive | None = None
    entry_bps: Positive | None = None
    exit_bps: NonNegative | None = None
    reversal_bps: Positive | None = None
    max_hold_ms: Positive | None = None
    cooldown_ms: NonNegative | None = None
    slippage_bps: NonNegative | None = None
    leader: Literal["binance", "hyperliquid"] | None = None  # which venue leads this instrument


#: the naive/model A/B window when signal = "ab" leaves signal_ab_window_s at 0
AB_DEFAULT_WINDOW_S = 60.0
#: the InstrumentParams fields, each overriding the StrategyConfig field of the same name
OVERRIDABLE = tuple(InstrumentParams.__struct_fields__)


class StrategyConfig(ConfigBase, frozen=True):
    """Latency-arb settings. Prices/thresholds in basis points, times in milliseconds unless named otherwise."""

    # "latency_arb": the real strategy. "bench": fire an IOC on every valid Binance book (OrderReason.BENCH),
    # used by benchmarks/tick_to_decision.py so the measured path is the real process loop.
    mode: Literal["latency_arb", "bench"] = "latency_arb"
    # Which venue leads (per instrument in [instruments.NAME]): entries are taken on the leader's books and the
    # basis is the leader's mid over the lagger's. Orders go to Hyperliquid either way.
    leader: Literal["binance", "hyperliquid"] = "binance"
    strategy_id: Annotated[int, msgspec.Meta(ge=0, le=32767)] = 1  # bits 48-62 of every order id
    order_qty: Positive = 0.001  # BTC per entry order
    max_position: Positive = 0.002  # |position| limit in BTC (entries that would exceed it are blocked)
    # Many instruments: an instrument without its own order_qty sizes each entry to this notional (USD) at its
    # first Hyperliquid book (rounded down to its szDecimals), and its position limit keeps the default ratio
    # max_position / order_qty (entries per direction). Unset: every instrument trades order_qty.
    order_notional: Positive | None = None
    # per-instrument values by the session's instrument name ([instruments.ETH] entry_bps = 8, ...)
    instruments: dict[str, InstrumentParams] = msgspec.field(default_factory=dict)
    entry_bps: Positive = 5.0  # |basis - EWMA| needed to enter
    exit_bps: NonNegative = 1.0  # exit once the deviation (in the position's direction) falls to this
    reversal_bps: Positive = 3.0  # exit at once when the deviation goes this far against the position
    max_hold_ms: Positive = 3000.0  # exit a position held this long
    cooldown_ms: NonNegative = 1000.0  # minimum time between an order and the next entry
    ewma_half_life_s: Positive = 3.0  # half-life of the basis EWMA
    warmup_ms: NonNegative = 1000.0  # no entries until the basis has been tracked this long
    slippage_bps: NonNegative = 2.0  # IOC limit = Hyperliquid touch +- this, rounded away from the touch
    hl_sig_figs: Annotated[int, msgspec.Meta(ge=1, le=10)] = 5  # Hyperliquid price grid (integers always valid)
    hl_max_decimals: Annotated[int, msgspec.Meta(ge=0, le=8)] = 1  # perps: 6 - szDecimals (BTC: 5) = 1
    # order results (EXEC records): an order with no final result this long after it was pushed becomes UNKNOWN
    # (counted at its worst case for the position limit until a result resolves it)
    order_timeout_ms: Positive = 5_000.0
    order_table_size: Annotated[int, msgspec.Meta(ge=2, le=1 << 20)] = 1024  # per-order state slots (power of 2)
    # staleness guards
    max_book_age_ms_binance: Positive = 500.0  # by local receipt (now - t_recv)
    max_book_age_ms_hyperliquid: Positive = 5000.0  # bbo only arrives when the top changes: generous
    max_info_age_ms_hyperliquid: Positive = 2000.0  # t_recv - t_exchange of the Hyperliquid book
    # supervisor
    kill_file: str = ""  # halt (no more orders) once this file exists; "" = no kill file
    flatten_on_halt: bool = False  # on halt, send one FLATTEN IOC closing the position (else: just stop)
    max_errors: Annotated[int, msgspec.Meta(ge=1)] = 10  # halt after this many loop errors ...
    error_window_s: Positive = 60.0  # ... within this many seconds
    housekeeping_ms: Positive = 100.0  # metrics drain, heartbeat, kill-file check period
    # hybrid wait policy: empty polls spun before each sched_yield. Small on purpose: strategy and execution
    # share a core on small machines, and every spin after an order delays the execution's pickup.
    idle_spins: Annotated[int, msgspec.Meta(ge=0)] = 10
    # hybrid wait policy: sched_yield right after pushing an order (after t_decision), so an execution process
    # sharing this core picks it up now instead of after our spins or the rest of our time slice.
    yield_after_order: bool = True
    # Shadow orders (wire.OrderFlags.SHADOW) keep the rare fire path warm: at most one per this many ms, on a
    # Binance book that fired nothing, the strategy builds the order a fire would (guards read, price rounded) and
    # pushes it flagged; execution runs it through risk and the transport's serialisation and signing and drops
    # it before the socket. 0 = off.
    shadow_every_ms: NonNegative = 0.0
    # Measure what the warming buys inside one session: alternate windows of this many seconds with shadows on
    # and off, and record real fires' tick-to-decision per window kind (tick_to_decision_warmed / _unwarmed).
    # 0 = shadows in every window (when shadow_every_ms is set).
    shadow_ab_window_s: NonNegative = 0.0
    # The entry/exit signal: "naive" (basis - EWMA, the rule above) or "model" (a trained model's predicted
    # Hyperliquid move, caerus.strategy.model_signal; its file from `caerus train`, thresholds in the file).
    # "ab": the in-session A/B of the two -- windows of signal_ab_window_s alternate the naive rule (first) and
    # the model; the model's features are updated on every book in both, and each order carries its arm
    # (wire.OrderFlags.MODEL), so the report compares the arms' tick-to-decision and paper markouts.
    signal: Literal["naive", "model", "ab"] = "naive"
    model: str = ""  # the model file (signal = "model" or "ab"); its feature schema must be this strategy's
    # Pin the model: its sha256 content hash (64 hex digits: the file's "hash", env.json's model.hash), compared
    # with the hash the loader computes from the content. A file with other content stops the strategy (and
    # `caerus session`) before anything starts, in one line naming both. "" = no pin.
    model_sha256: Annotated[str, msgspec.Meta(pattern="^([0-9a-fA-F]{64})?$")] = ""
    # A/B window length (s); with signal = "model" a non-zero value makes it "ab". 0 with "ab" = 60 s.
    signal_ab_window_s: NonNegative = 0.0

    def check(self) -> None:
        """Cross-field rules msgspec cannot express; raises ConfigError naming the fields."""
        super().check()
        if self.exit_bps >= self.entry_bps:
            raise ConfigError(f"exit_bps ({self.exit_bps}) must be below entry_bps ({self.entry_bps})")
        if self.order_table_size & (self.order_table_size - 1):
            raise ConfigError(f"order_table_size must be a power of two, got {self.order_table_size}")
        if self.shadow_ab_window_s and not self.shadow_every_ms:
            raise ConfigError("shadow_ab_window_s alternates shadow orders on and off: set shadow_every_ms too")
        if self.shadow_every_ms and self.mode != "latency_arb":
            raise ConfigError(f"shadow_every_ms warms a rare fire path: mode {self.mode!r} fires on every book")
        if self.signal != "naive" and not self.model:
            raise ConfigError(f"signal = \"{self.signal}\" needs model = PATH (a model file from `caerus train`)")
        if self.model_sha256 and self.signal == "naive":
            raise ConfigError("model_sha256 pins a model file: set signal = \"model\" or \"ab\" and model = PATH")
        if self.signal != "naive" and self.mode != "latency_arb":
            raise ConfigError(f"signal = \"{self.signal}\" is a latency_arb signal: mode {self.mode!r} fires on "
                              "every book")
        if self.signal_ab_window_s and self.signal == "naive":
            raise ConfigError("signal_ab_window_s alternates the naive rule and a model: set signal = \"ab\" and "
                              "model = PATH")
        if self.order_qty > self.max_position:
            raise ConfigError(f"order_qty ({self.order_qty}) must not exceed max_position ({self.max_position})")
        for name in self.instruments:
            p = self.for_instrument(name)
            if p.exit_bps >= p.entry_bps:
                raise ConfigError(f"instruments.{name}: exit_bps ({p.exit_bps}) must be below entry_bps "
                                  f"({p.entry_bps})")
            if p.order_qty > p.max_position:
                raise ConfigError(f"instruments.{name}: order_qty ({p.order_qty}) must not exceed max_position "
                                  f"({p.max_position})")

    @property
    def uses_model(self) -> bool:
        """The strategy loads a model file (signal "model" or "ab"; never in bench mode)."""
        return self.signal != "naive" and self.mode != "bench"

    @property
    def ab_window_ns(self) -> int:
        """The naive/model A/B window in ns, 0 when the strategy trades one signal throughout."""
        if not self.uses_model or (self.signal == "model" and not self.signal_ab_window_s):
            return 0
        return int((self.signal_ab_window_s or AB_DEFAULT_WINDOW_S) * 1e9)

    def for_instrument(self, name: str) -> StrategyConfig:
        """This config with instrument ``name``'s own values in place of the defaults."""
        own = self.instruments.get(name)
        if own is None:
            return self
        changes = {f: getattr(own, f) for f in OVERRIDABLE if getattr(own, f) is not None}
        return msgspec.structs.replace(self, **changes)

