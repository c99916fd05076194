"""Feed decode + validate + hand-off per message: Caerus's feed path against cryptofeed's and nautilus_trader's, on
the same recorded frames (benchmarks.peers.frames), in interleaved rounds.

Each contender is a :class:`Decoder`: ``handle(frame)`` is its whole per-message work as its own code does it on a
live connection, from the frame its WebSocket library hands over to the object its consumer receives:

- **caerus**: the feed's venue loop (``BinanceSink`` / ``HyperliquidSink.on_message``: typed msgspec decode, the
  ordering and book checks, a record published into a real SWMR ring); what it handed off is read back from the ring.
- **cryptofeed**: the exchange's own ``message_handler`` (``BinanceFutures`` / ``Hyperliquid``), awaited as its
  connection loop awaits it, with a callback (the documented ``callbacks={TICKER|L1_BOOK: coroutine}``) that keeps
  the ``Ticker`` / ``L1Book``. Its symbol table comes from the emulator's exchangeInfo / meta replies, parsed by
  cryptofeed's own ``_parse_symbol_data`` (no network).
- **nautilus_trader**: its Binance futures data client's steps for a bookTicker, with its own code for each
  (``BinanceDataMsgWrapper`` decode and stream routing, ``BinanceQuoteMsg`` decode, ``parse_to_quote_tick`` with a
  ``LiveClock`` stamp); the hand-off keeps the ``QuoteTick`` (the client would publish it on its message bus).
  Its Hyperliquid parsing lives in Rust inside ``HyperliquidWebSocketClient``, with no Python entry for one frame:
  "not available" with that reason.
- On depth5, nautilus_trader three ways, each after its data client's wrapper decode and routing and its
  ``BinanceOrderBookMsg`` decode (the 5 levels a side, as Caerus decodes them): **decode + top of book**, the best
  levels kept as floats (the record Caerus hands off holds floats; nautilus does no checks and publishes nothing
  here, so this is the leanest reading, the goal's row); **decode + top of book as its QuoteTick**, its top-of-book
  object built the way its bookTicker path builds one (``parse_to_quote_tick``: ``Price`` / ``Quantity.from_str``;
  the bookTicker row times the same); and **full book**: what its futures data client does with the frame
  (``_handle_book_partial_update``: ``parse_to_order_book_deltas``, 11 ``OrderBookDelta`` objects), more work than
  Caerus does, so labelled as such.

Timing: ``perf_counter_ns`` around each ``handle`` call, so every contender carries the same ~50 ns timer cost;
benchmarks/protocol's rules: one whole pass over the frames first (dropped: every decoder and cache warm), then the
same number of interleaved rounds for every contender, p50/p99 over all of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.common import time_each
from caerus.records.book import BOOK_ASK_PX, BOOK_BID_PX

VENUES = ("binance", "hyperliquid", "binance_depth")  # binance_depth: the depth5 (partial book) stream
LABELS = {"binance": "feed decode: Binance USD-M bookTicker", "hyperliquid": "feed decode: Hyperliquid bbo",
          "binance_depth": "feed decode: Binance USD-M depth5@100ms"}


@dataclass
class Decoder:
    """One contender on one venue: its per-message work, and the (bid, ask) values it handed off."""

    name: str
    venue: str
    handle: Callable[[Any], object] | None = None
    reset: Callable[[], None] = lambda: None
    handed_off: Callable[[], list[tuple[float, float]]] = list
    prepare: Callable[[bytes, bytes], Any] = lambda raw, combined: raw  # the frame as this tool's library gives it
    run_all: Callable[[list[Any]], np.ndarray] | None = None  # for async handlers: time every frame in one loop
    unavailable: str = ""
    close: Callable[[], None] = lambda: None
    version: str = ""
    notes: list[str] = field(default_factory=list)
    variant: str = ""  # a second way the same tool is measured (its row: "name version, variant")

    @property
    def label(self) -> str:
        """The row's contender: name, version and, for a second way of measuring the tool, what that way is."""
        return f"{self.name} {self.version}".strip() + (f", {self.variant}" if self.variant else "")


