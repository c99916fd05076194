"""Benchmark strategy: fires an IOC on every valid Binance book (OrderReason.BENCH); no signal, no guards.

Used by benchmarks/tick_to_decision.py (config ``mode = "bench"``) so the measured path is the real strategy
process loop (ring read, t_seen, decision, t_decision, order ring push) with a decision that always fires. Sides
alternate so a risk engine's position stays bounded. Same interface as :class:`LatencyArb`, except that it keeps
no per-order state (``orders`` is None): it does not read results, and its ``position`` assumes every order filled.

Sized and priced so a venue can take the order: the size is the instrument's (its own ``order_qty``, else
``order_notional`` at its first Hyperliquid book, as :class:`LatencyArb` sizes entries; 0.001 ETH or SOL is below
Hyperliquid's $10 minimum or its ``szDecimals``), and the limit is the Hyperliquid touch on the crossing side (buy
at the ask, sell at the bid): on Hyperliquid's grid, inside any price band, and an IOC there fills against the touch
unless the book moved. Before the first Hyperliquid book it is the Binance mid.
"""

from __future__ import annotations

from caerus.instruments import Instrument
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX, BOOK_FLAGS, BOOK_VENUE
from caerus.strategy.config import StrategyConfig
from caerus.strategy.latency_arb import G_HALTED, G_INVALID_BN, GUARD_NAMES, notional_qty, sized_by_notional
from caerus.strategy.orders import OrderTable
from caerus.wire import TRADEABLE, TRADEABLE_MASK, OrderReason, Venue

_BINANCE = int(Venue.BINANCE)
_HYPERLIQUID = int(Venue.HYPERLIQUID)
_BENCH = int(OrderReason.BENCH)


class BenchFireEveryBook:
    __slots__ = ("_notional", "_qty", "_sz_decimals", "basis", "decisions", "ewma", "guards", "halted", "hl_ask",
                 "hl_bid", "orders", "position", "side", "signal")

    def __init__(self, cfg: StrategyConfig, instrument: Instrument | None = None) -> None:
        self._notional = sized_by_notional(cfg, instrument)  # > 0: size to it at the first Hyperliquid book
        if instrument is not None:
            cfg = cfg.for_instrument(instrument.name)
        self._qty = cfg.order_qty
        self._sz_decimals = instrument.sz_decimals if instrument is not None else 5
        self.side = 1
        self.hl_bid = self.hl_ask = 0.0
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
        venue = book[BOOK_VENUE]
        if venue == _HYPERLIQUID:
            if (book[BOOK_FLAGS] & TRADEABLE_MASK) == TRADEABLE:
                self.hl_bid, self.hl_ask = book[BOOK_BID_PX], book[BOOK_ASK_PX]
                if self._notional > 0.0:  # the instrument's first Hyperliquid book: its size, once
                    self._qty = notional_qty(self._notional, (self.hl_bid + self.hl_ask) * 0.5, self._sz_decimals)
                    self._notional = 0.0
            return None
        if venue != _BINANCE:
            return None
        self.decisions += 1
        if self.halted:
            self.guards[G_HALTED] += 1
            return None
        if (book[BOOK_FLAGS] & TRADEABLE_MASK) != TRADEABLE:
            self.guards[G_INVALID_BN] += 1
            return None
        # The Hyperliquid touch on the crossing side when known (see the module docstring), else the Binance mid.
        if self.hl_ask:
            px = self.hl_ask if self.side > 0 else self.hl_bid
        else:
            px = (book[BOOK_BID_PX] + book[BOOK_ASK_PX]) * 0.5
        return (self.side, _BENCH, px, self._qty)

    def shadow(self, now: int) -> None:
        """No shadow orders: this strategy's fire path is never cold (it fires on every Binance book)."""

    def fired(self, decision: tuple, now: int, order_id: int = 0, seq: int = 0) -> None:
        self.position += decision[0] * decision[3]
        self.side = -self.side
