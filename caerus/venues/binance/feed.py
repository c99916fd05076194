"""The Binance feed's hot path: bookTicker / depth5 message -> checks -> BookRecord in the SWMR ring.

``on_message`` runs once per WebSocket message, straight from the receive loop, with ``t_recv`` already taken.
The common case (a valid bookTicker on the active session) is: one msgspec decode into a typed Struct, integer and
float compares, ``time.time_ns()``, one ``pack_into`` in the ring, and two stores into preallocated sample arrays.
No logging, no dict/list allocation, no syscalls beyond the clock read. Everything else goes to the base class.

Ordering: ``u`` is the order-book update id. ``u`` equal to the newest seen one is a DUPLICATE (dropped, counted),
lower is SEQ_NOT_INCREASING; exchange time ``E`` going backwards is TIME_BACKWARDS. The ordering state advances on
every parsed update of an instrument, valid or not, so an older update never follows a newer rejected one; it is
kept per instrument (one dict look-up by the frame's ``s`` finds the instrument's state). A frame for a symbol the
feed did not subscribe is WRONG_INSTRUMENT. A depth5 frame must look like a snapshot (exactly 5 levels a side,
every size positive, bids descending, asks ascending); anything else (a diff) is NOT_SNAPSHOT, never read as a top
of book. Ids and times out of range (negative, or past what a record holds) fail the typed decode: MALFORMED.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from caerus.net.ws import WsSession
from caerus.venuekit.book_rules import (
    DUPLICATE,
    NOT_SNAPSHOT,
    NULL_SIDE,
    SEQ_NOT_INCREASING,
    TIME_BACKWARDS,
    WRONG_INSTRUMENT,
    check_levels,
)
from caerus.venuekit.feed_loop import DEPTH, VALID, FeedSink
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues.binance import data as binance
from caerus.wire import Venue

_VENUE = int(Venue.BINANCE)


class BinanceSink(FeedSink):
    venue = _VENUE
    classify = staticmethod(binance.classify)

    def __init__(self, out: FeedOutputs, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._decode = binance.DATA_DECODER.decode

    def default_symbol(self) -> str:
        return binance.DEFAULT_SYMBOL

    def frame_symbol(self, raw: bytes) -> str | None:
        return binance.frame_symbol(raw)

    def on_message(self, raw: bytes, t_recv: int, session: WsSession) -> bool:
        try:
            m = self._decode(raw)
        except (msgspec.DecodeError, RecursionError):  # not data, malformed, or nested past msgspec's limit
            return self.other(raw, session)
        seq = m.u
        t_ex = m.E * 1_000_000
        try:
            st = self.books[m.s]
        except KeyError:  # a symbol the feed did not subscribe (try costs nothing when it does not raise)
            return self.reject(WRONG_INSTRUMENT, None, session, seq, t_ex)
        if session is not st.active and not self.overlap(st, session, seq):
            return True
        last = st.last_key
        if seq <= last and not self.venue_restarted(st, session, seq):
            return self.reject(DUPLICATE if seq == last else SEQ_NOT_INCREASING, st, session, seq, t_ex)
        if t_ex < st.last_t_ex:
            return self.reject(TIME_BACKWARDS, st, session, seq, t_ex)
        st.last_key = seq
        st.last_t_ex = t_ex
        if type(m) is binance.BookTicker:
            bp = m.b
            bq = m.B
            ap = m.a
            aq = m.A
            flags = VALID
        else:
            if not m.b or not m.a:
                return self.reject(NULL_SIDE, st, session, seq, t_ex, t_recv)
            # m is a Depth here: mypy narrows `type(m) is` only in the positive branch (hence the ignores)
            if not binance.is_snapshot(m):  # type: ignore[arg-type]
                return self.reject(NOT_SNAPSHOT, st, session, seq, t_ex, t_recv)
            bp, bq = m.b[0]  # type: ignore[index]
            ap, aq = m.a[0]  # type: ignore[index]
            flags = VALID | DEPTH
        reason = check_levels(bp, bq, ap, aq)
        if reason:
            return self.reject(reason, st, session, seq, t_ex, t_recv, bp, bq, ap, aq)
        # deliberate copy of FeedSink.publish_valid's body, inlined: the call alone costs ~70 ns, ~6% of this whole path
        # (benchmarks/feed_parse); tests/unit/venues/test_venues_feed_loops.py checks both stay in step.
        if st.pending:
            flags |= self.first_publish(st)
        t_pub = time.time_ns()
        self.publish(_VENUE, flags, st.id, session.conn_id, 0, 0, seq, t_ex, t_recv, t_pub, bp, bq, ap, aq,
                     session.t_wire)
        if st.untradeable_since:
            self._tradeable_again(st, t_pub)
        st.n_books += 1
        n = self.n_samples
        if n < self.sample_cap:
            self.fi_mv[n] = t_pub - t_recv
            self.ia_mv[n] = t_recv - t_ex
            self.key_mv[n] = st.slot
            self.n_samples = n + 1
        else:
            self.samples_full()
        return True

    def rehearse(self, raw: bytes, t_recv: int, session: WsSession) -> bool:
        # on_message's decode and checks without its ordering state (a rehearsal must not move it)
        try:
            m = self._decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return False
        st = self.books.get(m.s)
        if st is None or type(m) is not binance.BookTicker or check_levels(m.b, m.B, m.a, m.A):
            return False
        return self.rehearsed(VALID, st, session, m.u, m.E * 1_000_000, t_recv, m.b, m.B, m.a, m.A)
