"""Fill model: an IOC judged against the target venue's top of book as the venue had it when the order reached it;
fees by venue/tier.

Rules (the defaults are the backtest's and the verdict's: as the fleet really executes):

* The book an order meets is a *tradeable* record (VALID, not STALE) of its venue and instrument on a chosen clock;
  a newer record that is not tradeable means no book (NOT_FILLED). Which clock: ``exchange`` (default: the venue's
  own event time, i.e. the book as the venue had it when the order arrived), ``publish`` (the book the execution
  engine had read: a paper session with ``latency_ms = 0``, matched at pickup) or ``recv`` (a paper session with
  ``latency_ms > 0``, matched ``latency_ms`` after the send).
* **Hyperliquid's block clock** (``blocks``, default on; the exchange clock, Hyperliquid only): an order that
  reaches the venue at ``t_arrive`` is included in the next block and matches the book *after that block*, not the
  book the strategy saw. The data shows a block only when it changed the top (the bbo channel), so the rule is: the
  first book stamped after ``t_arrive``, if there is one within one block interval (``block_ns``) of it -- the
  order fills at that book, at its time; otherwise the block that took the order did not move the top, and the
  order meets the newest book at or before ``t_arrive`` (the state unchanged), at ``t_arrive``. The order is
  taken to match after the block's other transactions (the published post-block book): the honest side for an
  order chasing a move. Block interval: ``block_ns`` when given (the offline market's ``hl_block_ms``; FACTS.md:
  ~70 ms), else estimated from the data (:func:`estimate_block_ns`). Binance (and any other target) keeps
  continuous matching at arrival: the newest book at or before ``t_arrive``.
* A buy fills at the ask when its limit >= ask, a sell at the bid when its limit <= bid; otherwise NOT_FILLED (the
  book moved past the limit). The spread is paid by crossing: fills are at the touch. At most the top size fills
  (``limit_to_top_size``): the rest of the IOC is cancelled, PARTIAL. No depth beyond the top is assumed.
* **Our own fills take the size they consume** (``deplete``, default on): an IOC that takes part of a top leaves
  only the rest to the next of our orders against the same book state (same record, same side), until the next
  book update refreshes it; nothing left -> NOT_FILLED. The paper transport does not deplete (:meth:`FillRules.paper`
  reproduces it).
* Optional, off by default (documented so a user can price crowding): ``top_fraction`` < 1 leaves only that share
  of the top size to us (other takers ahead in the same block); ``impact_bps`` moves the fill price against us by
  that many bps per whole top size taken (a linear impact).
* Fees: taker fee in bps of the fill notional by venue and tier (Hyperliquid's perp tiers, Binance USD-M VIP
  levels, as published in 2025-2026; tier 0 as FACTS.md: Hyperliquid 4.5 bps, Binance 5.0 bps), or one fixed
  ``fee_bps`` for every venue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caerus import fees
from caerus.wire import TRADEABLE, TRADEABLE_MASK, Outcome, Venue

CLOCKS = ("exchange", "publish", "recv")
#: taker fee (bps) by tier, tier 0 first: Hyperliquid perps (14-day volume tiers) and Binance USD-M (VIP 0..9),
#: from the one schedule the emulator and the paper transport charge too (caerus.fees)
TAKER_BPS: dict[int, tuple[float, ...]] = {
    int(Venue.HYPERLIQUID): fees.taker_bps_by_tier("hyperliquid"),
    int(Venue.BINANCE): fees.taker_bps_by_tier("binance"),
}
FILLED, PARTIAL, NOT_FILLED = int(Outcome.FILLED), int(Outcome.PARTIAL), int(Outcome.NOT_FILLED)
_EPS = 1e-12
_HL = int(Venue.HYPERLIQUID)
#: Hyperliquid's block interval when neither the source nor the data gives one (FACTS.md: "blocks ~70 ms")
HL_BLOCK_NS_PUBLISHED = 70_000_000
#: gaps between distinct update times needed to estimate the block interval from the data
MIN_BLOCK_GAPS = 20


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
    blocks: bool = True  # Hyperliquid's block clock (exchange clock only): the next block's book, see above
    block_ns: int | None = None  # the block interval; None: estimated from the data
    deplete: bool = True  # our own fills take the top size they consume until the next book

    @classmethod
    def paper(cls, **kw: object) -> FillRules:
        """The paper transport's rules (caerus.execution.transports.paper, ``latency_ms = 0``): the book the engine
        had read at pickup, no block clock, no depletion (it does not deplete), fees the tier's (caerus.fees: the
        paper transport charges each venue's tier-0 taker rate too)."""
        return cls(clock="publish", blocks=False, deplete=False, **kw)  # type: ignore[arg-type]

    def check(self) -> None:
        if self.clock not in CLOCKS:
            raise FillError(f"fill clock {self.clock!r} is not one of {', '.join(CLOCKS)}")
        if not 0.0 < self.top_fraction <= 1.0:
            raise FillError(f"top_fraction must be in (0, 1], got {self.top_fraction}")
        if self.impact_bps < 0.0 or (self.fee_bps is not None and self.fee_bps < 0.0):
            raise FillError("impact_bps and fee_bps must be >= 0")
        if not 0 <= self.fee_tier < min(len(t) for t in TAKER_BPS.values()):
            raise FillError(f"fee tier {self.fee_tier} is not a tier of every venue (0..6)")
        if self.block_ns is not None and self.block_ns <= 0:
            raise FillError(f"block interval must be > 0 ns, got {self.block_ns}")

    def fee_bps_of(self, venue: int) -> float:
        return self.fee_bps if self.fee_bps is not None else TAKER_BPS[venue][self.fee_tier]

    def describe(self) -> dict[str, object]:
        return {"clock": self.clock, "limit_to_top_size": self.limit_to_top_size, "top_fraction": self.top_fraction,
                "impact_bps": self.impact_bps, "paper_latency_ns": self.paper_latency_ns,
                "blocks": self.blocks and self.clock == "exchange", "block_ns": self.block_ns,
                "deplete": self.deplete,
                "taker_fee_bps": {Venue(v).name.lower(): self.fee_bps_of(v) for v in TAKER_BPS},
                "fee_source": "fixed" if self.fee_bps is not None else f"tier {self.fee_tier}",
                "rule": self.rule_text()}

    def rule_text(self) -> str:
        """The matching rule in one line (every report prints it)."""
        when = {"exchange": "as the venue had it at arrival", "publish": "the engine had read at pickup (paper)",
                "recv": "received by the send time + the paper latency"}.get(self.clock, self.clock)
        parts = [f"IOC vs the top of book {when}"]
        if self.blocks and self.clock == "exchange":
            parts.append("Hyperliquid: the next block's book (within one block interval of arrival), else unchanged")
        parts.append("at most the top size" if self.limit_to_top_size else "whole qty (top size not enforced)")
        parts.append("our fills deplete the top until the next book" if self.deplete else "no depletion")
        if self.top_fraction < 1.0:
            parts.append(f"top share {self.top_fraction}")
        if self.impact_bps:
            parts.append(f"impact {self.impact_bps} bps per top")
        return "; ".join(parts)


