"""Plays the market model in real time: each event is sent at its scheduled time and stamped with it.

Every emulated instrument (``MarketConfig.symbols``) has its top-of-book topics: Binance
``binance:<symbol lower>@bookTicker`` and Hyperliquid ``hyperliquid:bbo:<COIN>`` (:func:`book_ticker_topic`,
:func:`bbo_topic`), each frame naming its instrument and printing its numbers on its own grid. Every emulated
Binance symbol also has its own depth book (``<symbol lower>@depth*`` streams and the REST snapshot, each chained on
its own update ids). The other streams (trades, tickers, mark price, l2Book, allMids, activeAssetCtx) stay BTC's:
they are fed only when BTC is emulated.

The driver sleeps until an event's scheduled time and then publishes it (the last ~1.5 ms with the kernel's
nanosecond timer, not the event loop's millisecond one: caerus.sim.lateness measures what is left); when it wakes
late (a busy machine),
it still stamps the scheduled time, so the lateness reaches the feeds as information age (no coordinated
omission). Periodic snapshot streams (Binance partial depth and mark price, Hyperliquid l2Book) come from the
latest state on their own cadence and are only formatted when someone subscribed.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from dataclasses import dataclass

from caerus.sim import frames
from caerus.sim.depth import DepthBook, DepthEvent
from caerus.sim.hub import Topics
from caerus.sim.lateness import Lateness
from caerus.sim.market import BinanceQuote, HlBlock, MarketModel
from caerus.sim.order_entry import BookSink
from caerus.sim.tape import INTERVAL_MINUTES, Tape

BOOK_TICKER = "binance:btcusdt@bookTicker"
AGG_TRADE = "binance:btcusdt@aggTrade"
TRADE = "binance:btcusdt@trade"
HL_BBO = "hyperliquid:bbo:BTC"
HL_L2 = "hyperliquid:l2Book:BTC"
#: (topic, interval, minutes) of BTCUSDT's kline streams: an event after each trade, as the venue sends updates
KLINES = tuple((f"binance:btcusdt@kline_{i}", i, m) for i, m in INTERVAL_MINUTES.items())
HL_L2_FAST = "hyperliquid:l2Book:BTC:fast"
HL_TRADES = "hyperliquid:trades:BTC"
HL_ALL_MIDS = "hyperliquid:allMids"
HL_ASSET_CTX = "hyperliquid:activeAssetCtx:BTC"

def depth_periodic(binance_symbol: str) -> tuple[tuple[str, int, str], ...]:
    """A symbol's periodic depth streams: (topic key, period ms, "depthN" partial book or "depth" diff)."""
    sym = binance_symbol.lower()
    return tuple((f"binance:{sym}@depth{n}@{speed}ms", speed, f"depth{n}")
                 for n in ("5", "10", "20", "") for speed in (100, 250, 500))


def depth_prefix(binance_symbol: str) -> str:
    """The prefix every depth topic of a symbol starts with (``binance:ethusdt@depth``)."""
    return f"binance:{binance_symbol.lower()}@depth"


def depth_0ms(binance_symbol: str) -> tuple[tuple[str, str], ...]:
    """A symbol's per-quote partial depth streams: (topic key, "depthN")."""
    sym = binance_symbol.lower()
    return tuple((f"binance:{sym}@depth{n}@0ms", f"depth{n}") for n in ("5", "10", "20", ""))


# (topic key, period ms, what) for periodic streams: "depthN" partial book, "depth" diff, tickers, marks, l2Book.
# BTCUSDT's; every other emulated symbol adds its own depth_periodic() in the driver.
PERIODIC: tuple[tuple[str, int, str], ...] = (
    *depth_periodic("BTCUSDT"),
    ("binance:btcusdt@markPrice", 3000, "mark"),
    ("binance:btcusdt@markPrice@1s", 1000, "mark"),
    ("binance:btcusdt@miniTicker", 500, "miniTicker"),
    ("binance:btcusdt@ticker", 500, "ticker"),
    (HL_L2_FAST, 500, "l2fast"),
    (HL_L2, 5000, "l2"),
)
DEPTH_PREFIX = depth_prefix("BTCUSDT")
DEPTH_IDLE_S = 10.0  # keep a book this long after its last REST snapshot with no depth subscriber
#: how early the event loop is asked to wake before an event (its timer's resolution is one millisecond)
PRECISE_S = 0.0015
DEPTH_0MS = depth_0ms("BTCUSDT")


