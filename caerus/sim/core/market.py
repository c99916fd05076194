"""Seeded market model for the venue emulator (N instruments): pure, deterministic, testable without sockets.

Each emulated instrument (``MarketConfig.symbols``, names from caerus.sim.core.catalogue; BTC alone by default) has a
"fair" price that drives both venues:

* Fair price = start price x exp(common factor path + the instrument's own path). The factor (one diffusion plus
  jumps, shared by every instrument) carries ``factor_share`` of each instrument's diffusion variance and of its
  jumps; the rest is the instrument's own (independent) diffusion and jumps. So two instruments' log-returns
  correlate by about ``factor_share``. With one instrument the whole path is the factor: the BTC-only model
  draw for draw.
* Binance USD-M leads. Each symbol's top of book changes at its own bursty Poisson times (base rate
  ``binance_rate_hz`` updates per second per symbol, occasionally multiplied during short rate bursts), in
  batches of updates sent back to back (``binance_batch_alpha``: sizes with a power-law tail, as real bookTicker
  streams arrive), on its own tick with quantities on its own step (the catalogue's). Every change is a
  bookTicker event with an update id increasing per symbol (ids jump, as on the real venue).
* Hyperliquid follows: ONE block clock for every coin (~70 ms, jittered); a block's top of book for a coin is
  built on Hyperliquid's grid for the coin (5 significant figures, at most ``6 - szDecimals`` decimals, integers
  always allowed). The model yields one ``HlBlock`` per coin per block; ``changed`` says whether that coin's top
  (price, size or order count) changed, i.e. whether the real ``bbo`` channel would send it. How the price follows:
  with every stochastic setting off (``MarketConfig()``, the ``fixed-lag`` preset) it is the coin's fair price as
  it was ``hl_lag_ms`` earlier (per-coin overrides allowed); otherwise caerus.sim.core.follower builds it (a lag drawn
  per move, partial catch-up, Hyperliquid's own moves, fading quotes, arbitrage pulling the basis back).
* Jumps of ``jump_bps_min..jump_bps_max`` basis points arrive ``jumps_per_min`` times a minute on average per
  instrument; ``flicker_share`` of Binance's jump-sized moves are flickers that revert and never reach Hyperliquid.
* Volatility regimes (caerus.sim.core.regime): a calm/volatile Markov chain scales diffusion and every jump rate.

Settings: caerus.sim.core.market_config (one frozen dataclass, TOML presets in caerus/sim/markets); equations and
estimators: docs/research.md ("Market model").

Events carry ``symbol``: the instrument's index in ``cfg.symbols``. Event times are offsets in nanoseconds from
the session start. The emulator sends each event at its scheduled time and stamps the scheduled time as the
exchange time, so a late send shows up as information age instead of vanishing (no coordinated omission).

Random streams: the factor draws from ``Random(seed)``, the first instrument's Binance process from
``Random(seed * 1_000_003 + 1)`` and the block clock plus the first coin's sizes from ``Random(seed * 1_000_003 +
2)`` (the BTC-only model's streams, so ``symbols=("BTC",)`` gives exactly its events); every other stream is
seeded from the seed and the instrument's name, and each mechanism added by issue 27 (regime, flickers, follower)
draws from a stream of its own, so with them off every event is the fixed-lag model's.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from caerus.sim.core.catalogue import BY_NAME, ListedInstrument
from caerus.sim.core.follower import Follower
from caerus.sim.core.market_config import MarketConfig
from caerus.sim.core.regime import Regime

__all__ = ["BinanceQuote", "HlBlock", "HlLevel", "MarketConfig", "MarketModel", "batch_mean", "binance_update_times",
           "hl_tick"]

BINANCE_TICK = 0.1  # BTCUSDT perpetual price tick (USD)
BINANCE_QTY_STEP = 0.001  # BTCUSDT perpetual quantity step (BTC)
HL_SZ_DECIMALS = 5  # Hyperliquid BTC szDecimals
HL_MAX_DECIMALS = 6  # perps: price decimals <= 6 - szDecimals
HL_SIG_FIGS = 5
#: sizes are drawn in BTC-equivalent notional: an instrument's sizes scale by this over its start price
REFERENCE_PRICE = 95_000.0


@dataclass(frozen=True, slots=True)
class BinanceQuote:
    """One Binance bookTicker event (top of book changed) of instrument ``symbol`` (index in cfg.symbols)."""

    t_ns: int  # scheduled time, offset from session start
    update_id: int
    bid: float
    bid_qty: float
    ask: float
    ask_qty: float
    symbol: int = 0


@dataclass(frozen=True, slots=True)
class HlLevel:
    px: float
    sz: float
    n: int


@dataclass(frozen=True, slots=True)
class HlBlock:
    """One Hyperliquid block's top of book for coin ``symbol`` (index in cfg.symbols). ``changed``: the top
    differs from the previous block's (the bbo channel sends it). Every coin of a block has the same time/index."""

    t_ns: int  # block time, offset from session start
    index: int
    bid: HlLevel | None
    ask: HlLevel | None
    changed: bool
    symbol: int = 0


