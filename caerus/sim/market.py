"""Seeded BTC market model for the venue emulator: pure, deterministic, testable without sockets.

One "fair" BTC price process drives both venues:

* Binance USD-M BTCUSDT leads. Its top of book changes at bursty Poisson times (base rate ``binance_rate_hz``,
  occasionally multiplied during short bursts), on a 0.1 USD tick with quantities on a 0.001 BTC step. Every
  change is a bookTicker event with an increasing update id (ids jump, as they do on the real venue, because
  the counter is shared by every symbol).
* Hyperliquid BTC follows: blocks come every ~70 ms (jittered); a block's top of book is built from the fair
  price as it was ``hl_lag_ms`` earlier, on Hyperliquid's price grid (5 significant figures, integers always
  allowed: a 1 USD tick from 10k up). A bbo event exists only for blocks whose top (price, size or order count)
  changed, exactly like the real ``bbo`` channel.
* Jumps of ``jump_bps_min..jump_bps_max`` basis points arrive ``jumps_per_min`` times a minute on average, so a
  latency-arb strategy with an entry threshold of a few bps fires a few times per minute: Binance moves first,
  Hyperliquid catches up ``hl_lag_ms`` plus up to one block later.

Event times are offsets in nanoseconds from the session start. The emulator sends each event at its scheduled
time and stamps the scheduled time as the exchange time, so a late send shows up as information age instead of
vanishing (no coordinated omission).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

BINANCE_TICK = 0.1  # BTCUSDT perpetual price tick (USD)
BINANCE_QTY_STEP = 0.001  # BTCUSDT perpetual quantity step (BTC)
HL_SZ_DECIMALS = 5  # Hyperliquid BTC szDecimals
HL_MAX_DECIMALS = 6  # perps: price decimals <= 6 - szDecimals
HL_SIG_FIGS = 5


@dataclass(frozen=True)
class MarketConfig:
    """Market model settings. Defaults are modest on purpose: this machine has 2 cores shared by the fleet."""

    seed: int = 1
    start_price: float = 95_000.0
    annual_vol: float = 0.5  # diffusion volatility of the fair price
    binance_rate_hz: float = 75.0  # mean bookTicker rate outside bursts (~100/s overall with bursts)
    burst_prob_per_s: float = 0.5  # chance per second that a burst starts
    burst_multiplier: float = 4.0  # rate multiplier during a burst
    burst_len_s: float = 0.3
    jumps_per_min: float = 6.0
    jump_bps_min: float = 10.0
    jump_bps_max: float = 40.0
    hl_lag_ms: float = 100.0  # how far Hyperliquid's book trails Binance's fair price
    hl_block_ms: float = 70.0  # mean block interval
    hl_block_jitter_ms: float = 15.0  # uniform +- jitter of one block interval
    hl_size_change_prob: float = 0.25  # chance a block changes top sizes even when prices stay

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting."""
        positive = {
            "start_price": self.start_price,
            "binance_rate_hz": self.binance_rate_hz,
            "hl_block_ms": self.hl_block_ms,
            "burst_multiplier": self.burst_multiplier,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"market setting {name} must be > 0, got {value!r}")
        non_negative = {
            "annual_vol": self.annual_vol,
            "burst_prob_per_s": self.burst_prob_per_s,
            "burst_len_s": self.burst_len_s,
            "jumps_per_min": self.jumps_per_min,
            "jump_bps_min": self.jump_bps_min,
            "hl_lag_ms": self.hl_lag_ms,
            "hl_block_jitter_ms": self.hl_block_jitter_ms,
        }
        for name, value in non_negative.items():
            if not value >= 0:
                raise ValueError(f"market setting {name} must be >= 0, got {value!r}")
        if self.jump_bps_max < self.jump_bps_min:
            raise ValueError(f"jump_bps_max ({self.jump_bps_max}) < jump_bps_min ({self.jump_bps_min})")
        if self.hl_block_jitter_ms >= self.hl_block_ms:
            raise ValueError(f"hl_block_jitter_ms ({self.hl_block_jitter_ms}) must be < hl_block_ms")
        if not 0 <= self.hl_size_change_prob <= 1:
            raise ValueError(f"hl_size_change_prob must be in [0, 1], got {self.hl_size_change_prob!r}")


