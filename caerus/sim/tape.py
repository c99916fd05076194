"""Trades and ticker statistics of the emulated market, derived from the model's price path.

A trade happens where the market just moved through: when a venue's best bid falls, a seller hit the old bid;
when the best ask rises, a buyer lifted the old ask (the size is the old level's). Both venues' trade streams and
the 24 h tickers come from here, so trades, tickers and books never disagree. The ticker window is the session
(sessions are shorter than the venue's 24 h rolling window); ``open`` is the first trade's price.

Pure: no sockets, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Trade:
    trade_id: int
    t_ns: int
    px: float
    qty: float
    buyer_is_maker: bool  # True: a seller hit the bid


@dataclass
class TickerStats:
    open: float = 0.0
    high: float = 0.0
    low: float = 0.0
    last: float = 0.0
    last_qty: float = 0.0
    volume: float = 0.0
    quote_volume: float = 0.0
    count: int = 0
    first_id: int = 0
    last_id: int = 0
    first_t_ns: int = 0

    def add(self, t: Trade) -> None:
        if self.count == 0:
            self.open = self.high = self.low = t.px
            self.first_id, self.first_t_ns = t.trade_id, t.t_ns
        self.high, self.low = max(self.high, t.px), min(self.low, t.px)
        self.last, self.last_qty, self.last_id = t.px, t.qty, t.trade_id
        self.volume += t.qty
        self.quote_volume += t.px * t.qty
        self.count += 1

    @property
    def vwap(self) -> float:
        return self.quote_volume / self.volume if self.volume else 0.0


class Tape:
    """One venue's trade sequence and its session statistics."""

    def __init__(self, first_id: int) -> None:
        self._next_id = first_id
        self.stats = TickerStats()
        self.last: Trade | None = None

    def on_top(self, t_ns: int, old_bid: tuple[float, float], old_ask: tuple[float, float], new_bid: float,
               new_ask: float) -> Trade | None:
        """The trade implied by the top moving from (old bid, old ask) to (new bid, new ask), if any."""
        if new_bid < old_bid[0]:
            px, qty, maker = old_bid[0], old_bid[1], True
        elif new_ask > old_ask[0]:
            px, qty, maker = old_ask[0], old_ask[1], False
        else:
            return None
        trade = Trade(self._next_id, t_ns, px, qty, maker)
        self._next_id += 1
        self.stats.add(trade)
        self.last = trade
        return trade