def hl_tick(price: float, sz_decimals: int = HL_SZ_DECIMALS) -> float:
    """Hyperliquid's price increment at ``price`` for a coin with ``sz_decimals``: 5 significant figures, at most
    ``6 - szDecimals`` decimals (BTC: 1), and integer prices are always valid (so never coarser than 1 USD)."""
    if price <= 0:
        raise ValueError(f"price must be > 0, got {price!r}")
    exponent = math.floor(math.log10(price)) - (HL_SIG_FIGS - 1)
    return min(1.0, max(10.0**exponent, 10.0 ** -(HL_MAX_DECIMALS - sz_decimals)))


def round_to(value: float, step: float) -> float:
    """``value`` rounded to the nearest multiple of ``step`` with float noise removed."""
    decimals = max(0, -math.floor(math.log10(step)) + 1)
    return round(round(value / step) * step, decimals)


def fmt_price(value: float, step: float) -> str:
    """Decimal text for a price on a ``step`` grid (fixed decimals, as venues print them)."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{value:.{decimals}f}"


def _no_jump() -> int:
    return 1 << 62


class _Factor:
    """The common driver: diffusion increments and jump multipliers, drawn at every time any instrument samples.

    Increments are kept (not summed into a level) so an instrument sampling after exactly one factor step applies
    exactly that draw: with one instrument this is the BTC-only model's path, float for float."""

    def __init__(self, rng: random.Random, sigma_per_sqrt_s: float, jumps_per_min: float, cfg: MarketConfig,
                 regime: Regime) -> None:
        self._rng = rng
        self._regime = regime
        self._sigma_per_sqrt_s = sigma_per_sqrt_s
        self._jumps_per_min = jumps_per_min
        self._cfg = cfg
        self.t_ns = 0
        self.base = 0  # step number of increments[0] (older ones were dropped)
        self.increments: list[float] = []
        self.jumps: list[tuple[int, float]] = []  # (steps taken when it happened, multiplier)
        self.jump_base = 0
        self._next_jump_ns = self._draw_jump_gap(0)

    @property
    def steps(self) -> int:
        return self.base + len(self.increments)

    def _draw_jump_gap(self, now_ns: int) -> int:
        if self._jumps_per_min <= 0:
            return _no_jump()
        return now_ns + int(self._rng.expovariate(self._jumps_per_min / 60.0) * 1e9)

    def advance(self, t_ns: int) -> int:
        """Sample the factor at ``t_ns`` (never before the last sample); returns the steps taken so far."""
        if t_ns > self.t_ns:
            var_s = self._regime.var_s(self.t_ns, t_ns)  # (t_ns - self.t_ns) / 1e9 without regimes
            self.increments.append(self._rng.gauss(0.0, self._sigma_per_sqrt_s * math.sqrt(var_s)))
            self.t_ns = t_ns
        clock = self._regime.jump_ns(t_ns)  # t_ns without regimes
        while clock >= self._next_jump_ns:
            size_bps = self._rng.uniform(self._cfg.jump_bps_min, self._cfg.jump_bps_max)
            self.jumps.append((self.steps, 1.0 + (size_bps if self._rng.random() < 0.5 else -size_bps) / 1e4))
            self._next_jump_ns = self._draw_jump_gap(self._next_jump_ns)
        return self.steps

    def forget(self, steps: int, jumps: int) -> None:
        """Drop increments before step ``steps`` and jumps before jump number ``jumps`` (every path consumed them)."""
        if steps - self.base > 4096:
            del self.increments[: steps - self.base]
            self.base = steps
        if jumps - self.jump_base > 256:
            del self.jumps[: jumps - self.jump_base]
            self.jump_base = jumps


