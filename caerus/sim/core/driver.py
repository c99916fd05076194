"""Plays the market model in real time: each event is sent at its scheduled time and stamped with it.

Every emulated instrument (``MarketConfig.symbols``) has the market data BTC has, each frame naming its instrument
and printing its numbers on its own grid: Binance ``<symbol>@bookTicker``, depth (its own book, streams and REST
snapshot chained on its own update ids), ``trade`` / ``aggTrade`` / ``kline_<i>`` / ``miniTicker`` / ``ticker``
(from its own trade tape, caerus.sim.core.instrument_feeds) and ``markPrice[@1s]``; Hyperliquid ``bbo``, ``l2Book``,
``trades``, ``candle`` and ``activeAssetCtx`` per coin, and ``allMids`` carrying every emulated coin's mid (one
frame per block in which a top changed). A depth book or a tape other than BTC's is kept only while read.

The driver sleeps until an event's scheduled time and then publishes it (the last ~1.5 ms with the kernel's
nanosecond timer, its thread's timer slack at 1 ns, not the event loop's millisecond one: caerus.sim.core.lateness
measures what is left); when it wakes late (a busy machine), it still stamps the scheduled time, so the lateness
reaches the feeds as information age (no coordinated omission). Periodic snapshot streams (Binance partial depth and
mark price, Hyperliquid l2Book) come from the latest state on their own cadence and are only formatted when someone
subscribed; a periodic stream nobody reads is passed over when the loop reaches it, without a wake of its own.

At the moment a top-of-book frame goes out the driver does little more than the send (issue 48: on the 2-vCPU
plan it shares the strategy's CPU, and whatever it runs then, the strategy waits for). The market's events are
generated ahead of their time and their bookTicker / bbo frames encoded ahead (``_fill``, between frames); at the
event's time it changes the state an order can act on (the top its orders fill against, the marks: before the
frame, as a venue does), sends the frame and blocks. The event's other bookkeeping (depth book, trade tape and the
frames they feed: trades, klines, depth diffs, ``allMids``) runs in one batch between frames (``settle``),
HANDOFF_S after the send or just before the next thing due when that is sooner, and before anything later is sent
or read: every read of that state (REST, a subscription's first frame) settles first, so nobody sees it behind the
last frame sent. The frames the batch sends carry their event's scheduled time like any other.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from caerus.ipc.wait import SLEEP_TIMER_SLACK_NS, set_timer_slack
from caerus.sim.core import frames
from caerus.sim.core.capture_file import RealFrame, RealQuote
from caerus.sim.core.depth import DepthBook, DepthEvent
from caerus.sim.core.hub import Topics
from caerus.sim.core.instrument_feeds import TapeFeed, binance_feed, hl_feed
from caerus.sim.core.lateness import Lateness
from caerus.sim.core.market import BinanceQuote, HlBlock, MarketModel
from caerus.sim.core.marks import BINANCE_FUNDING, HL_FUNDING, PREMIUM_SAMPLE_NS, Marks
from caerus.sim.core.order_entry import BookSink
from caerus.sim.core.replay_market import ReplayMarket
from caerus.sim.core.tape import Tape

BOOK_TICKER = "binance:btcusdt@bookTicker"
HL_BBO = "hyperliquid:bbo:BTC"
HL_ALL_MIDS = "hyperliquid:allMids"
KEEP_MS = 1000  # how often the tapes that nobody reads any more are dropped
#: Binance USD-M ``<symbol>@kline_<interval>``: "Update Speed: 250ms" (Kline/Candlestick Streams, USDS-M futures
#: WebSocket market streams, developers.binance.com): a symbol's klines are pushed on this grid of model time,
#: each carrying every trade up to its push (the trades in between are coalesced)
KLINE_PUSH_MS = 250

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


def binance_periodic(binance_symbol: str) -> tuple[tuple[str, int, str], ...]:
    """A symbol's periodic streams other than depth: (topic key, period ms, what): mark price, tickers."""
    sym = binance_symbol.lower()
    return ((f"binance:{sym}@markPrice", 3000, "mark"), (f"binance:{sym}@markPrice@1s", 1000, "mark"),
            (f"binance:{sym}@miniTicker", 500, "miniTicker"), (f"binance:{sym}@ticker", 500, "ticker"))


