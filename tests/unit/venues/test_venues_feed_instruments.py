"""Many instruments on one feed: per-instrument ordering, lanes that rotate without loss, the per-instrument
watchdog and refusals attributed to the instrument a frame names (in-process, real rings)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from caerus.ipc.swmr import SwmrReader
from caerus.net.ws import WsSession
from caerus.records.book import BOOK_CONN, BOOK_FLAGS, BOOK_REASON, BOOK_SEQ, BOOK_SYMBOL
from caerus.records.event import EVENT_AUX, EVENT_KIND
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues.binance.feed import BinanceSink
from caerus.venues.hyperliquid.feed import HyperliquidSink
from caerus.wire import BOOK, EVENT, BookFlags, EventKind, RejectReason, Venue, is_tradeable
from tests.unit.venues.test_venues_feed_loops import StubSupervisor, counters, deliver, drain

SYMBOLS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


def bt(sym: str, u: int, e_ms: int = 1_000, b: str = "100.0", a: str = "100.1") -> bytes:
    return json.dumps({"e": "bookTicker", "u": u, "E": e_ms, "T": e_ms, "s": sym, "b": b, "B": "1", "a": a,
                       "A": "2"}).encode()


def bbo(coin: str, t_ms: int, bid: object = ("100", "1"), ask: object = ("101", "2")) -> bytes:
    def lvl(x: object) -> object:
        return None if x is None else {"px": x[0], "sz": x[1], "n": 1}  # type: ignore[index]

    return json.dumps({"channel": "bbo", "data": {"coin": coin, "time": t_ms, "bbo": [lvl(bid), lvl(ask)]}}).encode()


@pytest.fixture
def many(shm_dir: Path):
    out = FeedOutputs("binance", "m.book.binance", "m.events.binance", "m.stats.feed-binance", capacity=1024,
                      log_stream=io.StringIO(), venue_code=int(Venue.BINANCE))
    sink = BinanceSink(out, symbols=SYMBOLS, ids=(0, 1, 2), lanes=1)
    out.sink = sink
    sup = StubSupervisor()
    sink.bind_supervisor(sup)  # type: ignore[arg-type]
    s1 = WsSession("wss://x/ws", 1, sink.on_message)
    sink.active = s1
    books = SwmrReader.attach("m.book.binance", BOOK, timeout=1)
    events = SwmrReader.attach("m.events.binance", EVENT, timeout=1)
    yield out, sink, s1, books, events, sup
    books.close()
    events.close()
    out.close()


def test_each_instrument_keeps_its_own_order_and_id(many) -> None:
    out, sink, s1, books, _, _ = many
    # Binance update ids are per symbol: ETH's 5 after BTC's 10 is in order for ETH
    for raw in (bt("BTCUSDT", 10), bt("ETHUSDT", 5), bt("BTCUSDT", 9), bt("SOLUSDT", 7), bt("ETHUSDT", 6),
                bt("ETHUSDT", 6), bt("DOGEUSDT", 1)):
        deliver(sink, raw, 1, s1)
    valid = [(r[BOOK_SYMBOL], r[BOOK_SEQ]) for r in drain(books) if r[BOOK_FLAGS] & BookFlags.VALID]
    assert valid == [(0, 10), (1, 5), (2, 7), (1, 6)]
    c = counters(out)
    assert c["reject.seq_not_increasing"] == 1 and c["reject.duplicate"] == 1 and c["reject.wrong_instrument"] == 1
    assert sink.n_books == 4 and sink.books["ETHUSDT"].n_books == 2


def test_a_withdrawn_quote_stops_only_its_instrument(many) -> None:
    _out, sink, s1, books, _, _ = many
    deliver(sink, bt("BTCUSDT", 1), 1, s1)
    deliver(sink, bt("ETHUSDT", 1), 1, s1)
    deliver(sink, bt("ETHUSDT", 2, b="101", a="100"), 2, s1)  # crossed: ETH's quote is withdrawn
    recs = drain(books)
    latest = {r[BOOK_SYMBOL]: r for r in recs}
    assert is_tradeable(latest[0][BOOK_FLAGS]) and not is_tradeable(latest[1][BOOK_FLAGS])
    assert latest[1][BOOK_REASON] == RejectReason.CROSSED
    assert sink.books["BTCUSDT"].untradeable_since == 0 and sink.books["ETHUSDT"].untradeable_since > 0


def test_an_unreadable_update_withdraws_the_instrument_it_names(many) -> None:
    out, sink, s1, books, _, _ = many
    for sym in SYMBOLS:
        deliver(sink, bt(sym, 1), 1, s1)
    drain(books)
    deliver(sink, b'{"e":"bookTicker","u":"x","s":"SOLUSDT"}', 2, s1)  # data shape, unreadable id
    recs = drain(books)
    assert [(r[BOOK_SYMBOL], r[BOOK_FLAGS]) for r in recs] == [(2, BookFlags.REJECTED)]
    deliver(sink, b'{"e":"bookTicker","u":"x"}', 3, s1)  # names no instrument: every one on the connection
    assert sorted(r[BOOK_SYMBOL] for r in drain(books)) == [0, 1, 2]
    assert counters(out)["reject.malformed"] == 2  # one per frame, however many quotes it withdrew


def test_rotation_switches_every_instrument_and_loses_or_repeats_nothing(many) -> None:
    out, sink, s1, books, _, sup = many
    s2 = WsSession("wss://x/ws", 2, sink.on_message)
    deliver(sink, bt("BTCUSDT", 1), 1, s1)
    deliver(sink, bt("ETHUSDT", 1), 1, s1)
    deliver(sink, bt("ETHUSDT", 2), 1, s1)
    sink.candidate = s2
    deliver(sink, bt("ETHUSDT", 1), 2, s2)  # behind on ETH: overlap
    deliver(sink, bt("BTCUSDT", 1), 2, s2)  # caught up on BTC (equal): the lane switches here
    deliver(sink, bt("ETHUSDT", 2), 2, s2)  # ETH on the new connection: already published by s1 (catch-up)
    deliver(sink, bt("ETHUSDT", 3), 2, s1)  # the old connection: ignored from now on
    deliver(sink, bt("ETHUSDT", 3), 2, s2)
    deliver(sink, bt("SOLUSDT", 1), 2, s2)
    deliver(sink, bt("BTCUSDT", 2), 2, s2)
    valid = [(r[BOOK_SYMBOL], r[BOOK_SEQ], r[BOOK_CONN], r[BOOK_FLAGS]) for r in drain(books)]
    rot = BookFlags.VALID | BookFlags.ROTATED
    assert valid == [(0, 1, 1, BookFlags.VALID), (1, 1, 1, BookFlags.VALID), (1, 2, 1, BookFlags.VALID),
                     (1, 3, 2, rot), (2, 1, 2, rot), (0, 2, 2, rot)]
    c = counters(out)
    assert sup.switches == [(1, 2)] and c["rejects"] == 0 and c["overlap_dropped"] == 4


def test_a_pool_splits_instruments_into_lanes_each_with_its_own_connection(shm_dir: Path) -> None:
    out = FeedOutputs("binance", "p.book.binance", "p.events.binance", "p.stats.feed-binance", capacity=64,
                      log_stream=io.StringIO(), venue_code=int(Venue.BINANCE))
    sink = BinanceSink(out, symbols=("A", "B", "C", "D", "E"), ids=range(5), lanes=2)
    out.sink = sink
    books = SwmrReader.attach("p.book.binance", BOOK, timeout=1)
    try:
        assert [lane.symbols for lane in sink.lanes] == [("A", "B"), ("C", "D", "E")]
        c1, c2 = (WsSession("wss://x/ws", i, sink.on_message) for i in (1, 2))
        sink.lanes[0].active, sink.lanes[1].active = c1, c2
        deliver(sink, bt("C", 1), 1, c1)  # C's updates belong to the second connection: overlap, not published
        deliver(sink, bt("C", 1), 1, c2)
        assert [(r[BOOK_SYMBOL], r[BOOK_CONN]) for r in drain(books)] == [(2, 2)]
        sink.lanes[1].connection_lost(2)  # only the second lane's instruments go STALE
        stale = [r[BOOK_SYMBOL] for r in drain(books) if r[BOOK_FLAGS] & BookFlags.STALE]
        assert stale == [2, 3, 4]
    finally:
        books.close()
        out.close()


def test_a_silent_instrument_on_a_live_connection_is_marked_stale(many) -> None:
    out, sink, s1, books, events, _ = many
    s1.opened_ns = 1
    for sym in SYMBOLS:
        deliver(sink, bt(sym, 1), 1, s1)
    assert sink.watch_instruments(1_000, 5_000) == 0
    drain(books)
    deliver(sink, bt("BTCUSDT", 2), 2, s1)
    deliver(sink, bt("SOLUSDT", 2), 2, s1)
    assert sink.watch_instruments(2_000, 5_000) == 0  # BTC and SOL moved; ETH silent since 1_000
    deliver(sink, bt("BTCUSDT", 3), 3, s1)
    assert sink.watch_instruments(5_500, 5_000) == 0  # ETH silent 4.5 (threshold 5)
    deliver(sink, bt("BTCUSDT", 4), 4, s1)
    asked: list[tuple[int, str]] = []
    assert sink.watch_instruments(6_500, 5_000, lambda sess, sym: asked.append((sess.conn_id, sym))) == 1
    assert asked == [(1, "ETHUSDT")]  # ETH (silent since 1_000) asked for again on its connection; SOL moved at 2_000
    recs = drain(books)
    assert [(r[BOOK_SYMBOL], r[BOOK_FLAGS]) for r in recs if r[BOOK_FLAGS] & BookFlags.STALE] == [
        (1, BookFlags.STALE)]
    ev = [e for e in drain(events) if e[EVENT_KIND] == EventKind.STALE]
    assert len(ev) == 1 and ev[0][EVENT_AUX] == 1 and counters(out)["instrument_stale"] == 1
    assert counters(out)["resubscribes"] == 1
    assert sink.watch_instruments(7_500, 5_000) == 1  # SOL now (since 2_000); ETH is not counted twice
    deliver(sink, bt("ETHUSDT", 2), 5, s1)  # ETH back: tradeable again, can be caught again later
    assert not sink.books["ETHUSDT"].silent and sink.books["ETHUSDT"].untradeable_since == 0


def test_hyperliquid_coins_share_block_times_but_order_per_coin(shm_dir: Path) -> None:
    out = FeedOutputs("hyperliquid", "h.book.hl", "h.events.hl", "h.stats.feed-hl", capacity=64,
                      log_stream=io.StringIO(), venue_code=int(Venue.HYPERLIQUID))
    sink = HyperliquidSink(out, symbols=("BTC", "ETH"), ids=(0, 1))
    out.sink = sink
    books = SwmrReader.attach("h.book.hl", BOOK, timeout=1)
    try:
        s1 = WsSession("wss://x/ws", 1, sink.on_message)
        sink.active = s1
        for raw in (bbo("BTC", 100), bbo("ETH", 100), bbo("ETH", 99), bbo("BTC", 170), bbo("ETH", 170)):
            deliver(sink, raw, 1, s1)
        valid = [(r[BOOK_SYMBOL], r[BOOK_SEQ]) for r in drain(books) if r[BOOK_FLAGS] & BookFlags.VALID]
        assert valid == [(0, 1), (1, 1), (0, 2), (1, 2)]  # each coin numbers its own records
        assert counters(out)["reject.time_backwards"] == 1
    finally:
        books.close()
        out.close()


def test_each_instruments_latency_samples_are_tagged_intervals_of_the_feeds_hlog(shm_dir: Path,
                                                                                 tmp_path: Path) -> None:
    """Issue 32 item 4: the loop stores each sample's instrument slot beside it (no allocation), and the drain
    records feed_internal and info_age also under inst.<NAME>.<tag>, each instrument's counts adding up to the
    tag's; the venue loop and FeedSink.publish_valid store the same slot."""
    from caerus.metrics.hdr import read_hlog

    out = FeedOutputs("binance", "k.book.binance", "k.events.binance", "k.stats.feed-binance", capacity=1024,
                      log_stream=io.StringIO(), venue_code=int(Venue.BINANCE), metrics_dir=tmp_path,
                      instrument_ids=(0, 1, 2), instrument_names=("BTC", "ETH", "SOL"))
    sink = BinanceSink(out, symbols=SYMBOLS, ids=(0, 1, 2), lanes=1)
    out.sink = sink
    sink.bind_supervisor(StubSupervisor())  # type: ignore[arg-type]
    s1 = WsSession("wss://x/ws", 1, sink.on_message)
    sink.active = s1
    sent = {"BTCUSDT": 3, "ETHUSDT": 1, "SOLUSDT": 2}
    u = 0
    for sym, n in sent.items():
        for _ in range(n):
            u += 1
            # t_exchange 1,000 ms; t_recv 1,000 ms + the instrument's own age: BTC 1 ms, ETH 2 ms, SOL 3 ms
            deliver(sink, bt(sym, u), 1_000_000_000 + (SYMBOLS.index(sym) + 1) * 1_000_000, s1)
    st = sink.books["ETHUSDT"]
    sink.publish_valid(st, int(BookFlags.VALID), 1, 99, 1_000_000_000, 1_002_000_000, 1.0, 1.0, 2.0, 1.0)
    assert list(out.sample_keys[:sink.n_samples]) == [0, 0, 0, 1, 2, 2, 1]
    out.housekeeping()
    out.close()
    data = read_hlog(tmp_path / "feed-binance.hlog")
    total = data.merged("info_age.binance").get_total_count()
    counts = {n: data.merged(f"inst.{n}.info_age.binance").get_total_count() for n in ("BTC", "ETH", "SOL")}
    assert counts == {"BTC": 3, "ETH": 2, "SOL": 2} and sum(counts.values()) == total == 7
    assert data.merged("inst.SOL.info_age.binance").get_max_value() >= 2_990_000  # SOL's own 3 ms, not the mix
    assert data.merged("inst.BTC.info_age.binance").get_max_value() <= 1_010_000
    assert sum(data.merged(f"inst.{n}.feed_internal.binance").get_total_count() for n in counts) == 7
