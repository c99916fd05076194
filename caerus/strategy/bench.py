"""Benchmark strategy: fires an IOC on every valid Binance book (OrderReason.BENCH); no signal, no guards.

Used by benchmarks/tick_to_decision.py (config ``mode = "bench"``) so the measured path is the real strategy
process loop (ring read, t_seen, decision, t_decision, order ring push) with a decision that always fires. Sides
alternate so a risk engine's position stays bounded. Same interface as :class:`LatencyArb`, except that it keeps
no per-order state (``orders`` is None): it does not read results, and its ``position`` assumes every order filled.
"""

from __future__ import annotations

from caerus.instruments import Instrument
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import G_HALTED, G_INVALID_BN, GUARD_NAMES
from caerus.strategy.orders import OrderTable
from caerus.wire import BOOK_I, TRADEABLE, TRADEABLE_MASK, OrderReason, Venue

_BINANCE = int(Venue.BINANCE)
_HYPERLIQUID = int(Venue.HYPERLIQUID)
_VENUE = BOOK_I.VENUE
_FLAGS = BOOK_I.FLAGS
_BID = BOOK_I.BID_PX
_ASK = BOOK_I.ASK_PX
_BENCH = int(OrderReason.BENCH)


class BenchFireEveryBook:
    __slots__ = ("_qty", "basis", "decisions", "ewma", "guards", "halted", "hl_mid", "orders", "position", "side",
                 "signal")

    def __init__(self, cfg: StrategyConfig, instrument: Instrument | None = None) -> None:
        self._qty = cfg.order_qty
        self.side = 1
        self.hl_mid = 0.0
        self.position = 0.0
        self.orders: OrderTable | None = None  # fires without reading results
        self.halted = False
        self.guards = [0] * len(GUARD_NAMES)
        self.decisions = 0
        self.signal = self.basis = self.ewma = 0.0

    @property
    def order_qty(self) -> float:
        return self._qty

    def on_exec(self, rec: tuple) -> None:
        """Results are not read in bench mode (``orders`` is None, so the loop never calls this)."""

    def on_book(self, book: tuple, now: int) -> tuple | None:
        venue = book[_VENUE]
        if venue == _HYPERLIQUID:
            if (book[_FLAGS] & TRADEABLE_MASK) == TRADEABLE:
                self.hl_mid = (book[_BID] + book[_ASK]) * 0.5
            return None
        if venue != _BINANCE:
            return None
        self.decisions += 1
        if self.halted:
            self.guards[G_HALTED] += 1
            return None
        if (book[_FLAGS] & TRADEABLE_MASK) != TRADEABLE:
            self.guards[G_INVALID_BN] += 1
            return None
        # Price the order at the Hyperliquid mid when known (keeps a price-band risk check happy), else Binance.
        px = self.hl_mid or (book[_BID] + book[_ASK]) * 0.5
        return (self.side, _BENCH, px, self._qty)

    def shadow(self, now: int) -> None:
        """No shadow orders: this strategy's fire path is never cold (it fires on every Binance book)."""

    def fired(self, decision: tuple, now: int, order_id: int = 0, seq: int = 0) -> None:
        self.position += decision[0] * decision[3]
        self.side = -self.side