class SampledPath:
    """A price path as sampled so far, at increasing times: what a Hyperliquid coin looks up ``lag`` in the past."""

    __slots__ = ("_prices", "_times")

    def __init__(self, price: float) -> None:
        self._times: list[int] = [0]
        self._prices: list[float] = [price]

    def at(self, t_ns: int) -> float:
        """Price at or before ``t_ns`` as already sampled (the latest sample not after ``t_ns``)."""
        i = bisect.bisect_right(self._times, t_ns) - 1
        return self._prices[max(i, 0)]

    def forget_before(self, t_ns: int) -> None:
        """Drop samples older than ``t_ns`` (keeps memory flat in long sessions)."""
        i = bisect.bisect_right(self._times, t_ns) - 1
        if i > 1000:
            del self._times[:i]
            del self._prices[:i]


class FairPrice(SampledPath):
    """One instrument's latent price path: the factor's moves plus its own diffusion and jumps, sampled on demand
    at increasing times. The path is recorded so the Hyperliquid side can look it up ``lag`` in the past."""

    def __init__(self, start_price: float, factor: _Factor, rng: random.Random, sigma_per_sqrt_s: float,
                 jumps_per_min: float, cfg: MarketConfig, regime: Regime) -> None:
        self._factor = factor
        self._regime = regime
        self._rng = rng
        self._sigma_per_sqrt_s = sigma_per_sqrt_s
        self._jumps_per_min = jumps_per_min
        self._cfg = cfg
        super().__init__(start_price)
        self.step = factor.steps  # factor steps applied so far
        self.jump = factor.jump_base + len(factor.jumps)  # factor jumps applied so far
        self._next_jump_ns = self._draw_jump_gap(0)

    def _draw_jump_gap(self, now_ns: int) -> int:
        if self._jumps_per_min <= 0:
            return _no_jump()
        return now_ns + int(self._rng.expovariate(self._jumps_per_min / 60.0) * 1e9)

    def advance(self, t_ns: int) -> float:
        """Price at ``t_ns`` (must not precede the last sampled time of this path or of the factor)."""
        f = self._factor
        steps = f.advance(t_ns)
        last_t = self._times[-1]
        price = self._prices[-1]
        own = t_ns > last_t and self._sigma_per_sqrt_s > 0
        if steps > self.step or own:
            move = sum(f.increments[self.step - f.base : steps - f.base])
            if own:
                var_s = self._regime.var_s(last_t, t_ns)  # (t_ns - last_t) / 1e9 without regimes
                move += self._rng.gauss(0.0, self._sigma_per_sqrt_s * math.sqrt(var_s))
            price *= math.exp(move)
        self.step = steps
        jumps = f.jump_base + len(f.jumps)
        for _, mult in f.jumps[self.jump - f.jump_base :]:
            price *= mult
        self.jump = jumps
        clock = self._regime.jump_ns(t_ns)
        while clock >= self._next_jump_ns:
            size_bps = self._rng.uniform(self._cfg.jump_bps_min, self._cfg.jump_bps_max)
            price *= 1.0 + (size_bps if self._rng.random() < 0.5 else -size_bps) / 1e4
            self._next_jump_ns = self._draw_jump_gap(self._next_jump_ns)
        self._times.append(t_ns)
        self._prices.append(price)
        return price


