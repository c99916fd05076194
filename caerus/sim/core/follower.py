"""How Hyperliquid's price follows Binance's information in the stochastic market model (one object per coin).

Hyperliquid's log mid ``h`` moves only by these increments, applied at its block times:

* Each move ``m`` of the coin's fair (log) price between two samples (a Binance quote's time, or a block for a coin
  Binance does not list) is one piece of information. It reaches Hyperliquid after its own lag ``L``, drawn per
  move from a lognormal law with median ``hl_lag_ms`` (per-coin override allowed) and standard deviation
  ``hl_lag_sd_ms``; then ``h`` moves by ``catch_up * m``.
* Of the remainder ``(1 - catch_up) m``, the share ``catch_up_late`` arrives ``R`` later (R ~ Exponential with mean
  ``catch_up_late_ms``); the rest never arrives by itself.
* Hyperliquid's own moves (``hl_own_jumps_per_min`` per coin on the regime's jump clock, sizes uniform in
  ``hl_own_bps_min..hl_own_bps_max``, sign at even odds) are spread evenly over ``hl_own_blocks`` blocks.
  Binance never makes them.
* Fading quotes: Hyperliquid's makers watch Binance too. While moves are on their way (``owed``: the sum of
  what is still to arrive), the side of the touch they expose moves at once by ``hl_fade * owed``: the ask up for
  a rise to come, the bid down for a fall; the other side stays at the mid. So a taker who saw Binance first
  meets a touch that already carries part of the move, although the mid (what lead-lag studies measure) lags.
* Arbitrage: ``h`` is pulled towards the target ``z`` (every arrived move in full, what is still late excepted) by
  ``(1 - 2^(-dt / hl_basis_half_life_s)) (z - h)`` each block, so own moves and the never-arriving parts decay with
  that half-life (0: they stay for ever).

Draws (lags, late delays, own moves) come from the coin's own random stream, so the block clock and the top's
sizes are drawn exactly as in the fixed-lag model.
"""

from __future__ import annotations

import heapq
import math
import random

from caerus.sim.core.market_config import MarketConfig
from caerus.sim.core.regime import Regime


def lognormal_sigma(median: float, sd: float) -> float:
    """The log-scale sigma of a lognormal law with this median and standard deviation (same units).

    sd^2 = median^2 x (x - 1) with x = exp(sigma^2), so x = (1 + sqrt(1 + 4 (sd / median)^2)) / 2."""
    if sd <= 0.0:
        return 0.0
    r2 = (sd / median) ** 2
    return math.sqrt(math.log((1.0 + math.sqrt(1.0 + 4.0 * r2)) / 2.0))


class Follower:
    """One coin's Hyperliquid mid, built from the fair price's moves as they are sampled (``observe``) and read at
    each block (``touch_at``)."""

    __slots__ = (
        "_c",
        "_fade",
        "_half_life_ns",
        "_lag_median_ns",
        "_lag_sigma",
        "_last_log",
        "_last_t",
        "_late",
        "_late_mean_ns",
        "_n",
        "_next_own",
        "_own_active",
        "_own_blocks",
        "_own_max",
        "_own_min",
        "_own_rate",
        "_pending",
        "_regime",
        "_rng",
        "h",
        "owed",
        "z",
    )

    def __init__(self, cfg: MarketConfig, name: str, start_price: float, rng: random.Random,
                 regime: Regime) -> None:
        self._rng = rng
        self._regime = regime
        median_ms = cfg.lag_ms(name)
        self._lag_median_ns = median_ms * 1e6
        self._lag_sigma = lognormal_sigma(median_ms, cfg.hl_lag_sd_ms) if median_ms > 0 else 0.0
        self._c = cfg.catch_up
        self._late = cfg.catch_up_late * (1.0 - cfg.catch_up)  # share of a move that arrives late
        self._late_mean_ns = cfg.catch_up_late_ms * 1e6
        self._half_life_ns = cfg.hl_basis_half_life_s * 1e9
        self._fade = cfg.hl_fade
        self._own_rate = cfg.hl_own_jumps_per_min / 60e9  # per ns of the jump clock
        self._own_min, self._own_max, self._own_blocks = cfg.hl_own_bps_min, cfg.hl_own_bps_max, cfg.hl_own_blocks
        self._next_own = self._own_gap(0.0)
        self._own_active: list[list[float]] = []  # [log step per block, blocks left]
        self._pending: list[tuple[int, int, float, float]] = []  # (arrival ns, n, dh, dz)
        self._n = 0
        self._last_log = math.log(start_price)
        self._last_t = 0
        self.h = self._last_log  # Hyperliquid's log mid: level with the fair price at the start
        self.z = self._last_log  # where arbitrage pulls it
        self.owed = 0.0  # log moves on their way to Hyperliquid (sum of the pending dh)

    def _own_gap(self, now: float) -> float:
        return now + self._rng.expovariate(self._own_rate) if self._own_rate > 0 else math.inf

    def observe(self, t_ns: int, price: float) -> None:
        """The fair price sampled at ``t_ns``: its move since the last sample is sent on its way to Hyperliquid."""
        lp = math.log(price)
        m = lp - self._last_log
        self._last_log = lp
        if m == 0.0:
            return
        rng = self._rng
        lag = self._lag_median_ns
        if self._lag_sigma:
            lag *= math.exp(self._lag_sigma * rng.gauss(0.0, 1.0))
        arrive = t_ns + max(1, int(lag))
        c, late = self._c, self._late
        self._n += 1
        # the never-arriving part joins the target at once: only arbitrage (the half-life) brings it
        heapq.heappush(self._pending, (arrive, self._n, c * m, (1.0 - late) * m))
        self.owed += (c + late) * m
        if late > 0.0:
            self._n += 1
            later = arrive + max(1, int(rng.expovariate(1.0) * self._late_mean_ns))
            heapq.heappush(self._pending, (later, self._n, late * m, late * m))

    def touch_at(self, t_ns: int) -> tuple[float, float]:
        """(low, high) at block time ``t_ns`` (blocks in time order): the prices the bid and the ask are built
        from (both the mid when nothing fades)."""
        pending = self._pending
        h, z, owed = self.h, self.z, self.owed
        while pending and pending[0][0] <= t_ns:
            _, _, dh, dz = heapq.heappop(pending)
            h += dh
            z += dz
            owed -= dh
        if not pending:
            owed = 0.0  # no float residue once nothing is on its way
        if self._half_life_ns > 0.0:
            dt = t_ns - self._last_t
            h += -math.expm1(-math.log(2.0) * dt / self._half_life_ns) * (z - h)
        if self._own_rate > 0.0:
            clock = self._regime.jump_ns(t_ns)
            while clock >= self._next_own:
                rng = self._rng
                size = rng.uniform(self._own_min, self._own_max) * (1.0 if rng.random() < 0.5 else -1.0)
                self._own_active.append([math.log1p(size / 1e4) / self._own_blocks, float(self._own_blocks)])
                self._next_own = self._own_gap(self._next_own)
            if self._own_active:
                for own in self._own_active:
                    h += own[0]
                    own[1] -= 1.0
                self._own_active = [own for own in self._own_active if own[1] > 0.0]
        self._last_t = t_ns
        self.h, self.z, self.owed = h, z, owed
        fade = self._fade * owed
        if fade == 0.0:
            mid = math.exp(h)
            return mid, mid
        return (math.exp(h + fade), math.exp(h)) if fade < 0.0 else (math.exp(h), math.exp(h + fade))
