"""The Binance feed's hot path: bookTicker / depth5 message -> checks -> BookRecord in the SWMR ring.

``on_message`` runs once per WebSocket message, straight from the receive loop, with ``t_recv`` already taken.
The common case (a valid bookTicker on the active session) is: one msgspec decode into a typed Struct, integer and
float compares, ``time.time_ns()``, one ``pack_into`` in the ring, and two stores into preallocated sample arrays.
No logging, no dict/list allocation, no syscalls beyond the clock read. Everything else goes to the base class.

Ordering: ``u`` is the order-book update id. ``u`` equal to the newest seen one is a DUPLICATE (dropped, counted),
lower is SEQ_NOT_INCREASING; exchange time ``E`` going backwards is TIME_BACKWARDS. The ordering state advances on
every parsed update of our symbol, valid or not, so an older update never follows a newer rejected one. A frame for
another symbol is WRONG_INSTRUMENT. A depth5 frame must look like a snapshot (exactly 5 levels a side, every size
positive, bids descending, asks ascending); anything else (a diff) is NOT_SNAPSHOT, never read as a top of book.
Ids and times out of range (negative, or past what a record holds) fail the typed decode: MALFORMED.
"""

from __future__ import annotations

import time

import msgspec

from caerus.feed.outputs import FeedOutputs
from caerus.feed.sink import DEPTH, VALID, FeedSink
from caerus.net.ws import WsSession
from caerus.venues.binance import data as binance
from caerus.venues.book import (
    DUPLICATE,
    NOT_SNAPSHOT,
    NULL_SIDE,
    SEQ_NOT_INCREASING,
    TIME_BACKWARDS,
    WRONG_INSTRUMENT,
    check_levels,
)
from caerus.wire import Venue

_VENUE = int(Venue.BINANCE)


class BinanceSink(FeedSink):
    venue = _VENUE
    classify = staticmethod(binance.classify)

    def __init__(self, out: FeedOutputs, *, symbol: str = binance.DEFAULT_SYMBOL, parse_error_limit: int = 100) -> None:
        super().__init__(out, symbol=symbol, parse_error_limit=parse_error_limit)
        self._decode = binance.DATA_DECODER.decode

    def on_message(self, raw: bytes, t_recv: int, session: WsSession) -> bool:
        try:
            m = self._decode(raw)
        except (msgspec.DecodeError, RecursionError):  # not data, malformed, or nested past msgspec's limit
            return self.other(raw, session)
        seq = m.u
        t_ex = m.E * 1_000_000
        if m.s != self.symbol:
            return self.reject(WRONG_INSTRUMENT, session, seq, t_ex)
        if session is not self.active and not self.overlap(session, seq):
            return True
        last = self.last_key
        if seq <= last and not self.venue_restarted(session, seq):
            return self.reject(DUPLICATE if seq == last else SEQ_NOT_INCREASING, session, seq, t_ex)
        if t_ex < self.last_t_ex:
            return self.reject(TIME_BACKWARDS, session, seq, t_ex)
        self.last_key = seq
        self.last_t_ex = t_ex
        if type(m) is binance.BookTicker:
            bp = m.b
            bq = m.B
            ap = m.a
            aq = m.A
            flags = VALID
        else:
            if not m.b or not m.a:
                return self.reject(NULL_SIDE, session, seq, t_ex, t_recv)
            # m is a Depth here: mypy narrows `type(m) is` only in the positive branch (hence the ignores)
            if not binance.is_snapshot(m):  # type: ignore[arg-type]
                return self.reject(NOT_SNAPSHOT, session, seq, t_ex, t_recv)
            bp, bq = m.b[0]  # type: ignore[index]
            ap, aq = m.a[0]  # type: ignore[index]
            flags = VALID | DEPTH
        reason = check_levels(bp, bq, ap, aq)
        if reason:
            return self.reject(reason, session, seq, t_ex, t_recv, bp, bq, ap, aq)
        # FeedSink.publish_valid's body, inlined: the call alone costs ~70 ns, ~6% of this whole path
        # (benchmarks/feed_parse); tests/unit/venues/test_venues_feed_loops.py checks both stay in step.
        if self.extra_flags:
            flags |= self.extra_flags
            self.extra_flags = 0
        t_pub = time.time_ns()
        self.publish(_VENUE, flags, 0, session.conn_id, 0, 0, seq, t_ex, t_recv, t_pub, bp, bq, ap, aq,
                     session.t_wire)
        if self.untradeable_since:
            self._tradeable_again(t_pub)
        self.n_books += 1
        n = self.n_samples
        if n < self.sample_cap:
            self.fi_mv[n] = t_pub - t_recv
            self.ia_mv[n] = t_recv - t_ex
            self.n_samples = n + 1
        else:
            self.samples_full()
        return True