def run(dec: Decoder, frames: list[Any]) -> np.ndarray:
    dec.reset()
    if dec.run_all is not None:
        return dec.run_all(frames)
    assert dec.handle is not None
    return time_each(dec.handle, frames)


# -- Caerus -----------------------------------------------------------------------------------------------------


def caerus(venue: str) -> Decoder:
    from caerus import wire
    from caerus.ipc.swmr import SwmrReader
    from caerus.net.ws import WsSession
    from caerus.venuekit.feed_outputs import FeedOutputs
    from caerus.venues.binance.feed import BinanceSink
    from caerus.venues.hyperliquid.feed import HyperliquidSink

    cls = HyperliquidSink if venue == "hyperliquid" else BinanceSink  # one Binance loop takes bookTicker and depth5
    tag = uuid.uuid4().hex[:8]
    out = FeedOutputs(venue, f"p{tag}.book.{venue}", f"p{tag}.events.{venue}", f"p{tag}.stats.{venue}",
                      capacity=1 << 16, venue_code=cls.venue,
                      log_stream=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
    sink = cls(out)
    out.sink = sink
    session = WsSession("wss://peers.invalid/ws", 1, sink.on_message)
    sink.active = session
    reader = SwmrReader.attach(f"p{tag}.book.{venue}", wire.BOOK, timeout=10)
    on_message, time_ns = sink.on_message, time.time_ns
    bid, ask = BOOK_BID_PX, BOOK_ASK_PX

    def reset() -> None:
        sink.last_key = -1  # each round replays the same ids and times: accept them again
        sink.last_t_ex = 0
        while reader.read_next() is not None:
            pass

    def handed_off() -> list[tuple[float, float]]:
        got = []
        while (rec := reader.read_next()) is not None:
            got.append((rec[bid], rec[ask]))
        return got

    def close() -> None:
        reader.close()
        out.close()

    return Decoder("caerus", venue, lambda raw: on_message(raw, time_ns(), session), reset, handed_off,
                   prepare=lambda raw, combined: raw, close=close, version=_version("caerus"),
                   notes=["raw stream (its subscription)"] if venue != "hyperliquid" else [])


# -- cryptofeed -------------------------------------------------------------------------------------------------


def cryptofeed(venue: str) -> Decoder:
    try:
        from cryptofeed.defines import L1_BOOK, TICKER
        from cryptofeed.exchanges import BinanceFutures, Hyperliquid
        from cryptofeed.symbols import Symbols
    except ImportError as exc:
        return Decoder("cryptofeed", venue, unavailable=f"not installed ({exc.name}): pip install -r locks/peers.txt")
    from caerus.sim.binance import rest as binance_rest
    from caerus.sim.hyperliquid import rest as hyperliquid_rest

    if venue == "binance_depth":
        return Decoder("cryptofeed", venue, version=_version("cryptofeed"),
                       unavailable="its Binance L2_BOOK is the diff-depth stream kept from a REST snapshot; it has no "
                                   "handler for the depth5 partial book")
    kept: list[Any] = []

    async def keep(obj: Any, receipt_timestamp: float) -> None:
        kept.append(obj)

    if venue == "binance":
        Symbols.set(BinanceFutures.id, *BinanceFutures._parse_symbol_data(binance_rest.exchange_info()))
        feed: Any = BinanceFutures(symbols=["BTC-USDT-PERP"], channels=[TICKER], callbacks={TICKER: keep})
    else:
        Symbols.set(Hyperliquid.id, *Hyperliquid._parse_symbol_data([hyperliquid_rest.meta(),
                                                                     hyperliquid_rest.spot_meta()]))
        feed = Hyperliquid(symbols=["BTC-USD-PERP"], channels=[L1_BOOK], callbacks={L1_BOOK: keep})
    handler = feed.message_handler

    def run_all(frames: list[str]) -> np.ndarray:
        async def go() -> np.ndarray:
            pc, wall = time.perf_counter_ns, time.time
            out = np.empty(len(frames), dtype=np.int64)
            for i, f in enumerate(frames):
                t0 = pc()
                await handler(f, None, wall())
                out[i] = pc() - t0
            return out

        return asyncio.run(go())

    def handed_off() -> list[tuple[float, float]]:
        got = [(float(o.bid if venue == "binance" else o.bid_price), float(o.ask if venue == "binance"
                                                                            else o.ask_price)) for o in kept]
        kept.clear()
        return got

    return Decoder("cryptofeed", venue, reset=kept.clear, handed_off=handed_off, run_all=run_all,
                   prepare=lambda raw, combined: (combined if venue == "binance" else raw).decode(),
                   version=_version("cryptofeed"),
                   notes=["combined stream (its subscription)"] if venue == "binance" else [])


# -- nautilus_trader --------------------------------------------------------------------------------------------


def nautilus(venue: str, depth: str = "full") -> Decoder:
    """nautilus_trader's Binance data client steps; on depth5 ``depth`` picks what follows its decode: ``top`` (the
    best levels as floats), ``quote`` (its QuoteTick from them) or ``full`` (its handler: 5-level OrderBookDeltas)."""
    try:
        import msgspec
        from nautilus_trader.adapters.binance.common.schemas.market import (
            BinanceDataMsgWrapper,
            BinanceOrderBookMsg,
            BinanceQuoteMsg,
        )
        from nautilus_trader.adapters.binance.common.symbol import BinanceSymbol
        from nautilus_trader.common.component import LiveClock
        from nautilus_trader.model.data import QuoteTick
        from nautilus_trader.model.identifiers import InstrumentId
        from nautilus_trader.model.objects import Price, Quantity
    except ImportError as exc:
        return Decoder("nautilus_trader", venue,
                       unavailable=f"not installed ({exc.name}): pip install -r locks/peers.txt")
    if venue == "hyperliquid":
        return Decoder("nautilus_trader", venue, version=_version("nautilus_trader"),
                       unavailable="its Hyperliquid parsing runs in Rust inside HyperliquidWebSocketClient; no "
                                   "Python entry parses one frame, so its per-message cost cannot be isolated")
    wrapper_dec = msgspec.json.Decoder(BinanceDataMsgWrapper)
    quote_dec = msgspec.json.Decoder(BinanceQuoteMsg)
    clock = LiveClock()
    ids = {"BTCUSDT": InstrumentId.from_str(f"{BinanceSymbol('BTCUSDT')}-PERP.BINANCE")}
    kept: list[Any] = []
    # its futures data client's routing table (BinanceCommonDataClient + BinanceFuturesDataClient): every key is
    # tested against every frame's stream name, so the whole table is kept; the handlers not timed here are None
    handlers: dict[str, Any] = dict.fromkeys(("@bookTicker", "@ticker", "@kline", "@trade", "@aggTrade", "@depth@",
                                              "@depth5", "@depth10", "@depth20", "@markPrice", "!markPrice@arr"))

    def handle_book_ticker(raw: bytes) -> None:
        msg = quote_dec.decode(raw)
        kept.append(msg.data.parse_to_quote_tick(instrument_id=ids[msg.data.s], ts_init=clock.timestamp_ns()))

    book_dec = msgspec.json.Decoder(BinanceOrderBookMsg)

    def handle_book_partial(raw: bytes) -> None:  # BinanceFuturesDataClient._handle_book_partial_update
        msg = book_dec.decode(raw)
        kept.append(msg.data.parse_to_order_book_deltas(instrument_id=ids[msg.data.s], ts_init=clock.timestamp_ns(),
                                                        snapshot=True))

    def handle_book_quote(raw: bytes) -> None:  # the same decode; the top of book as its bookTicker path builds one
        data = book_dec.decode(raw).data
        bid, ask = data.b[0], data.a[0]
        ts_init = clock.timestamp_ns()
        kept.append(QuoteTick(instrument_id=ids[data.s], bid_price=Price.from_str(bid.price),
                              ask_price=Price.from_str(ask.price), bid_size=Quantity.from_str(bid.size),
                              ask_size=Quantity.from_str(ask.size), ts_event=data.T * 1_000_000 if data.T else ts_init,
                              ts_init=ts_init))

    def handle_book_top(raw: bytes) -> None:  # the same decode; the best levels as floats
        data = book_dec.decode(raw).data
        bid, ask = data.b[0], data.a[0]
        kept.append((float(bid.price), float(bid.size), float(ask.price), float(ask.size)))

    mode = depth if venue == "binance_depth" else ""
    if venue == "binance":
        handlers["@bookTicker"] = handle_book_ticker
    else:
        handlers["@depth5"] = {"top": handle_book_top, "quote": handle_book_quote}.get(mode, handle_book_partial)

    def handle(raw: bytes) -> None:  # BinanceCommonDataClient._handle_ws_message's routing
        wrapper = wrapper_dec.decode(raw)
        if not wrapper.stream:
            return
        for key, h in handlers.items():
            if key in wrapper.stream and h is not None:
                h(raw)

    def handed_off() -> list[tuple[float, float]]:
        # the fixed-point Price's decimal value: as_double() is not always the nearest double (94831.90000000001
        # for "94831.9", tests/peers caught it), which would be a conversion artefact, not a different book
        if mode == "top":
            got = [(t[0], t[2]) for t in kept]
        elif venue == "binance" or mode == "quote":
            got = [(float(q.bid_price.as_decimal()), float(q.ask_price.as_decimal())) for q in kept]
        else:  # the snapshot's best levels (OrderSide BUY = 1, SELL = 2; the first delta clears the book)
            got = []
            for deltas in kept:
                orders = [d.order for d in deltas.deltas if d.order.size.as_double() > 0]
                got.append((max(float(o.price.as_decimal()) for o in orders if int(o.side) == 1),
                            min(float(o.price.as_decimal()) for o in orders if int(o.side) == 2)))
        kept.clear()
        return got

    notes = ["combined stream (its subscription); its data client's steps, no message bus"]
    variant = {"top": "decode + top of book", "quote": "decode + top of book as its QuoteTick",
               "full": "full book"}.get(mode, "")
    notes.append({"top": "like for like with Caerus, leanest: the 5 levels decoded, the top kept as floats (no checks, "
                         "nothing published)",
                  "quote": "the 5 levels decoded, the top kept as its QuoteTick (Price/Quantity.from_str), as its "
                           "bookTicker row does",
                  "full": "NOT like for like: builds the 5-level OrderBookDeltas (11 objects) where Caerus keeps the "
                          "top"}.get(mode, ""))
    notes = [n for n in notes if n]
    return Decoder("nautilus_trader", venue, handle, kept.clear, handed_off,
                   prepare=lambda raw, combined: combined, version=_version("nautilus_trader"), variant=variant,
                   notes=notes)


def nautilus_top(venue: str) -> Decoder | None:
    """nautilus_trader's decode + top of book (floats) on depth5 (None elsewhere: bookTicker is a top of book)."""
    return nautilus(venue, "top") if venue == "binance_depth" else None


def nautilus_quote(venue: str) -> Decoder | None:
    """nautilus_trader's decode + its QuoteTick on depth5 (None elsewhere: its bookTicker row is that)."""
    return nautilus(venue, "quote") if venue == "binance_depth" else None


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        if dist == "caerus":  # the checkout on PYTHONPATH (a worktree's venv need not install it): its version
            import tomllib
            from pathlib import Path

            pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
            return str(tomllib.loads(pyproject.read_text())["project"]["version"])
        return "not installed"


#: every contender's factory for a venue (None: the tool has no second way to measure on that venue)
CONTENDERS: tuple[Callable[[str], Decoder | None], ...] = (caerus, cryptofeed, nautilus_top, nautilus_quote, nautilus)


def inputs_for(frames: Any, venue: str) -> tuple[list[bytes], list[bytes]]:
    """(raw, combined) frames of one stream: what Caerus's subscription gets and what the peers' gets."""
    if venue == "binance":
        return frames.binance_raw, frames.binance_combined
    if venue == "binance_depth":
        return frames.binance_depth_raw, frames.binance_depth_combined
    return frames.hyperliquid, frames.hyperliquid


def reference_values(frames: list[bytes], venue: str) -> list[tuple[float, float]]:
    """(bid, ask) of every frame read with json.loads + float: what every contender must hand off, in order."""
    out = []
    for f in frames:
        m = json.loads(f)
        if venue == "binance":
            out.append((float(m["b"]), float(m["a"])))
        elif venue == "binance_depth":
            out.append((float(m["b"][0][0]), float(m["a"][0][0])))
        else:
            bid, ask = m["data"]["bbo"]
            out.append((float(bid["px"]), float(ask["px"])))
    return out


def disagreement(expected: list[tuple[float, float]], got: list[tuple[float, float]]) -> str | None:
    """None when ``got`` is ``expected`` exactly; else what differs first (a count or the first unequal book)."""
    if len(got) != len(expected):
        return f"handed off {len(got)} books for {len(expected)} frames"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        if e != g:
            return f"book {i}: (bid, ask) {g} where the frame says {e}"
    return None


def compare(frames: Any, rounds: int, settings: dict[str, object] | None = None) -> list[Any]:
    """Every contender on every stream under benchmarks/protocol (one pass dropped first, then ``rounds``
    interleaved rounds, each checked against the frames' books); table rows."""
    from benchmarks import protocol
    from benchmarks.peers.table import Row, rows_for

    rows: list[Row] = []
    recorded: dict[str, object] = {}
    for venue in VENUES:
        raw, combined = inputs_for(frames, venue)
        if not raw:
            rows.append(Row(LABELS[venue], "all", unavailable="the frames file has no such frames"))
            continue
        decoders = [d for d in (make(venue) for make in CONTENDERS) if d is not None]
        live = [d for d in decoders if not d.unavailable]
        expected = reference_values(raw, venue)

        def one_pass(d: Decoder, data: list[Any], expected: list[tuple[float, float]] = expected,
                     venue: str = venue) -> np.ndarray:
            t = run(d, data)
            problem = disagreement(expected, d.handed_off())
            if problem:  # a contender that did not hand off the same books is not timed, it is wrong
                raise SystemExit(f"peers: {d.label} on {venue}: {problem}")
            return t

        contenders = []
        for d in live:
            data = [d.prepare(r, c) for r, c in zip(raw, combined, strict=True)]
            contenders.append(protocol.Contender(d.label, lambda _, d=d, data=data: one_pass(d, data),
                                                 lambda d=d, data=data: one_pass(d, data),
                                                 f"one pass over the {len(raw)} frames, dropped"))
        try:
            timed = protocol.interleaved(contenders, rounds)
        finally:
            for d in live:
                d.close()
        recorded[LABELS[venue]] = protocol.as_json(timed)
        samples = {t.name: np.concatenate(t.results) for t in timed}
        notes = {d.label: "; ".join(d.notes) for d in live}
        rows += rows_for(LABELS[venue], samples, live[0].label, notes,
                         {d.label: d.unavailable for d in decoders if d.unavailable})
    if settings is not None:
        settings.setdefault("protocol", {}).update(recorded)  # type: ignore[union-attr]
    return rows