@dataclass(frozen=True, slots=True)
class BinanceQuote:
    """One Binance bookTicker event (top of book changed)."""

    t_ns: int  # scheduled time, offset from session start
    update_id: int
    bid: float
    bid_qty: float
    ask: float
    ask_qty: float


@dataclass(frozen=True, slots=True)
class HlLevel:
    px: float
    sz: float
    n: int


@dataclass(frozen=True, slots=True)
class HlBlock:
    """One Hyperliquid block's BTC top of book. ``changed``: the top differs from the previous block's."""

    t_ns: int  # block time, offset from session start
    index: int
    bid: HlLevel | None
    ask: HlLevel | None
    changed: bool


def hl_tick(price: float) -> float:
    """Hyperliquid's price increment for BTC at ``price``: 5 significant figures, at most 1 decimal
    (6 - szDecimals), and integer prices are always valid (so never coarser than 1 USD)."""
    if price <= 0:
        raise ValueError(f"price must be > 0, got {price!r}")
    exponent = math.floor(math.log10(price)) - (HL_SIG_FIGS - 1)
    return min(1.0, max(10.0**exponent, 10.0 ** -(HL_MAX_DECIMALS - HL_SZ_DECIMALS)))


def round_to(value: float, step: float) -> float:
    """``value`` rounded to the nearest multiple of ``step`` with float noise removed."""
    decimals = max(0, -math.floor(math.log10(step)) + 1)
    return round(round(value / step) * step, decimals)


