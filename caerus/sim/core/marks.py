"""One instrument's mark, index, premium and funding rate on one venue, from its own book and trades.

* Mark: the median of (best bid, best ask, last trade price), the mid before the first trade. It is the book-and-trade
  component both venues put in their mark price (Binance's mark price is a median including the contract's own
  price; Hyperliquid's ``markPx`` is the median of an oracle-based price, the median of best bid / best ask / last
  trade, and other venues' mids); the index-based components are not modelled here.
* Index (Binance ``indexPrice``, Hyperliquid ``oraclePx``): the emulated spot index, the mid's exponential average
  with a time constant of INDEX_TAU_NS of model time: the index lags the perp, so the perp trades at a premium while
  the market rises and at a discount while it falls.
* Premium: ``(mark - index) / index``, sampled every PREMIUM_SAMPLE_NS of model time (both venues sample every 5 s).
* Funding: ``F = P + clamp(interest - P, -0.05%, 0.05%)`` with ``P`` the average premium of the funding interval so
  far and the interest rate 0.01% per 8 h (the formula both venues document). Binance (USDS-M "Funding Rate"
  docs): 8-hour intervals, ``P`` weighted by sample number (1 for the first sample, n for the nth), ``F`` clamped to
  +/- 0.75 x the first bracket's maintenance margin ratio (the emulator's cap; the venue sets one per symbol).
  Hyperliquid (docs, Trading > Funding): hourly payments of ``F / 8`` with ``P`` the plain average of the hour,
  capped at 4% per hour. The current interval's rate is the predicted one (``lastFundingRate``, ``funding``); at each
  interval's end it settles into the history (``fundingRate`` / ``fundingHistory``).

Deterministic: everything runs on the model's time (the caller passes it), so a seed gives the same marks, premiums
and rates. Pure: no sockets, no clock.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field

INDEX_TAU_NS = 5_000_000_000  # the index's averaging time constant (model time)
PREMIUM_SAMPLE_NS = 5_000_000_000  # premium sampled every 5 s (both venues)
INTEREST_8H = 0.0001  # 0.01% per 8 h
INTEREST_CLAMP = 0.0005  # clamp(interest - P, -0.05%, 0.05%)
HISTORY_KEPT = 500  # settled intervals kept (Hyperliquid's fundingHistory answers at most 500)


@dataclass(frozen=True)
class FundingRules:
    """One venue's funding: interval, how the premium is averaged, the divisor of the 8-hour rate, the cap."""

    interval_ms: int
    weighted: bool  # Binance weights the nth sample by n; Hyperliquid averages plainly
    divisor: int  # Hyperliquid pays 1/8 of the 8-hour rate each hour
    cap: float  # |rate| per interval at most


BINANCE_MAINT_MARGIN = 0.004  # the first leverage bracket's maintMarginRatio (caerus.sim.binance.trading)
BINANCE_FUNDING = FundingRules(28_800_000, True, 1, 0.75 * BINANCE_MAINT_MARGIN)
HL_FUNDING = FundingRules(3_600_000, False, 8, 0.04)


@dataclass(frozen=True)
class Settled:
    """One funding interval's settled rate: ``time_ms`` its end (the funding time), the interval's average premium
    and the mark at settlement."""

    time_ms: int
    rate: float
    premium: float
    mark: float


def funding_rate(avg_premium: float, rules: FundingRules) -> float:
    """The venue's rate for an average premium: ``P + clamp(interest - P, +/-0.05%)`` per 8 h, divided into the
    venue's interval, capped."""
    f = avg_premium + min(max(INTEREST_8H - avg_premium, -INTEREST_CLAMP), INTEREST_CLAMP)
    return min(max(f / rules.divisor, -rules.cap), rules.cap)


@dataclass
class Marks:
    """The mark, index, premium and funding of one instrument on one venue."""

    rules: FundingRules
    mark: float | None = None
    index: float | None = None
    t_ns: int = 0  # model time of the last top
    premium: float = 0.0  # at the last sample
    rate: float = field(init=False)  # the current interval's predicted rate
    interval: int | None = None  # wall-clock interval number (time_ms // interval_ms) of the samples so far
    sampled_ms: int | None = None  # wall-clock time of the last sample
    _sum: float = 0.0
    _weights: float = 0.0
    _n: int = 0
    history: collections.deque[Settled] = field(default_factory=lambda: collections.deque(maxlen=HISTORY_KEPT))

    def __post_init__(self) -> None:
        self.rate = funding_rate(0.0, self.rules)

    def on_top(self, t_ns: int, bid: float, ask: float, last: float | None) -> float:
        """A new top of book at model time ``t_ns`` (``last``: the last trade price, None before one): the mark."""
        mid = (bid + ask) / 2
        if self.index is None:
            self.index = mid
        elif t_ns > self.t_ns:
            self.index += (mid - self.index) * -math.expm1(-(t_ns - self.t_ns) / INDEX_TAU_NS)
        self.t_ns = t_ns
        ref = mid if last is None else last
        self.mark = max(min(bid, ask), min(max(bid, ask), ref))  # the median of the three, allocation-free
        return self.mark

    def sample(self, wall_ms: int) -> None:
        """A premium sample at wall-clock ``wall_ms`` (every PREMIUM_SAMPLE_NS of model time): the interval's average
        and predicted rate move; a sample in a new interval first settles the previous one."""
        if self.mark is None or self.index is None:
            return
        interval = wall_ms // self.rules.interval_ms
        if self.interval is not None and interval != self.interval and self._n:
            end_ms = (self.interval + 1) * self.rules.interval_ms
            self.history.append(Settled(end_ms, self.rate, self._sum / self._weights, self.mark))
            self._sum = self._weights = 0.0
            self._n = 0
        self.interval, self.sampled_ms = interval, wall_ms
        self.premium = (self.mark - self.index) / self.index
        self._n += 1
        w = float(self._n) if self.rules.weighted else 1.0
        self._sum += w * self.premium
        self._weights += w
        self.rate = funding_rate(self._sum / self._weights, self.rules)

    def next_funding_ms(self, wall_ms: int) -> int:
        """The end of the interval ``wall_ms`` falls in (the next funding time)."""
        return (wall_ms // self.rules.interval_ms + 1) * self.rules.interval_ms
