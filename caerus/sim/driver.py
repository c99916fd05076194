"""Plays the market model in real time: each event is sent at its scheduled time and stamped with it.

The driver sleeps until an event's scheduled time and then publishes it; when it wakes late (a busy machine),
it still stamps the scheduled time, so the lateness reaches the feeds as information age (no coordinated
omission). Periodic snapshot streams (Binance partial depth and mark price, Hyperliquid l2Book) come from the
latest state on their own cadence and are only formatted when someone subscribed.
"""

from __future__ import annotations

import asyncio
import heapq
import time

from caerus.sim import frames
from caerus.sim.hub import Topics
from caerus.sim.market import BinanceQuote, HlBlock, MarketModel
from caerus.sim.order_entry import BookSink

BOOK_TICKER = "binance:btcusdt@bookTicker"
AGG_TRADE = "binance:btcusdt@aggTrade"
HL_BBO = "hyperliquid:bbo:BTC"
HL_L2 = "hyperliquid:l2Book:BTC"
HL_L2_FAST = "hyperliquid:l2Book:BTC:fast"

# (topic key, period ms, what) for periodic snapshot streams
PERIODIC: tuple[tuple[str, int, str], ...] = (
    *(
        (f"binance:btcusdt@depth{n}@{speed}ms", speed, f"depth{n}")
        for n in (5, 10, 20)
        for speed in (100, 250, 500)
    ),
    ("binance:btcusdt@markPrice", 3000, "mark"),
    ("binance:btcusdt@markPrice@1s", 1000, "mark"),
    (HL_L2_FAST, 500, "l2fast"),
    (HL_L2, 5000, "l2"),
)
DEPTH_0MS = tuple(f"binance:btcusdt@depth{n}@0ms" for n in (5, 10, 20))


class MarketDriver:
    """Runs ``MarketModel.events()`` against the wall clock and publishes frames to ``topics``."""

    def __init__(self, model: MarketModel, topics: Topics, book_sink: BookSink | None = None) -> None:
        self.model = model
        self.topics = topics
        self.book_sink = book_sink  # order entry's view of the top of book (fills against the emulated market)
        self.epoch_ns = 0
        self.last_quote: BinanceQuote | None = None
        self.last_block: HlBlock | None = None
        self.published = 0
        self.late_max_ns = 0
        self._trade_id = 1_000_000
        self._depth_prev: dict[str, int] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.epoch_ns = time.time_ns()
        t0 = loop.time()
        events = self.model.events()
        ev = next(events)
        timers = [(period * 1_000_000, period * 1_000_000, key, what) for key, period, what in PERIODIC]
        heapq.heapify(timers)
        late_run = 0
        while True:
            periodic = timers[0][0] < ev.t_ns
            t_ns = timers[0][0] if periodic else ev.t_ns
            delay = t0 + t_ns / 1e9 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
                late_run = 0
            else:
                self.late_max_ns = max(self.late_max_ns, int(-delay * 1e9))
                late_run += 1
                if late_run % 64 == 0:  # catching up a long backlog: let handshakes and readers run
                    await asyncio.sleep(0)
            if periodic:
                due, period, key, what = heapq.heappop(timers)
                heapq.heappush(timers, (due + period, period, key, what))
                if self.topics.has(key):
                    self._snapshot(key, what, due)
                continue
            if isinstance(ev, BinanceQuote):
                self._binance(ev)
            else:
                self._hyperliquid(ev)
            ev = next(events)

    def _binance(self, q: BinanceQuote) -> None:
        prev, self.last_quote = self.last_quote, q
        if self.book_sink is not None:
            self.book_sink("binance", q.bid, q.bid_qty, q.ask, q.ask_qty)
        self.topics.publish(BOOK_TICKER, frames.binance_book_ticker(q, self.epoch_ns))
        self.published += 1
        for key in DEPTH_0MS:
            if self.topics.has(key):
                self._snapshot(key, key.split("@")[1], q.t_ns)
        if prev is not None and (q.bid != prev.bid or q.ask != prev.ask) and self.topics.has(AGG_TRADE):
            self._trade_id += 1
            self.topics.publish(AGG_TRADE, frames.binance_agg_trade(q, prev, self._trade_id, self.epoch_ns))

    def _hyperliquid(self, b: HlBlock) -> None:
        self.last_block = b
        if b.changed:
            if self.book_sink is not None and b.bid is not None and b.ask is not None:
                self.book_sink("hyperliquid", b.bid.px, b.bid.sz, b.ask.px, b.ask.sz)
            self.topics.publish(HL_BBO, frames.hl_bbo(b, self.epoch_ns))
            self.published += 1

    def current(self, key: str) -> str | None:
        """The current Hyperliquid bbo / l2Book frame for ``key`` (what the venue sends right after subscribing)."""
        b = self.last_block
        if b is None:
            return None
        if key == HL_BBO:
            return frames.hl_bbo(b, self.epoch_ns)
        if key in (HL_L2, HL_L2_FAST):
            return frames.hl_l2_book(b, b.t_ns, self.epoch_ns, 5 if key == HL_L2_FAST else 20)
        return None

    def _snapshot(self, key: str, what: str, t_ns: int) -> None:
        if what.startswith("depth"):
            q = self.last_quote
            if q is None:
                return
            prev = self._depth_prev.get(key)
            if prev == q.update_id:
                return  # nothing changed since the last snapshot on this stream
            if prev is None:  # the stream's first snapshot: it still covers a few updates and chains to an older one
                prev = q.update_id - 4
            first = prev + 1
            self._depth_prev[key] = q.update_id
            text = frames.binance_depth(q, t_ns, self.epoch_ns, int(what[5:]), first, prev)
            self.topics.publish(key, text)
        elif what == "mark":
            if self.last_quote is not None:
                self.topics.publish(key, frames.binance_mark_price(self.last_quote, t_ns, self.epoch_ns))
        elif self.last_block is not None:
            depth = 5 if what == "l2fast" else 20
            self.topics.publish(key, frames.hl_l2_book(self.last_block, t_ns, self.epoch_ns, depth))