def kline_timer(binance_symbol: str) -> str:
    """The key of a symbol's kline push timer (not a topic: the tick pushes each subscribed ``kline_<i>``)."""
    return f"binance:{binance_symbol.lower()}@kline"


def hl_periodic(coin: str) -> tuple[tuple[str, int, str], ...]:
    """A coin's periodic channels: (topic key, period ms, what): ``l2Book`` (20 levels / 5 s, fast 5 / 0.5 s)."""
    return ((f"hyperliquid:l2Book:{coin}:fast", 500, "l2fast"), (f"hyperliquid:l2Book:{coin}", 5000, "l2"))


DEPTH_IDLE_S = 10.0  # keep a book this long after its last REST snapshot with no depth subscriber
#: how often a replay waiting for its subscribers refreshes the priming tops' time
GATE_TICK_S = 0.01
#: how early the event loop is asked to wake before an event (its timer's resolution is one millisecond)
PRECISE_S = 0.0015
#: after a top-of-book frame goes out, the CPU is left to its readers at least this long before the event's other
#: bookkeeping runs (the feed reads the frame and the strategy the book within ~0.1 ms here); the batch still runs
#: before the next frame is sent
HANDOFF_S = 0.001
#: the market is generated (and its top-of-book frames encoded) this far ahead of the next event, time permitting
#: (one event takes ~50 us here, more when the machine is loaded); the event after the next one always
AHEAD_NS = 100_000_000

