"""The market model's settings: one frozen dataclass, validated at load, and the TOML files that hold them.

``MarketConfig()`` with no arguments is the fixed-lag model (every stochastic mechanism off: Hyperliquid copies
Binance's fair price ``hl_lag_ms`` later, whole). The emulator's default market is the ``default`` preset
(caerus/sim/markets/default.toml): stochastic lead-lag, partial catch-up, Hyperliquid's own moves, Binance flickers
and volatility regimes. ``venue-sim --market NAME|FILE`` loads a preset by name or any TOML file (:func:`load_market`);
a key the file does not set keeps the dataclass default, so a file only turns on what it names.

Every field's comment says which real quantity it stands for; docs/research.md ("Market model") gives the
equations and how each is estimated from captured books.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, cast

from caerus.sim.core.catalogue import BY_NAME, ListedInstrument

#: the preset venue-sim and sessions run when no --market is given
DEFAULT_MARKET = "default"
#: today's model before issue 27: Hyperliquid copies the fair price a fixed lag later
FIXED_LAG = "fixed-lag"
_PRESETS = "caerus.sim.markets"


class MarketFileError(ValueError):
    """A market file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class MarketConfig:
    """Market model settings. Defaults are the fixed-lag model, modest on purpose: this machine has 2 cores."""

    seed: int = 1  # the run's seed: every random stream of the model derives from it
    # -- the fair price (Binance's information) ------------------------------------------------------------------
    start_price: float = 95_000.0  # BTC's start price, USD (other instruments start at their catalogue price)
    annual_vol: float = 0.5  # diffusion volatility of each fair price in the calm regime, per sqrt(year)
    jumps_per_min: float = 6.0  # information jumps per instrument per minute (calm regime)
    jump_bps_min: float = 10.0  # jump sizes: uniform between these (bps of price), sign +-1 at even odds
    jump_bps_max: float = 40.0  # the largest jump, bps
    symbols: tuple[str, ...] = ("BTC",)  # emulated instruments (caerus.sim.core.catalogue names), in event index order
    factor_share: float = 0.6  # share of each instrument's diffusion variance and jumps from the common factor
    # -- volatility regimes: a two-state Markov chain (calm <-> volatile) shared by every instrument -------------
    regime_vol_mult: float = 1.0  # volatile regime: diffusion volatility multiplier (1 and 1: regimes off)
    regime_jump_mult: float = 1.0  # volatile regime: multiplier of every jump rate (information, flickers, own)
    regime_calm_s: float = 300.0  # mean time spent calm before turning volatile (exponential), s
    regime_volatile_s: float = 60.0  # mean length of a volatile spell (exponential), s
    # -- Binance's book --------------------------------------------------------------------------------------------
    binance_rate_hz: float = 75.0  # bookTicker updates per second per symbol outside rate bursts (batches included)
    burst_prob_per_s: float = 0.5  # chance per second that a quote-rate burst starts
    burst_multiplier: float = 4.0  # quote-rate multiplier during a burst
    burst_len_s: float = 0.3  # length of a burst, s
    # Batches: real bookTicker updates come in clusters (several top-of-book changes of one matching-engine event,
    # or of one instant, sent back to back: 58% of USD-M BTCUSDT's frames arrive within 1 ms of the previous one).
    # A batch holds N updates with P(N >= k) = k^-alpha up to binance_batch_max (a discrete Pareto law); batches
    # start at binance_rate_hz / E[N] (so binance_rate_hz stays updates per second), its updates spaced by
    # exponential gaps of mean binance_batch_gap_us. alpha 0: every update alone (the model before batches).
    binance_batch_alpha: float = 0.0
    binance_batch_max: int = 100  # most updates in one batch
    binance_batch_gap_us: float = 100.0  # mean gap between the updates of one batch, us (exponential)
    # Flickers: Binance moves of a jump's size that are not information and revert (a thin top pulled and
    # refilled, a sweep that bounces back); Hyperliquid never follows them.
    flicker_share: float = 0.0  # share of Binance's jump-sized moves that are flickers (0: none)
    flicker_ms: float = 300.0  # mean lifetime of a flicker before Binance's quote reverts (exponential), ms
    # -- Hyperliquid's book ----------------------------------------------------------------------------------------
    hl_block_ms: float = 70.0  # mean block interval, ms (the bbo channel's cadence)
    hl_block_jitter_ms: float = 15.0  # uniform +- jitter of one block interval, ms
    hl_size_change_prob: float = 0.25  # chance a block changes top sizes even when prices stay
    hl_lag_ms: float = 100.0  # median delay before Hyperliquid's book shows a Binance move, ms
    hl_lag_sd_ms: float = 0.0  # standard deviation of that delay (lognormal, drawn per move), ms; 0: fixed lag
    # per-instrument hl_lag_ms (median) overrides: a mapping or (name, ms) pairs; kept as sorted pairs (hashable)
    hl_lag_ms_by_symbol: Mapping[str, float] | tuple[tuple[str, float], ...] = ()
    catch_up: float = 1.0  # share of each Binance move Hyperliquid makes when the move's lag has passed
    catch_up_late: float = 0.0  # share of the remainder (1 - catch_up) that arrives later; the rest never does
    catch_up_late_ms: float = 1000.0  # mean extra delay of that late part after the lag (exponential), ms
    hl_own_jumps_per_min: float = 0.0  # Hyperliquid's own moves (Binance never makes them) per coin per minute
    hl_own_bps_min: float = 4.0  # their sizes: uniform between these, bps, sign +-1 at even odds
    hl_own_bps_max: float = 12.0  # the largest own move, bps
    hl_own_blocks: int = 1  # blocks one own move is spread over (a sweep through the book; 1: all at once)
    # Fading quotes: Hyperliquid's makers watch Binance and move the touch a pending move exposes (the ask for a
    # rise, the bid for a fall) at once by this share of what is still to arrive; the mid still lags.
    hl_fade: float = 0.0
    # Arbitrage pulls Hyperliquid back to Binance: its deviation (own moves and the parts of Binance moves that
    # never arrived) decays with this half-life; 0: never (the deviation is permanent).
    hl_basis_half_life_s: float = 0.0

    def __post_init__(self) -> None:
        lags = self.hl_lag_ms_by_symbol
        pairs = lags.items() if isinstance(lags, Mapping) else lags
        object.__setattr__(self, "hl_lag_ms_by_symbol", tuple(sorted((str(k), float(v)) for k, v in pairs)))
        object.__setattr__(self, "symbols", tuple(self.symbols))

    def instruments(self) -> tuple[ListedInstrument, ...]:
        """The catalogue entries of ``symbols`` (ValueError naming unknown ones)."""
        unknown = [s for s in self.symbols if s not in BY_NAME]
        if unknown:
            raise ValueError(f"market setting symbols: not listed by the emulated venues: "
                             f"{', '.join(map(repr, unknown))} (see caerus/sim/core/catalogue.py)")
        return tuple(BY_NAME[s] for s in self.symbols)

    @property
    def lag_overrides(self) -> tuple[tuple[str, float], ...]:
        """``hl_lag_ms_by_symbol`` as sorted (name, ms) pairs."""
        return cast(tuple[tuple[str, float], ...], self.hl_lag_ms_by_symbol)

    def lag_ms(self, name: str) -> float:
        """Hyperliquid's median lag for instrument ``name`` (its override, else ``hl_lag_ms``)."""
        return dict(self.lag_overrides).get(name, self.hl_lag_ms)

    @property
    def regimes_on(self) -> bool:
        return self.regime_vol_mult != 1.0 or self.regime_jump_mult != 1.0

    @property
    def fixed_follower(self) -> bool:
        """Hyperliquid copies the fair price a fixed lag later, whole (the fixed-lag model's construction)."""
        return (self.hl_lag_sd_ms == 0.0 and self.catch_up == 1.0 and self.hl_own_jumps_per_min == 0.0
                and self.hl_fade == 0.0)

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting."""
        positive = {
            "start_price": self.start_price,
            "binance_rate_hz": self.binance_rate_hz,
            "hl_block_ms": self.hl_block_ms,
            "burst_multiplier": self.burst_multiplier,
            "regime_vol_mult": self.regime_vol_mult,
            "regime_jump_mult": self.regime_jump_mult,
            "regime_calm_s": self.regime_calm_s,
            "regime_volatile_s": self.regime_volatile_s,
            "flicker_ms": self.flicker_ms,
            "catch_up_late_ms": self.catch_up_late_ms,
            "binance_batch_gap_us": self.binance_batch_gap_us,
        }
        for name, value in positive.items():
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"market setting {name} must be > 0, got {value!r}")
        non_negative = {
            "annual_vol": self.annual_vol,
            "burst_prob_per_s": self.burst_prob_per_s,
            "burst_len_s": self.burst_len_s,
            "jumps_per_min": self.jumps_per_min,
            "jump_bps_min": self.jump_bps_min,
            "hl_lag_ms": self.hl_lag_ms,
            "hl_lag_sd_ms": self.hl_lag_sd_ms,
            "hl_block_jitter_ms": self.hl_block_jitter_ms,
            "hl_own_jumps_per_min": self.hl_own_jumps_per_min,
            "hl_own_bps_min": self.hl_own_bps_min,
            "hl_basis_half_life_s": self.hl_basis_half_life_s,
            "binance_batch_alpha": self.binance_batch_alpha,
        }
        for name, value in non_negative.items():
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"market setting {name} must be >= 0, got {value!r}")
        if self.jump_bps_max < self.jump_bps_min:
            raise ValueError(f"market setting jump_bps_max ({self.jump_bps_max}) < jump_bps_min "
                             f"({self.jump_bps_min})")
        if self.hl_own_bps_max < self.hl_own_bps_min:
            raise ValueError(f"market setting hl_own_bps_max ({self.hl_own_bps_max}) < hl_own_bps_min "
                             f"({self.hl_own_bps_min})")
        if self.hl_block_jitter_ms >= self.hl_block_ms:
            raise ValueError(f"market setting hl_block_jitter_ms ({self.hl_block_jitter_ms}) must be < hl_block_ms")
        for name in ("hl_size_change_prob", "catch_up", "catch_up_late", "factor_share", "hl_fade"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"market setting {name} must be in [0, 1], got {value!r}")
        if not 0 <= self.flicker_share < 1:
            raise ValueError(f"market setting flicker_share must be in [0, 1), got {self.flicker_share!r}")
        if not (isinstance(self.binance_batch_max, int) and 1 <= self.binance_batch_max <= 10_000):
            raise ValueError(f"market setting binance_batch_max must be an integer in 1..10000, got "
                             f"{self.binance_batch_max!r}")
        if not (isinstance(self.hl_own_blocks, int) and 1 <= self.hl_own_blocks <= 1000):
            raise ValueError(f"market setting hl_own_blocks must be an integer in 1..1000, got {self.hl_own_blocks!r}")
        if self.hl_lag_sd_ms > 0 and self.hl_lag_ms <= 0:
            raise ValueError("market setting hl_lag_ms must be > 0 when hl_lag_sd_ms > 0 (a lognormal lag)")
        if not self.symbols:
            raise ValueError("market setting symbols must name at least one instrument")
        dup = sorted({s for s in self.symbols if self.symbols.count(s) > 1})
        if dup:
            raise ValueError(f"market setting symbols lists {', '.join(map(repr, dup))} more than once")
        self.instruments()
        for name, lag in self.lag_overrides:
            if name not in self.symbols:
                raise ValueError(f"market setting hl_lag_ms_by_symbol names {name!r}, which is not in symbols")
            if not (lag >= 0 and math.isfinite(lag)):
                raise ValueError(f"market setting hl_lag_ms_by_symbol[{name!r}] must be >= 0, got {lag!r}")
            if self.hl_lag_sd_ms > 0 and lag <= 0:
                raise ValueError(f"market setting hl_lag_ms_by_symbol[{name!r}] must be > 0 when hl_lag_sd_ms > 0")


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(MarketConfig)}


def presets() -> tuple[str, ...]:
    """The preset names shipped in caerus/sim/markets (``--market NAME``)."""
    return tuple(sorted(p.name[:-5] for p in resources.files(_PRESETS).iterdir() if p.name.endswith(".toml")))


def _read(source: str | Path) -> tuple[str, str]:
    """(text, what to call it in errors) of a preset name or a file path."""
    name = str(source)
    if name in presets():
        return resources.files(_PRESETS).joinpath(f"{name}.toml").read_text(), f"market preset {name!r}"
    path = Path(source)
    if not path.is_file():
        raise MarketFileError(f"market file {name}: no such file, and not a preset ({', '.join(presets())})")
    try:
        return path.read_text(), f"market file {name}"
    except OSError as exc:
        raise MarketFileError(f"market file {name}: {exc.strerror or exc}") from None


def _coerce(where: str, key: str, value: object) -> object:
    """``value`` as the type field ``key`` holds (MarketFileError naming the key otherwise)."""
    default = FIELDS[key].default
    if key == "symbols":
        if not (isinstance(value, list) and all(isinstance(s, str) for s in value)):
            raise MarketFileError(f"{where}: setting {key!r} must be a list of instrument names, got {value!r}")
        return tuple(value)
    if key == "hl_lag_ms_by_symbol":
        if not (isinstance(value, dict) and all(_is_number(v) for v in value.values())):
            raise MarketFileError(f"{where}: setting {key!r} must be a table of name = milliseconds, got {value!r}")
        return {str(k): float(v) for k, v in value.items()}
    if isinstance(default, int) and not isinstance(default, bool):
        if not (isinstance(value, int) and not isinstance(value, bool)):
            raise MarketFileError(f"{where}: setting {key!r} must be an integer, got {value!r}")
        return value
    if not _is_number(value):
        raise MarketFileError(f"{where}: setting {key!r} must be a number, got {value!r}")
    return float(cast(float, value))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_market(text: str, where: str = "market file") -> dict[str, object]:
    """The settings a market TOML text holds (keys checked against MarketConfig, values typed), not yet merged."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MarketFileError(f"{where}: not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise MarketFileError(f"{where}: unknown setting {unknown[0]!r} (the settings are MarketConfig's fields, "
                              f"see docs/emulator.md)")
    return {k: _coerce(where, k, v) for k, v in doc.items()}


def load_market(source: str | Path = DEFAULT_MARKET, **overrides: object) -> MarketConfig:
    """The validated MarketConfig of preset ``source`` (a name) or TOML file ``source``, with ``overrides`` (e.g.
    the command line's ``seed`` or ``symbols``; None values ignored) on top. MarketFileError names the file and
    the key of the first problem, range problems included."""
    text, where = _read(source)
    settings = parse_market(text, where)
    settings.update({k: v for k, v in overrides.items() if v is not None})
    try:
        cfg = MarketConfig(**settings)  # type: ignore[arg-type]
        cfg.validate()
    except (TypeError, ValueError) as exc:
        raise MarketFileError(f"{where}: {exc}") from None
    return cfg