class _Flicker:
    """Binance's noise that reverts: moves of a jump's size (the same uniform law) that Binance's quotes show for an
    Exp(``flicker_ms``) lifetime and then drop, never part of the fair price (Hyperliquid never follows them).
    Arrivals are Poisson on the regime's jump clock at ``jumps_per_min * share / (1 - share)``, so ``flicker_share``
    of Binance's jump-sized moves are flickers."""

    __slots__ = ("_hi", "_life_ns", "_lo", "_next", "_rate", "_regime", "_rng", "mult", "until")

    def __init__(self, cfg: MarketConfig, rng: random.Random, regime: Regime) -> None:
        self._rng, self._regime = rng, regime
        share = cfg.flicker_share
        self._rate = cfg.jumps_per_min * share / (1.0 - share) / 60e9  # per ns of the jump clock
        self._life_ns = cfg.flicker_ms * 1e6
        self._lo, self._hi = cfg.jump_bps_min, cfg.jump_bps_max
        self._next = rng.expovariate(self._rate) if self._rate > 0 else math.inf
        self.mult = 1.0  # the quote's price multiplier now
        self.until = -1  # the current flicker ends here (ns)

    def at(self, t_ns: int) -> float:
        """The multiplier Binance's quote at ``t_ns`` carries (1: no flicker)."""
        if t_ns >= self.until:
            self.mult = 1.0
        clock = self._regime.jump_ns(t_ns)
        if clock >= self._next:
            rng = self._rng
            size = rng.uniform(self._lo, self._hi)
            self.mult = 1.0 + (size if rng.random() < 0.5 else -size) / 1e4
            self.until = t_ns + max(1, int(rng.expovariate(1.0) * self._life_ns))
            while clock >= self._next:  # one flicker at a time: arrivals during a gap in quotes merge
                self._next += rng.expovariate(self._rate)
        return self.mult


def batch_mean(alpha: float, most: int) -> float:
    """E[N] of the batch law P(N >= k) = k^-alpha for k <= ``most`` (0 beyond): sum of k^-alpha, k = 1..most."""
    return math.fsum(k ** -alpha for k in range(1, most + 1))


def batch_size(rng: random.Random, alpha: float, most: int) -> int:
    """One batch's update count: floor(U^(-1/alpha)), U uniform in (0, 1], capped at ``most``."""
    return min(most, int((1.0 - rng.random()) ** (-1.0 / alpha)))