def fmt_price(value: float, step: float) -> str:
    """Decimal text for a price on a ``step`` grid (fixed decimals, as venues print them)."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{value:.{decimals}f}"


class FairPrice:
    """The latent BTC price path: diffusion plus jumps, sampled on demand at increasing times.

    The path is recorded so the Hyperliquid side can look it up ``lag`` in the past.
    """

    def __init__(self, cfg: MarketConfig, rng: random.Random) -> None:
        self._cfg = cfg
        self._rng = rng
        self._sigma_per_sqrt_s = cfg.annual_vol / math.sqrt(365.0 * 86400.0)
        self._times: list[int] = [0]
        self._prices: list[float] = [cfg.start_price]
        self._next_jump_ns = self._draw_jump_gap(0)

    def _draw_jump_gap(self, now_ns: int) -> int:
        if self._cfg.jumps_per_min <= 0:
            return 1 << 62
        return now_ns + int(self._rng.expovariate(self._cfg.jumps_per_min / 60.0) * 1e9)

    def advance(self, t_ns: int) -> float:
        """Price at ``t_ns`` (must not precede the last sampled time)."""
        last_t = self._times[-1]
        price = self._prices[-1]
        dt_s = (t_ns - last_t) / 1e9
        if dt_s > 0:
            price *= math.exp(self._rng.gauss(0.0, self._sigma_per_sqrt_s * math.sqrt(dt_s)))
        while t_ns >= self._next_jump_ns:
            size_bps = self._rng.uniform(self._cfg.jump_bps_min, self._cfg.jump_bps_max)
            price *= 1.0 + (size_bps if self._rng.random() < 0.5 else -size_bps) / 1e4
            self._next_jump_ns = self._draw_jump_gap(self._next_jump_ns)
        self._times.append(t_ns)
        self._prices.append(price)
        return price

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


class MarketModel:
    """Merged, time-ordered stream of Binance quotes and Hyperliquid blocks (``events()``), fully seeded."""

    def __init__(self, cfg: MarketConfig | None = None) -> None:
        self.cfg = cfg or MarketConfig()
        self.cfg.validate()
        self._rng = random.Random(self.cfg.seed)
        self._fair = FairPrice(self.cfg, self._rng)
        self._hl_prev: tuple[HlLevel | None, HlLevel | None] = (None, None)
        self._hl_index = 0
        # Separate streams for venue microstructure so adding a field to one does not shift the other.
        self._bn_rng = random.Random(self.cfg.seed * 1_000_003 + 1)
        self._hl_rng = random.Random(self.cfg.seed * 1_000_003 + 2)

    # -- Binance -----------------------------------------------------------------------------------------------
    def _binance_quotes(self) -> Iterator[BinanceQuote]:
        cfg, rng = self.cfg, self._bn_rng
        t_ns = 0
        update_id = 5_000_000_000 + rng.randrange(1_000_000)
        burst_until = -1
        while True:
            rate = cfg.binance_rate_hz * (cfg.burst_multiplier if t_ns < burst_until else 1.0)
            gap_s = rng.expovariate(rate)
            if t_ns >= burst_until and rng.random() < cfg.burst_prob_per_s * gap_s:
                burst_until = t_ns + int(cfg.burst_len_s * 1e9)
            t_ns += max(1, int(gap_s * 1e9))
            fair = self._fair.advance(t_ns)
            bid = math.floor(fair / BINANCE_TICK) * BINANCE_TICK
            spread_ticks = 1 if rng.random() < 0.9 else rng.randint(2, 4)
            update_id += rng.randint(1, 40)
            yield BinanceQuote(
                t_ns=t_ns,
                update_id=update_id,
                bid=round_to(bid, BINANCE_TICK),
                bid_qty=self._binance_qty(rng),
                ask=round_to(bid + spread_ticks * BINANCE_TICK, BINANCE_TICK),
                ask_qty=self._binance_qty(rng),
            )

    @staticmethod
    def _binance_qty(rng: random.Random) -> float:
        return round_to(max(BINANCE_QTY_STEP, rng.lognormvariate(0.0, 1.2)), BINANCE_QTY_STEP)

    # -- Hyperliquid -------------------------------------------------------------------------------------------
    def _hl_block_times(self) -> Iterator[int]:
        cfg, rng = self.cfg, self._hl_rng
        t_ns = 0
        while True:
            t_ns += int((cfg.hl_block_ms + rng.uniform(-cfg.hl_block_jitter_ms, cfg.hl_block_jitter_ms)) * 1e6)
            yield t_ns

    def _hl_block(self, t_ns: int) -> HlBlock:
        cfg, rng = self.cfg, self._hl_rng
        lag_ns = int(cfg.hl_lag_ms * 1e6)
        fair = self._fair.at(t_ns - lag_ns)
        tick = hl_tick(fair)
        bid_px = round_to(math.floor(fair / tick) * tick, tick)
        ask_px = round_to(bid_px + tick, tick)
        bid, ask = self._hl_prev
        if bid is None or bid.px != bid_px or rng.random() < cfg.hl_size_change_prob:
            bid = HlLevel(bid_px, self._hl_size(rng), rng.randint(1, 12))
        if ask is None or ask.px != ask_px or rng.random() < cfg.hl_size_change_prob:
            ask = HlLevel(ask_px, self._hl_size(rng), rng.randint(1, 12))
        changed = (bid, ask) != self._hl_prev
        self._hl_prev = (bid, ask)
        self._hl_index += 1
        self._fair.forget_before(t_ns - lag_ns - 10_000_000_000)
        return HlBlock(t_ns=t_ns, index=self._hl_index, bid=bid, ask=ask, changed=changed)

    @staticmethod
    def _hl_size(rng: random.Random) -> float:
        return round(max(10.0**-HL_SZ_DECIMALS, rng.lognormvariate(-0.5, 1.3)), HL_SZ_DECIMALS)

    def events(self) -> Iterator[BinanceQuote | HlBlock]:
        """Every Binance quote and every Hyperliquid block (``changed`` tells whether bbo fires), time-ordered.

        A block is built only when it is due, after the Binance side has sampled the fair price past the block
        time, so its look-up ``hl_lag_ms`` in the past reads a settled path and the model never needs the future.
        """
        self._hl_prev = (None, None)
        self._hl_index = 0
        quotes = self._binance_quotes()
        block_times = self._hl_block_times()
        q = next(quotes)
        tb = next(block_times)
        while True:
            if tb <= q.t_ns:
                yield self._hl_block(tb)
                tb = next(block_times)
            else:
                yield q
                q = next(quotes)


def depth_levels(best: float, step: float, side: int, n: int, seed: int) -> list[tuple[float, float]]:
    """``n`` synthetic price levels from ``best`` outward (side +1 asks up, -1 bids down), sizes seeded."""
    rng = random.Random(seed)
    levels: list[tuple[float, float]] = []
    px = best
    for _ in range(n):
        levels.append((round_to(px, step), round_to(max(step, rng.lognormvariate(0.0, 1.0)), BINANCE_QTY_STEP)))
        px += side * step * (1 if rng.random() < 0.7 else rng.randint(2, 3))
    return levels