Event = BinanceQuote | HlBlock | RealFrame


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

    def __init__(self, model: MarketModel | ReplayMarket, topics: Topics, book_sink: BookSink | None = None,
                 silence: tuple[int, int] | None = None, yield_after_top: bool = False,
                 start_gate: Callable[[], Awaitable[None]] | None = None) -> None:
        self.model = model
        # A replayed capture (caerus.sim.core.replay_market): the clock starts once start_gate returns (the fleet has
        # subscribed), the Binance frames are the capture's own and its trades replace the tape's ``trade`` frames
        self.start_gate = start_gate
        self.real_trades = isinstance(model, ReplayMarket)
        self.real_served = 0  # real frames sent to a subscriber
        self.real_recv_ns = 0  # the receive stamp of the last one (how far into the capture the clients saw)
        self.started_ns = 0  # wall time the replay's clock started (0: not a replay, or not started)
        self.finished = asyncio.Event()
        # Give the CPU up after each top-of-book frame sent (see _top_sent): set when the emulator shares a CPU with
        # the fleet (caerus.plan.FleetPlan.emulator_shares_hot_cpu).
        self.yield_after_top = yield_after_top
        self.yields = 0
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
        self._periodic: list[tuple[str, int, str]] = [("keep", KEEP_MS, "keep")]
        self._periodic_of: dict[str, int] = {}  # periodic topic key (not depth) -> its instrument's index
        # Each instrument's trade tapes (index -> feed), BTC's kept for the session, the others while read.
        self._bn_feeds: dict[int, TapeFeed] = {}
        self._hl_feeds: dict[int, TapeFeed] = {}
        self._feed_keys: dict[str, TapeFeed] = {}  # every tape-fed topic key -> its feed
        # Each instrument's mark, index, premium and funding per venue (caerus.sim.core.marks): the markPrice streams,
        # premiumIndex / fundingRate, the asset contexts, fundingHistory and the desk's bands and PnL all read them
        self.bn_marks: dict[int, Marks] = {}
        self.hl_marks: dict[int, Marks] = {}
        self._periodic.append(("premium", PREMIUM_SAMPLE_NS // 1_000_000, "premium"))
        for k, inst in enumerate(self.instruments):
            if inst.hl_asset is not None:
                f = self._hl_feeds[k] = hl_feed(k, inst.name, always=k == self._btc)
                self.hl_marks[k] = Marks(HL_FUNDING)
                self._feed_keys.update(dict.fromkeys(f.topics.values(), f))
                for p in hl_periodic(inst.name):
                    self._periodic.append(p)
                    self._periodic_of[p[0]] = k
            if not inst.binance_symbol:
                continue
            sym = inst.binance_symbol
            f = self._bn_feeds[k] = binance_feed(k, sym, always=k == self._btc)
            self.bn_marks[k] = Marks(BINANCE_FUNDING)
            self._feed_keys.update(dict.fromkeys(f.topics.values(), f))
            self._periodic.append((kline_timer(sym), KLINE_PUSH_MS, "klines"))
            self._periodic_of[kline_timer(sym)] = k
            for p in binance_periodic(sym):
                self._periodic.append(p)
                self._periodic_of[p[0]] = k
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
        # BTC's tapes (fresh unread ones when BTC is not emulated)
        self.binance_tape = self._bn_feeds[self._btc].tape if self._btc in self._bn_feeds else binance_feed(
            -1, "BTCUSDT", True).tape
        self.hl_tape = self._hl_feeds[self._btc].tape if self._btc in self._hl_feeds else hl_feed(-1, "BTC", True).tape
        # allMids goes out once per block (after its last coin), when some coin's top changed in it
        self._hl_last = max((k for k, i in enumerate(self.instruments) if i.hl_asset is not None), default=-1)
        self._mids_changed = False
        self._depth_prev: dict[str, int] = {}  # depth topic -> ``u`` of its last event (only while subscribed)
        # A book costs ~100 us a quote to keep, so each is kept only while read: one of its symbol's depth streams
        # is subscribed or its REST snapshot was asked for in the last DEPTH_IDLE_S (the fleet's bookTicker path
        # never pays for it).
        # Set once both venues have a book: the emulator reports ready only then, so a client that races a busy
        # machine's start-up never finds a venue without a market (the real ones always have one).
        self.primed = asyncio.Event()
        self.lateness = Lateness()  # per top-of-book frame sent: actual send - scheduled time
        # The market ahead of its time: events generated, each with its top-of-book frame encoded (None: it sends
        # none), from the model's iterator (None: not started, or a replay that ended)
        self._ahead: collections.deque[tuple[Event, str | None]] = collections.deque()
        self._source: Iterator[Event] | None = None
        # events sent whose other bookkeeping waits for the batch (settle): (event, its instrument's previous one)
        self._pending: list[tuple[Event, BinanceQuote | HlBlock | None]] = []
        self._sent_at = 0.0  # time.monotonic() of the last top-of-book frame sent
        self.settled = 0  # batches run
        topics.on_subscribe = self._on_subscribe

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        # The precise sleep below is the kernel's nanosecond timer only with no timer slack: by default the kernel
        # may fire it up to 50 us late (caerus.ipc.wait.set_timer_slack). This thread runs the loop and the sleeps.
        set_timer_slack(SLEEP_TIMER_SLACK_NS)
        self.epoch_ns = time.time_ns()
        for f in (*self._bn_feeds.values(), *self._hl_feeds.values()):
            f.tape.offset_ns = self.epoch_ns  # klines / candles on wall minutes
        t0 = loop.time()
        events = self.model.events()
        ev = next(events, None)
        t_start = 0
        if self.start_gate is not None:
            # A replay: the first events give both venues a book (the emulator is ready only then), then the clock
            # waits for the fleet's subscriptions and starts at the next event, so no frame is played to nobody.
            while ev is not None and not self.primed.is_set():
                self._event(ev)
                ev = next(events, None)
            gate = asyncio.ensure_future(self.start_gate())
            while not gate.done():
                # the priming tops are "now" until the clock starts: a subscriber's first snapshot (Hyperliquid sends
                # the current bbo / l2Book) carries a fresh time, not the driver's start
                self.epoch_ns = time.time_ns()
                await asyncio.wait({gate}, timeout=GATE_TICK_S)
            gate.result()
            t_start = ev.t_ns if ev is not None else 0
            self.epoch_ns = time.time_ns() - t_start
            for f in (*self._bn_feeds.values(), *self._hl_feeds.values()):
                f.tape.offset_ns = self.epoch_ns
            t0 = loop.time() - t_start / 1e9
            self.started_ns = time.time_ns()
        # from here on frames are encoded ahead: the epoch they are stamped from is final
        self._source = events
        if ev is not None:
            self._ahead.append((ev, self._encode(ev)))
        timers = [(t_start + period * 1_000_000, period * 1_000_000, key, what)
                  for key, period, what in self._periodic]
        heapq.heapify(timers)
        late_run = 0
        ahead = self._ahead
        while True:
            if not ahead:  # generating ahead fell behind (a burst, a busy machine): this one now
                self._generate()
                if not ahead:
                    break  # a replayed capture ended (the market model never ends)
            ev, text = ahead[0]
            if self._pending and ev.t_ns != self._pending[-1][0].t_ns:
                # Just after a frame went out the driver blocks at once: its readers (the feed, then the strategy
                # beside it on the 2-vCPU plan) have the CPU. The batch -- the bookkeeping of what was sent, the
                # periodic streams nobody reads, the market generated and encoded ahead -- runs HANDOFF_S later,
                # or before the next thing due when that is sooner. An event of the same instant (a block's next
                # coin) goes out first, in the same batch.
                # the first tick due before the event that someone reads (an idle one may sort first: passed over
                # below, it must not hide a live one behind it); the due-time test comes first, it is cheap
                t_ns = min((t[0] for t in timers if t[0] < ev.t_ns and not self._timer_idle(t[2], t[3])),
                           default=ev.t_ns)
                wake = min(t0 + t_ns / 1e9, self._sent_at + HANDOFF_S)
                if wake > loop.time():
                    await asyncio.sleep(wake - loop.time())
                self.settle()
            # a periodic stream nobody reads is passed over here, never waited for (it has nothing to send)
            while timers[0][0] < ev.t_ns and self._timer_idle(timers[0][2], timers[0][3]):
                self._timer(timers)
            periodic = timers[0][0] < ev.t_ns
            t_ns = timers[0][0] if periodic else ev.t_ns
            due = t0 + t_ns / 1e9
            self._fill(loop, due - PRECISE_S)
            delay = due - loop.time()
            if delay > 0:
                # The loop's own timer wakes up to a millisecond late (epoll takes whole milliseconds, rounded
                # up): it is asked to wake PRECISE_S early, and the rest is slept on this thread with the
                # kernel's nanosecond timer. The loop is blocked at most PRECISE_S per event (sleeping, no CPU).
                if delay > PRECISE_S:
                    await asyncio.sleep(delay - PRECISE_S)
                    delay = due - loop.time()
                if delay > 0:
                    time.sleep(delay)
                late_run = 0
            else:
                self.late_max_ns = max(self.late_max_ns, int(-delay * 1e9))
                late_run += 1
                if late_run % 64 == 0:  # catching up a long backlog: let handshakes and readers run
                    await asyncio.sleep(0)
            if periodic:
                self.settle()  # a snapshot, a premium sample or a kline push reads the state of every frame sent
                self._timer(timers)
                continue
            ahead.popleft()
            self._send(ev, text)
        self.settle()
        self.finished.set()  # a replayed capture ended: nothing more is sent (the market model never ends)

    # -- the market, generated and encoded ahead --------------------------------------------------------------
    def _generate(self) -> None:
        """One more event from the model, its top-of-book frame encoded."""
        ev = next(self._source, None) if self._source is not None else None
        if ev is None:
            self._source = None
            return
        self._ahead.append((ev, self._encode(ev)))

    def _fill(self, loop: asyncio.AbstractEventLoop, until: float) -> None:
        """Generate ahead until AHEAD_NS past the next event or until loop time ``until`` (before the next send),
        and always the event after the next one: once that one is sent, the driver knows when to wake next without
        generating anything."""
        ahead = self._ahead
        while self._source is not None and (len(ahead) < 2 or (ahead[-1][0].t_ns - ahead[0][0].t_ns < AHEAD_NS
                                                                and loop.time() < until)):
            self._generate()

    def _encode(self, ev: Event) -> str | None:
        """The top-of-book frame an event sends (bookTicker, bbo, a real capture's frame) if it has a topic; None
        when it sends none (an unchanged block). Whether anyone reads it is decided at its time."""
        if isinstance(ev, BinanceQuote):
            if self.bn_topics[ev.symbol] is None:
                return None
            if isinstance(ev, RealQuote) and ev.text is not None:  # the venue's own frame
                return ev.text.at(frames.ms(self.epoch_ns, ev.t_ns))
            return frames.binance_book_ticker(ev, self.epoch_ns, self.formats[ev.symbol])
        if isinstance(ev, HlBlock):
            if not ev.changed or self.hl_topics[ev.symbol] is None:
                return None
            return frames.hl_bbo(ev, self.epoch_ns, self.formats[ev.symbol])
        return ev.text.at(frames.ms(self.epoch_ns, ev.t_ns))

    # -- periodic streams ---------------------------------------------------------------------------------------
    def _timer_idle(self, key: str, what: str) -> bool:
        """A periodic stream nobody reads: its tick sends nothing and changes nothing a reader sees, so it is
        handled when the loop reaches it instead of at its time (no wake of its own)."""
        if what in ("keep", "premium"):
            return False
        if what == "klines":
            f = self._bn_feeds[self._periodic_of[key]]
            return not any(self.topics.has(k) for k, _, _ in f.intervals)
        return not self.topics.has(key)

    def _timer(self, timers: list[tuple[int, int, str, str]]) -> None:
        """The first periodic tick: rescheduled a period later, then handled."""
        due, period, key, what = heapq.heappop(timers)
        heapq.heappush(timers, (due + period, period, key, what))
        if what == "keep":
            self._keep_tapes()
        elif what == "premium":
            wall_ms = frames.ms(self.epoch_ns, due)
            for m in (*self.bn_marks.values(), *self.hl_marks.values()):
                m.sample(wall_ms)
        elif what == "klines":
            self._push_klines(self._bn_feeds[self._periodic_of[key]], due)
        elif self.topics.has(key):
            self._snapshot(key, what, due)
        else:
            self._depth_prev.pop(key, None)  # a later subscriber starts a fresh chain
            if what.startswith("depth"):
                d = self._depth_keys[key]
                if d.live:
                    self._depth_maybe_idle(d)

    # -- one event: what changes at its time, its frame, and the rest in the batch -------------------------------
    def _event(self, ev: Event) -> None:
        """Play one event at once, its bookkeeping included (the replay's priming, tests)."""
        self._send(ev, self._encode(ev))
        self.settle()

    def _send(self, ev: Event, text: str | None) -> None:
        """``ev``'s time: the state an order acts on changes, then its frame goes out; the rest waits for settle."""
        if isinstance(ev, BinanceQuote):
            self._send_binance(ev, text)
        elif isinstance(ev, HlBlock):
            self._send_hyperliquid(ev, text)
        else:
            self._real(ev, text)
        if isinstance(ev, RealQuote | RealFrame):
            topic = ev.topic if isinstance(ev, RealFrame) else self.bn_topics[ev.symbol]
            if topic is not None and self.topics.has(topic):  # played to someone (the fleet's feed)
                self.real_served += 1
                self.real_recv_ns = ev.recv_ns

    def settle(self) -> None:
        """Run the bookkeeping of every event sent so far, in order: depth books, trade tapes, and the frames they
        feed. Anything that reads that state calls this first."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self.settled += 1
        for ev, prev in pending:
            if isinstance(ev, BinanceQuote):
                self._book_binance(ev, prev)  # type: ignore[arg-type]
            elif isinstance(ev, HlBlock):
                self._book_hyperliquid(ev, prev)  # type: ignore[arg-type]

    def _real(self, ev: RealFrame, text: str | None) -> None:
        """A real frame other than a readable bookTicker (a trade): to its topic, the venue's text retimed."""
        if self.topics.has(ev.topic):
            self.topics.publish(ev.topic, text if text is not None else ev.text.at(frames.ms(self.epoch_ns, ev.t_ns)))
            if ev.topic.endswith("@bookTicker"):
                self._top_sent("binance", ev.t_ns)
        self.published += 1

    def _top_sent(self, venue: str, t_ns: int) -> None:
        """A top-of-book frame scheduled at ``t_ns`` was handed to its subscribers' sockets: record how late it went,
        then, with ``yield_after_top``, give the CPU up once. On a machine where the emulator shares a CPU with the
        strategy, the feed on the other CPU publishes the frame's book within microseconds; a venue runs on its
        own hardware, and its work after a send is not the fleet's latency. The driver blocks right after the send
        anyway (its bookkeeping waits for the batch, settle); the yield lets the reader in before the few steps to
        that. sched_yield costs the emulator one system call when nothing else is runnable; the time it waits
        otherwise shows in its own lateness, never hidden."""
        self.lateness.record(venue, time.time_ns() - self.epoch_ns - t_ns)
        self._sent_at = time.monotonic()  # the event loop's clock
        if self.yield_after_top:
            self.yields += 1
            os.sched_yield()

    def _prime(self) -> None:
        if not self._unquoted and not self._blockless:
            self.primed.set()

    def _binance(self, q: BinanceQuote) -> None:
        """One quote played at once, bookkeeping included (tests, benchmarks)."""
        self._event(q)

    def _send_binance(self, q: BinanceQuote, text: str | None) -> None:
        k = q.symbol
        prev = self.quotes.get(k)
        self.quotes[k] = q
        if k == self._btc:
            self.last_quote = q
        if self._unquoted:
            self._unquoted.discard(k)
            self._prime()
        # what an order acts on changes before the frame goes out, as on a venue: the top it fills against, the mark
        f = self._bn_feeds.get(k)
        last = f.tape.last if f is not None else None
        mark = self.bn_marks[k].on_top(q.t_ns, q.bid, q.ask, last.px if last is not None else None)
        if self.book_sink is not None:
            self.book_sink("binance", q.bid, q.bid_qty, q.ask, q.ask_qty, symbol=self.instruments[k].name, mark=mark)
        self._send_top("binance", k, self.bn_topics[k], q, text)
        self.published += 1
        self._pending.append((q, prev))

    def _send_top(self, venue: str, k: int, topic: str | None, ev: BinanceQuote | HlBlock, text: str | None) -> None:
        """Hand instrument ``k``'s top-of-book frame (pre-encoded ``text``, else encoded now) to its topic's
        subscribers; nothing while the scenario silences ``k``."""
        if k == self._silent and ev.t_ns >= self._silent_from:
            return
        if topic is not None and self.topics.has(topic):
            self.topics.publish(topic, text if text is not None else self._encode(ev) or "")
            self._top_sent(venue, ev.t_ns)

    def _book_binance(self, q: BinanceQuote, prev: BinanceQuote | None) -> None:
        """A quote's bookkeeping (in the batch): its depth book and per-quote depth streams, its trade tape."""
        k = q.symbol
        d = self._depths.get(k)
        if d is not None:
            if d.live:
                d.book.apply(q)
            for key, what in d.zero_ms:
                if self.topics.has(key):
                    self._snapshot(key, what, q.t_ns)
        f = self._bn_feeds.get(k)
        if f is None or not f.live or prev is None:
            return
        trade = f.tape.on_top(q.t_ns, (prev.bid, prev.bid_qty), (prev.ask, prev.ask_qty), q.bid, q.ask)
        if trade is None:
            return
        fmt, topics = self.formats[k], f.topics
        if self.topics.has(topics["aggTrade"]):
            self.topics.publish(topics["aggTrade"], frames.binance_agg_trade(trade, self.epoch_ns, fmt))
        if self.topics.has(topics["trade"]) and not self.real_trades:  # a replay serves the venue's trades
            self.topics.publish(topics["trade"], frames.binance_trade(trade, self.epoch_ns, fmt))
        f.unpushed = True  # its klines go out at the next KLINE_PUSH_MS tick

    def _push_klines(self, f: TapeFeed, t_ns: int) -> None:
        """A KLINE_PUSH_MS tick of a symbol: when it traded since the last tick, each subscribed kline topic gets
        its current bar as it stands (stamped with the tick), preceded by the final state of the bar it last
        pushed when that bar has ended since (``x`` true), so every trade reaches a pushed kline."""
        if not f.unpushed:
            return
        f.unpushed = False
        now_ms = frames.ms(self.epoch_ns, t_ns)
        fmt = self.formats[f.index]
        for key, interval, minutes in f.intervals:
            if not self.topics.has(key):
                f.pushed_start.pop(key, None)
                continue
            bar = f.tape.current_bar(minutes)
            if bar is None:
                continue
            before = f.pushed_start.get(key)
            if before is not None and before != bar.start_ns:
                for done in f.tape.bars_of(minutes, before, before):
                    self.topics.publish(key, frames.binance_kline(done, interval, minutes, now_ms, fmt))
            f.pushed_start[key] = bar.start_ns
            self.topics.publish(key, frames.binance_kline(bar, interval, minutes, now_ms, fmt))

    def _hyperliquid(self, b: HlBlock) -> None:
        """One coin's block played at once, bookkeeping included (tests, benchmarks)."""
        self._event(b)

    def _send_hyperliquid(self, b: HlBlock, text: str | None) -> None:
        k = b.symbol
        prev = self.blocks.get(k)
        self.blocks[k] = b
        if self._blockless:
            self._blockless = False
            self._prime()
        if k == self._btc:
            self.last_block = b
        if b.changed:
            if b.bid is not None and b.ask is not None:
                last = self._hl_feeds[k].tape.last
                mark = self.hl_marks[k].on_top(b.t_ns, b.bid.px, b.ask.px, last.px if last is not None else None)
                if self.book_sink is not None:
                    self.book_sink("hyperliquid", b.bid.px, b.bid.sz, b.ask.px, b.ask.sz,
                                   symbol=self.instruments[k].name, mark=mark)
            self._send_top("hyperliquid", k, self.hl_topics[k], b, text)
            self.published += 1
        self._pending.append((b, prev))

    def _book_hyperliquid(self, b: HlBlock, prev: HlBlock | None) -> None:
        """A coin's block bookkeeping (in the batch): its trade tape and the frames it feeds; allMids after the
        block's last coin when some top changed in it."""
        k = b.symbol
        if b.changed:
            self._mids_changed = True
            f = self._hl_feeds[k]
            if f.live:
                self._hl_tape(f, prev, b)
        if k == self._hl_last and self._mids_changed:
            self._mids_changed = False
            if self.topics.has(HL_ALL_MIDS):
                mids = frames.hl_all_mids(self.all_mids())
                if mids is not None:
                    self.topics.publish(HL_ALL_MIDS, mids)

    def _hl_tape(self, f: TapeFeed, prev: HlBlock | None, b: HlBlock) -> None:
        """A coin's block top changed: its trade (if the top moved through a level), candles and asset context."""
        fmt, topics = self.formats[f.index], f.topics
        if prev is not None and prev.bid is not None and prev.ask is not None and b.bid is not None \
                and b.ask is not None:
            trade = f.tape.on_top(b.t_ns, (prev.bid.px, prev.bid.sz), (prev.ask.px, prev.ask.sz), b.bid.px, b.ask.px)
            if trade is not None:
                if self.topics.has(topics["trades"]):
                    self.topics.publish(topics["trades"], frames.hl_trades([trade], self.epoch_ns, fmt))
                for key, interval, minutes in f.intervals:
                    if self.topics.has(key):
                        bar = f.tape.current_bar(minutes)
                        if bar is not None:
                            self.topics.publish(key, frames.hl_candle(bar, interval, minutes, fmt))
        if self.topics.has(topics["activeAssetCtx"]):
            self.topics.publish(topics["activeAssetCtx"], frames.hl_active_asset_ctx(b, f.tape.stats,
                                                                                      self.hl_marks[f.index], fmt))

    def all_mids(self) -> dict[str, str]:
        """Every emulated coin's mid (coin -> its text), in ``meta`` order; a coin with a side missing is left out."""
        out: dict[str, str] = {}
        for k, block in sorted(self.blocks.items()):
            mid = frames.hl_mid(block, self.formats[k])
            if mid is not None:
                out[self.instruments[k].name] = mid
        return out

    # -- the tapes, kept while read -----------------------------------------------------------------------------
    def binance_tape_of(self, binance_symbol: str, read: bool = True) -> Tape | None:
        """An emulated symbol's Binance trade tape (None: not emulated). ``read``: keep it from now on (a REST query
        of this symbol's trades, klines or tickers); False peeks (an all-symbols ticker query)."""
        self.settle()
        k = self._bn_index.get(binance_symbol.upper())
        f = self._bn_feeds.get(k) if k is not None else None
        if f is None:
            return None
        return f.read(time.monotonic()) if read else f.tape

    def hl_tape_of(self, coin: str, read: bool = True) -> Tape | None:
        """An emulated coin's Hyperliquid trade tape (None: not emulated); ``read`` as for binance_tape_of."""
        self.settle()
        k = self._hl_index.get(coin)
        f = self._hl_feeds.get(k) if k is not None else None
        if f is None:
            return None
        return f.read(time.monotonic()) if read else f.tape

    def _keep_tapes(self) -> None:
        now = time.monotonic()
        for f in (*self._bn_feeds.values(), *self._hl_feeds.values()):
            if f.live and not f.always:
                f.maybe_idle(now, any(self.topics.has(t) for t in f.topics.values()))

    def quote_of(self, binance_symbol: str) -> BinanceQuote | None:
        """The newest quote of an emulated Binance symbol (None: not emulated, or no quote yet)."""
        k = self._bn_index.get(binance_symbol.upper())
        return self.quotes.get(k) if k is not None else None

    def binance_marks_of(self, binance_symbol: str) -> Marks | None:
        """An emulated symbol's Binance marks (None: not emulated)."""
        k = self._bn_index.get(binance_symbol.upper())
        return self.bn_marks.get(k) if k is not None else None

    def hl_marks_of(self, coin: str) -> Marks | None:
        """An emulated coin's Hyperliquid marks (None: not emulated)."""
        k = self._hl_index.get(coin)
        return self.hl_marks.get(k) if k is not None else None

    def block_of(self, coin: str) -> HlBlock | None:
        """The newest block top of an emulated Hyperliquid coin (None: not emulated, or no block yet)."""
        k = self._hl_index.get(coin)
        return self.blocks.get(k) if k is not None else None

    def hl_index_of(self, coin: str) -> int:
        """An emulated coin's instrument index (KeyError when it is not emulated)."""
        return self._hl_index[coin]

    def format_of(self, index: int) -> frames.InstrumentFormat:
        return self.formats[index]

    # -- the Binance books, kept while read ----------------------------------------------------------------------
    def _on_subscribe(self, key: str, sub: object) -> None:
        self.settle()  # a new subscriber's chain or tape starts after every frame already sent
        f = self._feed_keys.get(key)
        if f is not None:
            f.read(time.monotonic())
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
        self.settle()
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
        """The current Hyperliquid frame for ``key`` (what the venue sends right after subscribing): a coin's bbo,
        l2Book, activeAssetCtx or latest trade, or allMids."""
        self.settle()
        if key == HL_ALL_MIDS:
            return frames.hl_all_mids(self.all_mids())
        _, _, rest = key.partition(":")
        kind, _, coin_part = rest.partition(":")
        k = self._hl_index.get(coin_part.split(":")[0])
        block = self.blocks.get(k) if k is not None else None
        if k is None or block is None:
            return None
        fmt = self.formats[k]
        if kind == "bbo":
            return frames.hl_bbo(block, self.epoch_ns, fmt)
        if kind == "l2Book":
            return frames.hl_l2_book(block, block.t_ns, self.epoch_ns, 5 if key.endswith(":fast") else 20, fmt)
        f = self._hl_feeds[k]
        if kind == "activeAssetCtx":
            return frames.hl_active_asset_ctx(block, f.tape.stats, self.hl_marks[k], fmt)
        if kind == "trades" and f.tape.last is not None:  # the venue answers with the latest trades
            return frames.hl_trades([f.tape.last], self.epoch_ns, fmt)
        return None

    def _snapshot(self, key: str, what: str, t_ns: int) -> None:
        if what.startswith("depth"):
            self._depth(key, what[5:], t_ns)
            return
        k = self._periodic_of[key]
        fmt = self.formats[k]
        if what == "mark":
            marks = self.bn_marks[k]
            if marks.mark is not None:
                self.topics.publish(key, frames.binance_mark_price(marks, t_ns, self.epoch_ns, fmt))
        elif what in ("miniTicker", "ticker"):
            st = self._bn_feeds[k].tape.stats
            if st.count:
                build = frames.binance_mini_ticker if what == "miniTicker" else frames.binance_ticker
                self.topics.publish(key, build(st, t_ns, self.epoch_ns, fmt))
        else:
            block = self.blocks.get(k)
            if block is not None:
                self.topics.publish(key, frames.hl_l2_book(block, t_ns, self.epoch_ns, 5 if what == "l2fast" else 20,
                                                           fmt))

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