def estimate_block_ns(t_exchange: np.ndarray) -> tuple[int, str]:
    """(block interval ns, how it was found) from a block venue's update times (every instrument: Hyperliquid's
    ``time`` is one block clock). Updates come only when a top changed, so the gaps between distinct times are
    whole numbers of blocks (give or take the blocks' jitter): the interval is the median of the gaps up to 1.5x
    their 10th percentile (the one-block gaps). Fewer than :data:`MIN_BLOCK_GAPS` gaps: the published ~70 ms."""
    t = np.unique(np.asarray(t_exchange, dtype=np.int64))
    gaps = np.diff(t)
    gaps = gaps[gaps > 0]
    if len(gaps) < MIN_BLOCK_GAPS:
        return HL_BLOCK_NS_PUBLISHED, (f"published ~{HL_BLOCK_NS_PUBLISHED / 1e6:g} ms (FACTS.md; {len(gaps)} update "
                                       f"gaps in the data, fewer than {MIN_BLOCK_GAPS} to estimate from)")
    d10 = float(np.quantile(gaps, 0.1))
    one = gaps[gaps <= 1.5 * d10]
    est = int(np.median(one))
    return est, f"estimated from the data: median of {len(one)} one-block gaps of {len(gaps)} update gaps"




def book_met(times: np.ndarray, t: np.ndarray, block_ns: int) -> np.ndarray:
    """Index of the book an order reaching the venue at ``t`` meets (vectorised): the first book stamped after ``t``
    when it is within ``block_ns`` of it (the next block moved the top: the order meets the book after it), else the
    newest at or before ``t`` (a block that left the top as it was); ``block_ns`` 0: continuous matching. -1: before
    the first book. The same rule as :meth:`FillModel.fill` (tests/unit/research/test_backtest_execution.py checks
    they agree); the training target uses it so it scores the price an order would get
    (caerus.research.training_data)."""
    if not len(times):
        return np.full(np.shape(t), -1, dtype=np.int64)
    i = np.searchsorted(times, t, side="right")
    nxt = np.minimum(i, len(times) - 1)
    hit = (block_ns > 0) & (i < len(times)) & (times[nxt] <= t + block_ns)
    return np.where(hit, i, i - 1)