class _BinanceProcess:
    """One symbol's bookTicker process: bursty Poisson times of batches of updates (one update each without
    batches), then each quote's top on the symbol's grid.

    Batches (``binance_batch_alpha`` > 0) draw their sizes and inner gaps from a stream of their own (``batch_rng``),
    and batch starts use the rate-burst draws the model always made, so with batches off every draw is the model's
    before them."""

    def __init__(self, cfg: MarketConfig, inst: ListedInstrument, index: int, rng: random.Random,
                 flicker: _Flicker | None = None, batch_rng: random.Random | None = None) -> None:
        self.cfg, self.index, self.rng = cfg, index, rng
        self.tick, self.step = float(inst.tick), float(inst.step)
        self.scale = REFERENCE_PRICE / inst.start_price  # sizes in BTC-equivalent notional
        self.update_id = 5_000_000_000 + rng.randrange(1_000_000)
        self.burst_until = -1
        self.t_ns = 0
        self.flicker = flicker
        self.batch_rng = batch_rng if cfg.binance_batch_alpha > 0 else None
        # batches start at binance_rate_hz / E[N], so binance_rate_hz stays updates per second
        self.start_rate_hz = cfg.binance_rate_hz / (batch_mean(cfg.binance_batch_alpha, cfg.binance_batch_max)
                                                    if self.batch_rng is not None else 1.0)
        self.batch_left = 0  # updates of the current batch still to come
        self.batch_gap_s = cfg.binance_batch_gap_us / 1e6

    def next_time(self) -> int:
        cfg, rng, batch = self.cfg, self.rng, self.batch_rng
        if batch is not None and self.batch_left > 0:
            self.batch_left -= 1
            self.t_ns += max(1, int(batch.expovariate(1.0) * self.batch_gap_s * 1e9))
            return self.t_ns
        rate = self.start_rate_hz * (cfg.burst_multiplier if self.t_ns < self.burst_until else 1.0)
        gap_s = rng.expovariate(rate)
        if self.t_ns >= self.burst_until and rng.random() < cfg.burst_prob_per_s * gap_s:
            self.burst_until = self.t_ns + int(cfg.burst_len_s * 1e9)
        self.t_ns += max(1, int(gap_s * 1e9))
        if batch is not None:
            self.batch_left = batch_size(batch, cfg.binance_batch_alpha, cfg.binance_batch_max) - 1
        return self.t_ns

    def quote(self, fair: float) -> BinanceQuote:
        rng, tick = self.rng, self.tick
        if self.flicker is not None:
            fair *= self.flicker.at(self.t_ns)
        bid = math.floor(fair / tick) * tick
        spread_ticks = 1 if rng.random() < 0.9 else rng.randint(2, 4)
        self.update_id += rng.randint(1, 40)
        return BinanceQuote(
            t_ns=self.t_ns,
            update_id=self.update_id,
            bid=round_to(bid, tick),
            bid_qty=self._qty(),
            ask=round_to(bid + spread_ticks * tick, tick),
            ask_qty=self._qty(),
            symbol=self.index,
        )

    def _qty(self) -> float:
        return round_to(max(self.step, self.rng.lognormvariate(0.0, 1.2) * self.scale), self.step)


def binance_update_times(cfg: MarketConfig, duration_s: float, seed: int = 1) -> list[int]:
    """The update times (ns) of one symbol's Binance process over ``duration_s``, prices not drawn: the law
    ``MarketModel.events()`` schedules BTC's quotes with under ``cfg``'s arrival settings (rate, rate bursts,
    batches), from streams seeded by ``seed`` -- the same law, not the same draws as a full run (there the process's
    stream also draws the quotes). For fitting the arrival settings by simulation (caerus.research.calibrate)."""
    if not duration_s > 0:
        raise ValueError(f"duration must be > 0 s, got {duration_s!r}")
    cfg.validate()
    proc = _BinanceProcess(cfg, BY_NAME["BTC"], 0, random.Random(f"caerus-sim:{seed}:times"), None,
                           random.Random(f"caerus-sim:{seed}:times:batch"))
    end = int(duration_s * 1e9)
    out: list[int] = []
    t_ns = proc.next_time()
    while t_ns < end:
        out.append(t_ns)
        t_ns = proc.next_time()
    return out


class PricePath(Protocol):
    """What a Hyperliquid coin reads of the price it follows: the model's fair price, or a replayed mid
    (caerus.sim.core.replay_market.ObservedPath)."""

    def at(self, t_ns: int) -> float: ...

    def forget_before(self, t_ns: int) -> None: ...


