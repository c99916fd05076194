"""Trades and ticker statistics of the emulated market, derived from the model's price path.

A trade happens where the market just moved through: when a venue's best bid falls, a seller hit the old bid;
when the best ask rises, a buyer lifted the old ask (the size is the old level's). Both venues' trade streams and
the 24 h tickers, the recent-trades queries and the klines / candles (one-minute bars, aggregated to longer
intervals) come from here, so trades, tickers, candles and books never disagree. The ticker window is the session
(sessions are shorter than the venue's 24 h rolling window); ``open`` is the first trade's price.

Pure: no sockets, no clock.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

MINUTE_NS = 60_000_000_000
#: interval name -> minutes, for Binance klines and Hyperliquid candles (a month counted as 30 days)
INTERVAL_MINUTES = {"1m": 1, "3m": 3, "5m": 5, "15m": 15, "30m": 30, "1h": 60, "2h": 120, "4h": 240, "6h": 360,
                    "8h": 480, "12h": 720, "1d": 1440, "3d": 4320, "1w": 10080, "1M": 43200}
TRADES_KEPT = 1000  # recent trades a REST query reaches (the venue's maximum limit)
BARS_KEPT = 1500  # one-minute bars kept (25 h): what klines / candles are built from


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


@dataclass
class Bar:
    """One minute of trades (``start_ns``: wall-clock ns since the Unix epoch, a multiple of a minute)."""

    start_ns: int
    open: float
    high: float
    low: float
    close: float
    volume: float = 0.0
    quote_volume: float = 0.0
    count: int = 0
    taker_buy_volume: float = 0.0
    taker_buy_quote: float = 0.0
    first_id: int = 0
    last_id: int = 0

    def add(self, t: Trade) -> None:
        self.first_id = self.first_id or t.trade_id
        self.last_id = t.trade_id
        self.high, self.low, self.close = max(self.high, t.px), min(self.low, t.px), t.px
        self.volume += t.qty
        self.quote_volume += t.px * t.qty
        self.count += 1
        if not t.buyer_is_maker:
            self.taker_buy_volume += t.qty
            self.taker_buy_quote += t.px * t.qty


@dataclass
class Tape:
    """One venue's trade sequence, its session statistics, its recent trades and one-minute bars."""

    first_id: int
    stats: TickerStats = field(default_factory=TickerStats)
    last: Trade | None = None
    recent: collections.deque[Trade] = field(default_factory=lambda: collections.deque(maxlen=TRADES_KEPT))
    bars: collections.deque[Bar] = field(default_factory=lambda: collections.deque(maxlen=BARS_KEPT))
    offset_ns: int = 0  # wall clock = model time + this (the driver's epoch): bars start on wall-clock minutes

    def __post_init__(self) -> None:
        self._next_id = self.first_id

    def _record(self, trade: Trade) -> None:
        self.stats.add(trade)
        self.last = trade
        self.recent.append(trade)
        wall = trade.t_ns + self.offset_ns
        start = wall - wall % MINUTE_NS
        if not self.bars or self.bars[-1].start_ns != start:
            self.bars.append(Bar(start, trade.px, trade.px, trade.px, trade.px))
        self.bars[-1].add(trade)

    def current_bar(self, minutes: int) -> Bar | None:
        """The newest ``minutes``-minute bar (aggregated from the tail of the one-minute bars): what a kline stream
        sends after each trade."""
        if not self.bars:
            return None
        width = minutes * MINUTE_NS
        newest = self.bars[-1]
        start = newest.start_ns - newest.start_ns % width
        parts = []
        for b in reversed(self.bars):
            if b.start_ns < start:
                break
            parts.append(b)
        parts.reverse()
        first = parts[0]
        return Bar(start, first.open, max(b.high for b in parts), min(b.low for b in parts), newest.close,
                   sum(b.volume for b in parts), sum(b.quote_volume for b in parts), sum(b.count for b in parts),
                   sum(b.taker_buy_volume for b in parts), sum(b.taker_buy_quote for b in parts), first.first_id,
                   newest.last_id)

    def bars_of(self, minutes: int, start_ns: int | None = None, end_ns: int | None = None) -> list[Bar]:
        """Bars of ``minutes`` minutes (aggregated from the one-minute bars), oldest first, within the range."""
        out: list[Bar] = []
        width = minutes * MINUTE_NS
        for b in self.bars:
            start = b.start_ns - b.start_ns % width
            if (start_ns is not None and start + width <= start_ns) or (end_ns is not None and start > end_ns):
                continue
            if out and out[-1].start_ns == start:
                agg = out[-1]
                agg.high, agg.low, agg.close = max(agg.high, b.high), min(agg.low, b.low), b.close
                agg.volume += b.volume
                agg.quote_volume += b.quote_volume
                agg.count += b.count
                agg.taker_buy_volume += b.taker_buy_volume
                agg.taker_buy_quote += b.taker_buy_quote
                agg.last_id = b.last_id
            else:
                out.append(Bar(start, b.open, b.high, b.low, b.close, b.volume, b.quote_volume, b.count,
                               b.taker_buy_volume, b.taker_buy_quote, b.first_id, b.last_id))
        return out

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
        self._record(trade)
        return trade
