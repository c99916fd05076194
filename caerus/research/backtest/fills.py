"""Fill model: an IOC judged against the target venue's top of book as of the order's arrival; fees by venue/tier.

Rules (the paper transport's, caerus.execution.transports.paper, so a backtest can reproduce a paper session):

* The book an order meets is the newest *tradeable* record (VALID, not STALE) of its venue and instrument whose
  clock time is at or before the match time; a newer record that is not tradeable means no book (NOT_FILLED).
  Which clock: ``exchange`` (default: the venue's own event time, i.e. the book as the venue had it when the
  order arrived), ``publish`` (the book the execution engine had read: a paper session with ``latency_ms = 0``,
  matched at pickup) or ``recv`` (a paper session with ``latency_ms > 0``, matched ``latency_ms`` after the send).
* A buy fills at the ask when its limit >= ask, a sell at the bid when its limit <= bid; otherwise NOT_FILLED (the
  book moved past the limit). At most the top size fills (``limit_to_top_size``): the rest of the IOC is
  cancelled, PARTIAL. No depth beyond the top is assumed.
* Optional, off by default (documented so a user can price crowding): ``top_fraction`` < 1 leaves only that share
  of the top size to us (other takers ahead in the same block); ``impact_bps`` moves the fill price against us by
  that many bps per whole top size taken (a linear impact).
* Fees: taker fee in bps of the fill notional by venue and tier (Hyperliquid's perp tiers, Binance USD-M VIP
  levels, as published in 2025-2026), or one fixed ``fee_bps`` for every venue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caerus.wire import TRADEABLE, TRADEABLE_MASK, Outcome, Venue

CLOCKS = ("exchange", "publish", "recv")
#: taker fee (bps) by tier, tier 0 first: Hyperliquid perps (14-day volume tiers) and Binance USD-M (VIP 0..9)
TAKER_BPS: dict[int, tuple[float, ...]] = {
    int(Venue.HYPERLIQUID): (4.5, 4.0, 3.5, 3.0, 2.8, 2.6, 2.4),
    int(Venue.BINANCE): (5.0, 4.0, 3.5, 3.2, 3.0, 2.7, 2.5, 2.2, 2.0, 1.7),
}
FILLED, PARTIAL, NOT_FILLED = int(Outcome.FILLED), int(Outcome.PARTIAL), int(Outcome.NOT_FILLED)
_EPS = 1e-12


class FillError(ValueError):
    """A fill setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class FillRules:
    clock: str = "exchange"
    limit_to_top_size: bool = True
    top_fraction: float = 1.0
    impact_bps: float = 0.0
    fee_tier: int = 0
    fee_bps: float | None = None  # one fixed taker fee for every venue (overrides the tier)
    paper_latency_ns: int = 0  # paper rules with latency_ms > 0: match this long after the send

    def check(self) -> None:
        if self.clock not in CLOCKS:
            raise FillError(f"fill clock {self.clock!r} is not one of {', '.join(CLOCKS)}")
        if not 0.0 < self.top_fraction <= 1.0:
            raise FillError(f"top_fraction must be in (0, 1], got {self.top_fraction}")
        if self.impact_bps < 0.0 or (self.fee_bps is not None and self.fee_bps < 0.0):
            raise FillError("impact_bps and fee_bps must be >= 0")
        if not 0 <= self.fee_tier < min(len(t) for t in TAKER_BPS.values()):
            raise FillError(f"fee tier {self.fee_tier} is not a tier of every venue (0..6)")

    def fee_bps_of(self, venue: int) -> float:
        return self.fee_bps if self.fee_bps is not None else TAKER_BPS[venue][self.fee_tier]

    def describe(self) -> dict[str, object]:
        return {"clock": self.clock, "limit_to_top_size": self.limit_to_top_size, "top_fraction": self.top_fraction,
                "impact_bps": self.impact_bps, "paper_latency_ns": self.paper_latency_ns,
                "taker_fee_bps": {Venue(v).name.lower(): self.fee_bps_of(v) for v in TAKER_BPS},
                "fee_source": "fixed" if self.fee_bps is not None else f"tier {self.fee_tier}"}


class FillModel:
    """The target venue's books per instrument, indexed by the chosen clock, and the matching rule."""

    def __init__(self, rules: FillRules, venue: int, sym: np.ndarray, ven: np.ndarray, flags: np.ndarray,
                 t_clock: np.ndarray, bid: np.ndarray, bid_qty: np.ndarray, ask: np.ndarray,
                 ask_qty: np.ndarray) -> None:
        rules.check()
        self.rules = rules
        self.venue = venue
        # per instrument: the clock times (sorted) and the rows they index; searched per order (np.searchsorted),
        # never turned into Python objects per book: orders are few, books many
        self._books: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        rows = np.flatnonzero(ven == venue)
        rows = rows[np.lexsort((t_clock[rows], sym[rows]))]  # by instrument, then clock (stable)
        s_sorted = sym[rows]
        cuts = np.flatnonzero(np.diff(s_sorted)) + 1
        for part in np.split(rows, cuts) if len(rows) else []:
            ok = (flags[part] & TRADEABLE_MASK) == TRADEABLE
            self._books[int(sym[part[0]])] = (t_clock[part], ok, bid[part], bid_qty[part], ask[part], ask_qty[part])
        self._frac = rules.top_fraction
        self._impact = rules.impact_bps * 1e-4
        self._top = rules.limit_to_top_size

    def book_at(self, sym: int, t: int) -> tuple[bool, float, float, float, float] | None:
        """(tradeable, bid, bid_qty, ask, ask_qty) of the newest book at or before ``t``; None before the first."""
        entry = self._books.get(sym)
        if entry is None:
            return None
        i = int(entry[0].searchsorted(t, "right")) - 1
        if i < 0:
            return None
        return bool(entry[1][i]), float(entry[2][i]), float(entry[3][i]), float(entry[4][i]), float(entry[5][i])

    def match(self, sym: int, side: int, px: float, qty: float, t: int) -> tuple[int, float, float]:
        """(outcome, fill px, fill qty) of an IOC of ``qty`` at limit ``px`` meeting the book at ``t``."""
        book = self.book_at(sym, t)
        if book is None or not book[0]:
            return NOT_FILLED, 0.0, 0.0
        if side > 0 and px >= book[3]:
            touch, top = book[3], book[4]
        elif side < 0 and px <= book[1]:
            touch, top = book[1], book[2]
        else:
            return NOT_FILLED, 0.0, 0.0
        top *= self._frac
        if top <= 0.0:
            return NOT_FILLED, 0.0, 0.0
        filled = min(qty, top) if self._top else qty
        fill_px = touch * (1.0 + side * self._impact * filled / top) if self._impact else touch
        return (FILLED if filled >= qty - _EPS else PARTIAL), fill_px, filled