class HlCoin:
    """One coin's Hyperliquid top, rebuilt each block: from its fair price ``lag`` earlier (the fixed-lag model), or
    from its :class:`caerus.sim.core.follower.Follower` (stochastic lag, partial catch-up, own moves)."""

    def __init__(self, cfg: MarketConfig, inst: ListedInstrument, index: int, rng: random.Random,
                 follower: Follower | None = None) -> None:
        self.cfg, self.index, self.rng = cfg, index, rng
        self.sz_decimals = inst.sz_decimals
        self.scale = REFERENCE_PRICE / inst.start_price
        self.lag_ns = int(cfg.lag_ms(inst.name) * 1e6)
        self.prev: tuple[HlLevel | None, HlLevel | None] = (None, None)
        self.follower = follower

    def block(self, t_ns: int, index: int, fair: PricePath) -> HlBlock:
        cfg, rng = self.cfg, self.rng
        if self.follower is None:
            px = hi = fair.at(t_ns - self.lag_ns)
            fair.forget_before(t_ns - self.lag_ns - 10_000_000_000)
        else:
            px, hi = self.follower.touch_at(t_ns)
            fair.forget_before(t_ns - 10_000_000_000)  # the follower keeps what it needs; the path is not read
        tick = hl_tick(px, self.sz_decimals)
        bid_px = round_to(math.floor(px / tick) * tick, tick)
        ask_px = round_to(bid_px + tick, tick)
        if hi != px:  # a faded ask: at least one tick above the bid, on the grid
            ask_px = max(ask_px, round_to(math.floor(hi / tick) * tick + tick, tick))
        bid, ask = self.prev
        if bid is None or bid.px != bid_px or rng.random() < cfg.hl_size_change_prob:
            bid = HlLevel(bid_px, self._size(), rng.randint(1, 12))
        if ask is None or ask.px != ask_px or rng.random() < cfg.hl_size_change_prob:
            ask = HlLevel(ask_px, self._size(), rng.randint(1, 12))
        changed = (bid, ask) != self.prev
        self.prev = (bid, ask)
        return HlBlock(t_ns=t_ns, index=index, bid=bid, ask=ask, changed=changed, symbol=self.index)

    def _size(self) -> float:
        d = self.sz_decimals
        return round(max(10.0**-d, self.rng.lognormvariate(-0.5, 1.3) * self.scale), d)


