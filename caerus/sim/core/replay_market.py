"""A real capture as the emulator's market: the Binance side is the capture's frames, the Hyperliquid side is the
market model's follower following the replayed Binance mid.

``ReplayMarket(cfg, CaptureFrames(info)).events()`` is a time-ordered stream the market driver plays exactly as it
plays ``MarketModel.events()``: each real Binance frame (caerus.sim.core.capture_file: ``RealQuote`` for a bookTicker,
``RealFrame`` for a trade) at its receive offset, and per Hyperliquid block every coin's top (``HlBlock``), built by
the model's own code (``caerus.sim.core.market.HlCoin`` with a ``caerus.sim.core.follower.Follower``) from ``cfg``'s
Hyperliquid settings: block clock, lag law, partial catch-up, own moves, fading quotes, arbitrage half-life, sizes.
The follower observes the replayed quote's mid ((bid + ask) / 2) at each bookTicker, where the model observes its
fair price; the first block is at time 0, level with the first mid, so both venues have a book at once. With
``cfg.fixed_follower`` (the ``fixed-lag`` preset) the coin copies the replayed mid ``hl_lag_ms`` earlier.

Random streams are the model's for the same seed (the block clock and the first coin's sizes from ``Random(seed *
1_000_003 + 2)``, the follower and the regime from their named streams), so one seed gives one Hyperliquid side
for one capture. Nothing of ``cfg``'s Binance side (rates, jumps, flickers, volatility) is used: the capture is
the Binance side. The stream ends with the capture.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator

from caerus.sim.core.capture_file import CaptureFrames, RealFrame, RealQuote
from caerus.sim.core.catalogue import ListedInstrument
from caerus.sim.core.follower import Follower
from caerus.sim.core.hub import Topics
from caerus.sim.core.market import BinanceQuote, HlBlock, HlCoin, SampledPath
from caerus.sim.core.market_config import MarketConfig
from caerus.sim.core.regime import Regime

#: how often the start gate looks for subscribers
GATE_POLL_S = 0.01


class ObservedPath(SampledPath):
    """The replayed mid of one instrument as observed so far: what ``HlCoin.block`` reads where the model reads its
    fair-price path (``at``: the latest observation not after a time; ``forget_before`` keeps memory flat)."""

    __slots__ = ()

    def observe(self, t_ns: int, price: float) -> None:
        self._times.append(t_ns)
        self._prices.append(price)


class ReplayMarket:
    """The merged events of a replayed capture and the modelled Hyperliquid side (see the module docstring)."""

    def __init__(self, cfg: MarketConfig, frames: CaptureFrames) -> None:
        names = frames.info.names
        if tuple(cfg.symbols) != names:
            raise ValueError(f"the market's symbols {', '.join(cfg.symbols)} are not the capture's "
                             f"({', '.join(names)})")
        cfg.validate()
        self.cfg = cfg
        self.frames = frames
        self.instruments: tuple[ListedInstrument, ...] = cfg.instruments()

    def _block_times(self, rng: random.Random) -> Iterator[int]:
        cfg, t_ns = self.cfg, 0
        yield 0
        while True:
            t_ns += int((cfg.hl_block_ms + rng.uniform(-cfg.hl_block_jitter_ms, cfg.hl_block_jitter_ms)) * 1e6)
            yield t_ns

    def events(self) -> Iterator[BinanceQuote | RealFrame | HlBlock]:
        """The priming tops at time 0, then every served frame of the capture and, per block, every coin's top,
        time-ordered (a frame before a block at the same time, so a block never misses the quote that shares its
        instant); ends with the capture."""
        cfg, seed = self.cfg, self.cfg.seed
        regime = Regime(cfg, random.Random(f"caerus-sim:{seed}:regime"))
        hl_rng = random.Random(seed * 1_000_003 + 2)

        def stream(k: int, inst: ListedInstrument, what: str) -> random.Random:
            if k == 0:
                return hl_rng
            return random.Random(f"caerus-sim:{seed}:{inst.name}:{what}")

        frames = iter(self.frames)
        pending: list[RealQuote | RealFrame] = []
        # every instrument's first quote: where its path and follower start
        first: dict[int, float] = {}
        for ev in frames:
            pending.append(ev)
            if isinstance(ev, RealQuote) and ev.symbol not in first:
                first[ev.symbol] = (ev.bid + ev.ask) / 2.0
            if len(first) == len(self.instruments):
                break
        if not first:  # no readable quote at all: nothing to replay
            return
        some = next(iter(first.values()))  # (an instrument with no quote in the whole file: never served anyway)
        paths = {k: ObservedPath(first.get(k, some)) for k in range(len(self.instruments))}
        followers: dict[int, Follower | None] = {}
        coins = []
        for k, inst in enumerate(self.instruments):
            follower = None
            if not cfg.fixed_follower:
                follower = Follower(cfg, inst.name, paths[k].at(0),
                                    random.Random(f"caerus-sim:{seed}:{inst.name}:follower"), regime)
            followers[k] = follower
            coins.append(HlCoin(cfg, inst, k, stream(k, inst, "hyperliquid"), follower))
        blocks = self._block_times(hl_rng)
        next(blocks)  # time 0: the priming block below
        # Priming, at time 0: each instrument's first top as a plain quote (state only: the driver publishes it to
        # nobody before its start gate, and it is not counted as served) and the first block, so both venues have
        # a book before the replay's clock starts; the capture then plays from its first frame.
        for k in sorted(first):
            q = next(ev for ev in pending if isinstance(ev, RealQuote) and ev.symbol == k)
            yield BinanceQuote(0, q.update_id, q.bid, q.bid_qty, q.ask, q.ask_qty, k)
        block_index = 1
        yield from (c.block(0, block_index, paths[c.index]) for c in coins)
        next_block = next(blocks)

        def quotes() -> Iterator[RealQuote | RealFrame]:
            yield from pending
            yield from frames

        for ev in quotes():
            while next_block < ev.t_ns:
                block_index += 1
                yield from (c.block(next_block, block_index, paths[c.index]) for c in coins)
                next_block = next(blocks)
            if isinstance(ev, RealQuote):
                mid = (ev.bid + ev.ask) / 2.0
                paths[ev.symbol].observe(ev.t_ns, mid)
                follower = followers[ev.symbol]
                if follower is not None:
                    follower.observe(ev.t_ns, mid)
            yield ev


async def wait_for_venues(topics: Topics, wait_s: float) -> None:
    """The replay's start gate: until a client subscribes to either venue (unbounded: the emulator serves nobody
    until then), then until both venues have a subscriber or ``wait_s`` has passed, so the fleet's feeds see the
    capture from its first frame."""
    def subscribed(venue: str) -> bool:
        return bool(topics.keys_with_prefix(f"{venue}:"))

    while not (subscribed("binance") or subscribed("hyperliquid")):
        await asyncio.sleep(GATE_POLL_S)
    deadline = time.monotonic() + wait_s
    while not (subscribed("binance") and subscribed("hyperliquid")) and time.monotonic() < deadline:
        await asyncio.sleep(GATE_POLL_S)


#: the MarketConfig settings the Hyperliquid side of a replay uses (the rest describe Binance, which is real)
FOLLOWER_SETTINGS = ("hl_block_ms", "hl_block_jitter_ms", "hl_size_change_prob", "hl_lag_ms", "hl_lag_sd_ms",
                     "catch_up", "catch_up_late", "catch_up_late_ms", "hl_fade", "hl_own_jumps_per_min",
                     "hl_own_bps_min", "hl_own_bps_max", "hl_own_blocks", "hl_basis_half_life_s",
                     "regime_vol_mult", "regime_jump_mult", "regime_calm_s", "regime_volatile_s")


def describe_follower(cfg: MarketConfig) -> dict[str, object]:
    """What models the Hyperliquid side of a replay: the mechanism, the seed and every setting it reads."""
    model = ("fixed lag: the replayed Binance mid hl_lag_ms later, whole" if cfg.fixed_follower else
             "follower (caerus.sim.core.follower): each move of the replayed Binance mid reaches Hyperliquid after a "
             "lognormal lag, partly, with Hyperliquid's own moves, fading quotes and arbitrage")
    return {"real": False, "model": model, "seed": cfg.seed,
            "settings": {k: getattr(cfg, k) for k in FOLLOWER_SETTINGS},
            "lag_by_symbol": dict(cfg.lag_overrides)}