def book_ticker_topic(binance_symbol: str) -> str:
    """The topic carrying a symbol's bookTicker frames (``binance:ethusdt@bookTicker``)."""
    return f"binance:{binance_symbol.lower()}@bookTicker"


def bbo_topic(coin: str) -> str:
    """The topic carrying a coin's bbo frames (``hyperliquid:bbo:ETH``)."""
    return f"hyperliquid:bbo:{coin}"


@dataclass
class _SymbolDepth:
    """One emulated Binance symbol's book and whether it is kept (read in the last DEPTH_IDLE_S, or subscribed)."""

    index: int  # the instrument's index in the model
    book: DepthBook
    prefix: str  # depth_prefix() of the symbol
    zero_ms: tuple[tuple[str, str], ...]  # depth_0ms() of the symbol
    live: bool = False
    asked: float = 0.0  # time.monotonic() of the last read


class MarketDriver:
    """Runs ``MarketModel.events()`` against the wall clock and publishes frames to ``topics``."""

    def __init__(self, model: MarketModel, topics: Topics, book_sink: BookSink | None = None,
                 silence: tuple[int, int] | None = None) -> None:
        self.model = model
        # (instrument index, from t_ns): that instrument's book frames stop at that time on both venues while the
        # others flow (scenario silent-instrument); (-1, never) when nothing is silenced
        self._silent, self._silent_from = silence if silence is not None else (-1, 1 << 62)
        self.topics = topics
        self.book_sink = book_sink  # order entry's view of the top of book (fills against the emulated market)
        self.epoch_ns = 0
        self.instruments = model.instruments  # index = the events' ``symbol``
        self.formats = [frames.instrument_format(i) for i in self.instruments]
        self.bn_topics = [book_ticker_topic(i.binance_symbol) if i.binance_symbol else None for i in self.instruments]
        self.hl_topics = [bbo_topic(i.name) if i.hl_asset is not None else None for i in self.instruments]
        self._hl_index = {i.name: k for k, i in enumerate(self.instruments) if i.hl_asset is not None}
        self._bn_index = {i.binance_symbol: k for k, i in enumerate(self.instruments) if i.binance_symbol}
        self._btc = next((k for k, i in enumerate(self.instruments) if i.name == "BTC"), None)
        self.quotes: dict[int, BinanceQuote] = {}  # instrument index -> its newest quote
        self.blocks: dict[int, HlBlock] = {}  # instrument index -> its newest block top
        self.last_quote: BinanceQuote | None = None  # BTC's (the single-instrument streams and REST read it)
        self.last_block: HlBlock | None = None  # BTC's
        # Ready once every emulated Binance symbol has a quote and Hyperliquid had a block (if it lists any).
        self._unquoted = {k for k, t in enumerate(self.bn_topics) if t is not None}
        self._blockless = any(t is not None for t in self.hl_topics)
        self.published = 0
        self.late_max_ns = 0
        # One book per emulated Binance symbol (index -> its book): every depth stream and REST snapshot of the
        # symbol reads it. BTC's keeps the session seed; another symbol's is seeded apart, so books move on their own.
        self._depths: dict[int, _SymbolDepth] = {}
        self._depth_keys: dict[str, _SymbolDepth] = {}  # every depth topic key -> its symbol's book
        self._periodic: list[tuple[str, int, str]] = [p for p in PERIODIC if not p[2].startswith("depth")]
        for k, inst in enumerate(self.instruments):
            if not inst.binance_symbol:
                continue
            sym = inst.binance_symbol
            seed = model.cfg.seed if k == self._btc else model.cfg.seed * 1_000_003 + k + 1
            d = _SymbolDepth(k, DepthBook(seed, tick=float(inst.tick), step=float(inst.step)), depth_prefix(sym),
                             depth_0ms(sym))
            self._depths[k] = d
            self._periodic.extend(depth_periodic(sym))
            for key in [p[0] for p in depth_periodic(sym)] + [z[0] for z in d.zero_ms]:
                self._depth_keys[key] = d
        # BTC's book (or a fresh unread one when BTC is not emulated): what the single-book callers read
        btc = self._depths.get(self._btc) if self._btc is not None else None
        self.depth = btc.book if btc is not None else DepthBook(model.cfg.seed)
        self.binance_tape = Tape(first_id=1_000_001)
        self.hl_tape = Tape(first_id=500_000_001)
        self._depth_prev: dict[str, int] = {}  # depth topic -> ``u`` of its last event (only while subscribed)
        # A book costs ~100 us a quote to keep, so each is kept only while read: one of its symbol's depth streams
        # is subscribed or its REST snapshot was asked for in the last DEPTH_IDLE_S (the fleet's bookTicker path
        # never pays for it).
        # Set once both venues have a book: the emulator reports ready only then, so a client that races a busy
        # machine's start-up never finds a venue without a market (the real ones always have one).
        self.primed = asyncio.Event()
        self.lateness = Lateness()  # per top-of-book frame sent: actual send - scheduled time
        topics.on_subscribe = self._on_subscribe

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.epoch_ns = time.time_ns()
        self.binance_tape.offset_ns = self.hl_tape.offset_ns = self.epoch_ns  # klines / candles on wall minutes
        t0 = loop.time()
        events = self.model.events()
        ev = next(events)
        timers = [(period * 1_000_000, period * 1_000_000, key, what) for key, period, what in self._periodic]
        heapq.heapify(timers)
        late_run = 0
        while True:
            periodic = timers[0][0] < ev.t_ns
            t_ns = timers[0][0] if periodic else ev.t_ns
            delay = t0 + t_ns / 1e9 - loop.time()
            if delay > 0:
                # The loop's own timer wakes up to a millisecond late (epoll takes whole milliseconds, rounded
                # up): it is asked to wake PRECISE_S early, and the rest is slept on this thread with the
                # kernel's nanosecond timer. The loop is blocked at most PRECISE_S per event (sleeping, no CPU).
                if delay > PRECISE_S:
                    await asyncio.sleep(delay - PRECISE_S)
                    delay = t0 + t_ns / 1e9 - loop.time()
                if delay > 0:
                    time.sleep(delay)
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
                else:
                    self._depth_prev.pop(key, None)  # a later subscriber starts a fresh chain
                    if what.startswith("depth"):
                        d = self._depth_keys[key]
                        if d.live:
                            self._depth_maybe_idle(d)
                continue
            if isinstance(ev, BinanceQuote):
                self._binance(ev)
            else:
                self._hyperliquid(ev)
            ev = next(events)

    def _prime(self) -> None:
        if not self._unquoted and not self._blockless:
            self.primed.set()

    def _binance(self, q: BinanceQuote) -> None:
        k = q.symbol
        self.quotes[k] = q
        if self._unquoted:
            self._unquoted.discard(k)
            self._prime()
        if self.book_sink is not None:
            self.book_sink("binance", q.bid, q.bid_qty, q.ask, q.ask_qty, symbol=self.instruments[k].name)
        topic = self.bn_topics[k]
        if k == self._silent and q.t_ns >= self._silent_from:
            topic = None
        if topic is not None and self.topics.has(topic):
            self.topics.publish(topic, frames.binance_book_ticker(q, self.epoch_ns, self.formats[k]))
            self.lateness.record("binance", time.time_ns() - self.epoch_ns - q.t_ns)
        self.published += 1
        d = self._depths.get(k)
        if d is not None:
            if d.live:
                d.book.apply(q)
            for key, what in d.zero_ms:
                if self.topics.has(key):
                    self._snapshot(key, what, q.t_ns)
        if k != self._btc:
            return
        prev, self.last_quote = self.last_quote, q
        if prev is not None:
            trade = self.binance_tape.on_top(q.t_ns, (prev.bid, prev.bid_qty), (prev.ask, prev.ask_qty), q.bid,
                                             q.ask)
            if trade is not None:
                if self.topics.has(AGG_TRADE):
                    self.topics.publish(AGG_TRADE, frames.binance_agg_trade(trade, self.epoch_ns))
                if self.topics.has(TRADE):
                    self.topics.publish(TRADE, frames.binance_trade(trade, self.epoch_ns))
                for key, interval, minutes in KLINES:
                    if self.topics.has(key):
                        bar = self.binance_tape.current_bar(minutes)
                        if bar is not None:
                            self.topics.publish(key, frames.binance_kline(bar, interval, minutes,
                                                                          frames.ms(self.epoch_ns, trade.t_ns)))

    def _hyperliquid(self, b: HlBlock) -> None:
        k = b.symbol
        self.blocks[k] = b
        if self._blockless:
            self._blockless = False
            self._prime()
        if b.changed:
            if self.book_sink is not None and b.bid is not None and b.ask is not None:
                self.book_sink("hyperliquid", b.bid.px, b.bid.sz, b.ask.px, b.ask.sz,
                               symbol=self.instruments[k].name)
            topic = self.hl_topics[k]
            if k == self._silent and b.t_ns >= self._silent_from:
                topic = None
            if topic is not None and self.topics.has(topic):
                self.topics.publish(topic, frames.hl_bbo(b, self.epoch_ns, self.formats[k]))
                self.lateness.record("hyperliquid", time.time_ns() - self.epoch_ns - b.t_ns)
            self.published += 1
        if k != self._btc:
            return
        prev, self.last_block = self.last_block, b
        if b.changed:
            if prev is not None and None not in (prev.bid, prev.ask, b.bid, b.ask):
                assert prev.bid is not None and prev.ask is not None and b.bid is not None and b.ask is not None
                trade = self.hl_tape.on_top(b.t_ns, (prev.bid.px, prev.bid.sz), (prev.ask.px, prev.ask.sz),
                                            b.bid.px, b.ask.px)
                if trade is not None and self.topics.has(HL_TRADES):
                    self.topics.publish(HL_TRADES, frames.hl_trades([trade], self.epoch_ns))
            if self.topics.has(HL_ALL_MIDS):
                mids = frames.hl_all_mids(b)
                if mids is not None:
                    self.topics.publish(HL_ALL_MIDS, mids)
            if self.topics.has(HL_ASSET_CTX):
                self.topics.publish(HL_ASSET_CTX, frames.hl_active_asset_ctx(b, self.hl_tape.stats))

    def quote_of(self, binance_symbol: str) -> BinanceQuote | None:
        """The newest quote of an emulated Binance symbol (None: not emulated, or no quote yet)."""
        k = self._bn_index.get(binance_symbol.upper())
        return self.quotes.get(k) if k is not None else None

    def block_of(self, coin: str) -> HlBlock | None:
        """The newest block top of an emulated Hyperliquid coin (None: not emulated, or no block yet)."""
        k = self._hl_index.get(coin)
        return self.blocks.get(k) if k is not None else None

    def format_of(self, index: int) -> frames.InstrumentFormat:
        return self.formats[index]

    # -- the Binance books, kept while read ----------------------------------------------------------------------
    def _on_subscribe(self, key: str, sub: object) -> None:
        d = self._depth_keys.get(key)
        if d is not None:
            book = self._read(d)
            # A new chain starts at the book as it is now, so its first event carries every update since the
            # subscription (``pu`` = the id here). Starting at the next event's newest update alone would skip
            # the updates in between, and a client that took its REST snapshot meanwhile (ccxt does, as the
            # venue's docs say) would see a gap and drop the book.
            if book.log:
                self._depth_prev.setdefault(key, book.update_id)

    def book(self, binance_symbol: str = frames.SYMBOL) -> DepthBook:
        """An emulated symbol's Binance book, brought up to its newest quote (rebuilt there if it was not kept while
        unread). KeyError when the symbol is not emulated."""
        k = self._bn_index.get(binance_symbol.upper())
        if k is None:
            raise KeyError(f"{binance_symbol} is not emulated in this session")
        return self._read(self._depths[k])

    def _read(self, d: _SymbolDepth) -> DepthBook:
        d.asked = time.monotonic()
        if not d.live:
            d.live = True
            q = self.quotes.get(d.index)
            if q is not None:
                d.book.apply(q, rebuild=True)
        return d.book

    def _depth_maybe_idle(self, d: _SymbolDepth) -> None:
        if time.monotonic() - d.asked > DEPTH_IDLE_S and not self.topics.keys_with_prefix(d.prefix):
            d.live = False

    def current(self, key: str) -> str | None:
        """The current Hyperliquid bbo / l2Book frame for ``key`` (what the venue sends right after subscribing)."""
        if key.startswith("hyperliquid:bbo:"):
            block = self.block_of(key[len("hyperliquid:bbo:"):])
            return frames.hl_bbo(block, self.epoch_ns, self.formats[block.symbol]) if block is not None else None
        b = self.last_block
        if b is None:
            return None
        if key in (HL_L2, HL_L2_FAST):
            return frames.hl_l2_book(b, b.t_ns, self.epoch_ns, 5 if key == HL_L2_FAST else 20)
        if key == HL_ALL_MIDS:
            return frames.hl_all_mids(b)
        if key == HL_ASSET_CTX:
            return frames.hl_active_asset_ctx(b, self.hl_tape.stats)
        if key == HL_TRADES and self.hl_tape.last is not None:  # the venue answers with the latest trades
            return frames.hl_trades([self.hl_tape.last], self.epoch_ns)
        return None

    def _snapshot(self, key: str, what: str, t_ns: int) -> None:
        if what.startswith("depth"):
            self._depth(key, what[5:], t_ns)
        elif what == "mark":
            if self.last_quote is not None:
                self.topics.publish(key, frames.binance_mark_price(self.last_quote, t_ns, self.epoch_ns))
        elif what == "miniTicker":
            if self.binance_tape.stats.count:
                self.topics.publish(key, frames.binance_mini_ticker(self.binance_tape.stats, t_ns, self.epoch_ns))
        elif what == "ticker":
            if self.binance_tape.stats.count:
                self.topics.publish(key, frames.binance_ticker(self.binance_tape.stats, t_ns, self.epoch_ns))
        elif self.last_block is not None:
            depth = 5 if what == "l2fast" else 20
            self.topics.publish(key, frames.hl_l2_book(self.last_block, t_ns, self.epoch_ns, depth))

    def _depth(self, key: str, levels: str, t_ns: int) -> None:
        """One event on depth stream ``key``: the merged diff since its last event (``levels`` empty), or the top
        ``levels`` of the book; nothing when the book has not changed since. ``pu`` chains to the last event."""
        d = self._depth_keys[key]
        book = self._read(d)
        last = self._depth_prev.get(key)
        if not book.log or last == book.update_id:
            return
        if levels:
            prev = last if last is not None else book.log[-1].prev_id
            bids, asks = book.top(int(levels))
            ev: DepthEvent | None = DepthEvent(prev + 1, book.update_id, prev, book.t_ns, tuple(bids), tuple(asks))
        else:
            ev = book.changes_since(last)
        if ev is None:
            return
        self._depth_prev[key] = ev.last_id
        self.topics.publish(key, frames.binance_depth(ev, t_ns, self.epoch_ns, self.formats[d.index]))