class MarketModel:
    """Merged, time-ordered stream of every instrument's Binance quotes and Hyperliquid block tops (``events()``),
    fully seeded."""

    def __init__(self, cfg: MarketConfig | None = None) -> None:
        self.cfg = cfg or MarketConfig()
        self.cfg.validate()
        self.instruments = self.cfg.instruments()
        # Separate streams for venue microstructure so adding a field to one does not shift the other.
        self._rng = random.Random(self.cfg.seed)
        self._bn_rng = random.Random(self.cfg.seed * 1_000_003 + 1)
        self._hl_rng = random.Random(self.cfg.seed * 1_000_003 + 2)
        # The first instrument's per-venue streams, by the name _stream is asked for (the BTC-only model's streams).
        self._first_streams = {"binance": self._bn_rng, "hyperliquid": self._hl_rng}

    def _stream(self, k: int, inst: ListedInstrument, what: str) -> random.Random:
        """The first instrument keeps the BTC-only model's streams; the others get their own per name."""
        if k == 0 and what in self._first_streams:
            return self._first_streams[what]
        return random.Random(f"caerus-sim:{self.cfg.seed}:{inst.name}:{what}")

    def _start(self, inst: ListedInstrument) -> float:
        return self.cfg.start_price if inst.name == "BTC" else inst.start_price

    def _paths(self, regime: Regime) -> tuple[_Factor, list[FairPrice]]:
        cfg = self.cfg
        share = 1.0 if len(self.instruments) == 1 else cfg.factor_share  # one instrument: the path is the factor
        sigma = cfg.annual_vol / math.sqrt(365.0 * 86400.0)
        factor = _Factor(self._rng, sigma * math.sqrt(share), cfg.jumps_per_min * share, cfg, regime)
        paths = []
        for k, inst in enumerate(self.instruments):
            paths.append(FairPrice(self._start(inst), factor, self._stream(k, inst, "idio"),
                                   sigma * math.sqrt(1.0 - share), cfg.jumps_per_min * (1.0 - share), cfg, regime))
        return factor, paths

    def _block_times(self) -> Iterator[int]:
        cfg, rng = self.cfg, self._hl_rng
        t_ns = 0
        while True:
            t_ns += int((cfg.hl_block_ms + rng.uniform(-cfg.hl_block_jitter_ms, cfg.hl_block_jitter_ms)) * 1e6)
            yield t_ns

    def events(self) -> Iterator[BinanceQuote | HlBlock]:
        """Every Binance quote and, per block, every coin's top (``changed`` tells whether bbo fires), time-ordered
        (a block before a quote at the same time; a block's coins in ``cfg.symbols`` order).

        An instrument's fair price is sampled when its quote is due (and, for a coin Binance does not list, at each
        block), so every sample is in time order across instruments and a block's look-up ``hl_lag_ms`` in the past
        reads a settled path: the model never needs the future."""
        cfg = self.cfg
        # New mechanisms draw from streams of their own, so with them off every other draw is the fixed-lag model's.
        regime = Regime(cfg, random.Random(f"caerus-sim:{cfg.seed}:regime"))
        factor, paths = self._paths(regime)
        # followers[k]: instrument k's stochastic Hyperliquid price (None: fixed lag, or not listed there)
        followers: list[Follower | None] = [None] * len(self.instruments)
        if not cfg.fixed_follower:
            for k, inst in enumerate(self.instruments):
                if inst.hl_asset is not None:
                    followers[k] = Follower(cfg, inst.name, self._start(inst), self._stream(k, inst, "follower"),
                                            regime)
        procs = [_BinanceProcess(cfg, inst, k, self._stream(k, inst, "binance"),
                                 _Flicker(cfg, self._stream(k, inst, "flicker"), regime)
                                 if cfg.flicker_share > 0 else None,
                                 self._stream(k, inst, "batch") if cfg.binance_batch_alpha > 0 else None)
                 for k, inst in enumerate(self.instruments) if inst.binance_symbol is not None]
        coins = [HlCoin(cfg, inst, k, self._stream(k, inst, "hyperliquid"), followers[k])
                 for k, inst in enumerate(self.instruments) if inst.hl_asset is not None]
        hl_only = [(paths[c.index], followers[c.index]) for c in coins
                   if self.instruments[c.index].binance_symbol is None]
        # (time, 0 = block / 1 = quote, position in procs): blocks win ties, as they always did
        heap: list[tuple[int, int, int]] = [(p.next_time(), 1, i) for i, p in enumerate(procs)]
        block_times = self._block_times() if coins else None
        if block_times is not None:
            heap.append((next(block_times), 0, 0))
        heapq.heapify(heap)
        block_index = 0
        sampled = 0
        while heap:
            t_ns, kind, i = heap[0]
            if kind == 1:
                p = procs[i]
                fair = paths[p.index].advance(t_ns)
                follower = followers[p.index]
                if follower is not None:
                    follower.observe(t_ns, fair)
                q = p.quote(fair)
                heapq.heapreplace(heap, (p.next_time(), 1, i))
                yield q
            else:
                block_index += 1
                for path, follower in hl_only:
                    fair = path.advance(t_ns)
                    if follower is not None:
                        follower.observe(t_ns, fair)
                blocks = [c.block(t_ns, block_index, paths[c.index]) for c in coins]
                assert block_times is not None
                heapq.heapreplace(heap, (next(block_times), 0, 0))
                yield from blocks
            sampled += 1
            if sampled % 1024 == 0:
                factor.forget(min(p.step for p in paths), min(p.jump for p in paths))


def depth_levels(best: float, step: float, side: int, n: int, seed: int) -> list[tuple[float, float]]:
    """``n`` synthetic price levels from ``best`` outward (side +1 asks up, -1 bids down), sizes seeded."""
    rng = random.Random(seed)
    levels: list[tuple[float, float]] = []
    px = best
    for _ in range(n):
        levels.append((round_to(px, step), round_to(max(step, rng.lognormvariate(0.0, 1.0)), BINANCE_QTY_STEP)))
        px += side * step * (1 if rng.random() < 0.7 else rng.randint(2, 3))
    return levels