class FillModel:
    """The target venue's books per instrument, indexed by the chosen clock, the matching rule, and what our own
    fills took from each book (depletion); state of one run."""

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
        self._deplete = rules.deplete
        # (instrument, book index, side) -> size our own fills took from that book's top
        self._taken: dict[tuple[int, int, int], float] = {}
        #: the block clock applies (Hyperliquid on the exchange clock); its interval and where it came from
        self.blocks = rules.blocks and rules.clock == "exchange" and venue == _HL
        self.block_ns = 0
        self.block_source = "not applied (" + ("off" if not rules.blocks else
                                               f"clock {rules.clock}" if rules.clock != "exchange" else
                                               f"{Venue(venue).name.lower()} matches continuously") + ")"
        if self.blocks:
            if rules.block_ns is not None:
                self.block_ns, self.block_source = rules.block_ns, "given"
            else:
                self.block_ns, self.block_source = estimate_block_ns(t_clock[rows])

    def book_at(self, sym: int, t: int) -> tuple[bool, float, float, float, float] | None:
        """(tradeable, bid, bid_qty, ask, ask_qty) of the newest book at or before ``t``; None before the first."""
        entry = self._books.get(sym)
        if entry is None:
            return None
        i = int(entry[0].searchsorted(t, "right")) - 1
        if i < 0:
            return None
        return bool(entry[1][i]), float(entry[2][i]), float(entry[3][i]), float(entry[4][i]), float(entry[5][i])

    def fill(self, sym: int, side: int, px: float, qty: float, t: int) -> tuple[int, float, float, int]:
        """(outcome, fill px, fill qty, match time) of an IOC of ``qty`` at limit ``px`` reaching the venue at
        ``t``: the book it meets by the rules above, less what our earlier fills took from it."""
        entry = self._books.get(sym)
        if entry is None:
            return NOT_FILLED, 0.0, 0.0, t
        times = entry[0]
        i = int(times.searchsorted(t, "right"))  # the first book after t
        t_match = t
        if self.blocks and i < len(times) and times[i] <= t + self.block_ns:
            t_match = int(times[i])  # the next block moved the top: the order meets the book after it
        else:
            i -= 1  # continuous matching, or a block that left the top as it was
        if i < 0 or not entry[1][i]:
            return NOT_FILLED, 0.0, 0.0, t_match
        if side > 0 and px >= entry[4][i]:
            touch, top = float(entry[4][i]), float(entry[5][i])
        elif side < 0 and px <= entry[2][i]:
            touch, top = float(entry[2][i]), float(entry[3][i])
        else:
            return NOT_FILLED, 0.0, 0.0, t_match
        top *= self._frac
        left = top
        if self._deplete:
            key = (sym, i, side)
            left = top - self._taken.get(key, 0.0)
        if left <= _EPS:
            return NOT_FILLED, 0.0, 0.0, t_match
        filled = min(qty, left) if self._top else qty
        if self._deplete:
            self._taken[key] = self._taken.get(key, 0.0) + filled
        fill_px = touch * (1.0 + side * self._impact * filled / top) if self._impact else touch
        return (FILLED if filled >= qty - _EPS else PARTIAL), fill_px, filled, t_match

    def match(self, sym: int, side: int, px: float, qty: float, t: int) -> tuple[int, float, float]:
        """(outcome, fill px, fill qty): :meth:`fill` without the match time."""
        outcome, fill_px, filled, _ = self.fill(sym, side, px, qty, t)
        return outcome, fill_px, filled
