"""The Hyperliquid feed's hot path: bbo / l2Book message -> checks -> BookRecord in the SWMR ring.

One tagged-union msgspec decode classifies and parses every JSON frame at once (``bbo``, ``l2Book``, ``pong``,
``subscriptionResponse``, ``error``); only a valid top of book on the active session takes the publish path. A
``null`` side is NULL_SIDE; block ``time`` going backwards is TIME_BACKWARDS (equal is normal: one block, several
coins). Hyperliquid has no sequence numbers, so the record's ``seq`` is the feed's own publish counter.
Ordering state (the newest block ``time`` seen) is kept per coin and advances on every parsed update of that coin,
valid or not, so an older update never follows a newer rejected one; record ``seq`` counts per coin too. A frame for
a coin the feed did not subscribe is WRONG_INSTRUMENT. Times out of range
(negative, or past what a record holds) fail the typed decode: MALFORMED.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from caerus.net.ws import WsSession
from caerus.venuekit.book_rules import NULL_SIDE, TIME_BACKWARDS, WRONG_INSTRUMENT, check_levels
from caerus.venuekit.feed_loop import DEPTH, VALID, BookState, FeedSink
from caerus.venuekit.feed_outputs import FeedOutputs
from caerus.venues.hyperliquid import data as hyperliquid
from caerus.wire import Venue

_VENUE = int(Venue.HYPERLIQUID)
_Bbo = hyperliquid.Bbo
_L2Book = hyperliquid.L2Book


class HyperliquidSink(FeedSink):
    venue = _VENUE
    classify = staticmethod(hyperliquid.classify)

    def __init__(self, out: FeedOutputs, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._decode = hyperliquid.DECODER.decode

    def default_symbol(self) -> str:
        return hyperliquid.DEFAULT_SYMBOL

    def frame_symbol(self, raw: bytes) -> str | None:
        return hyperliquid.frame_coin(raw)

    @property
    def seq(self) -> int:
        """The first instrument's record counter (the single-instrument view)."""
        return self._first.seq

    def current_seq(self, st: BookState) -> int:
        return st.seq

    def rejected_seq(self, st: BookState, seq: int) -> int:
        # Hyperliquid has no update ids: a REJECTED record takes the next number of the instrument's own counter.
        st.seq += 1
        return st.seq

    def on_message(self, raw: bytes, t_recv: int, session: WsSession) -> bool:
        try:
            m = self._decode(raw)
        except (msgspec.DecodeError, RecursionError):  # greeting, garbage, malformed or pathologically nested
            return self.other(raw, session)
        tm = type(m)
        if tm is _Bbo:
            d = m.data
            bid, ask = d.bbo
            flags = VALID
        elif tm is _L2Book:
            d = m.data
            bids, asks = d.levels
            bid = bids[0] if bids else None
            ask = asks[0] if asks else None
            flags = VALID | DEPTH
        else:
            kind, detail = hyperliquid.classify_control(m, session.subscribed)
            return self.control(kind, detail, session)
        t_ex = d.time * 1_000_000
        try:
            st = self.books[d.coin]
        except KeyError:  # a symbol the feed did not subscribe (try costs nothing when it does not raise)
            return self.reject(WRONG_INSTRUMENT, None, session, 0, t_ex)
        if session is not st.active and not self.overlap(st, session, t_ex):
            return True
        last = st.last_t_ex
        # Equal block times are normal (one block, several updates) except while catching up after a switch, when
        # an equal time is the update the old connection already published.
        if t_ex <= last and (t_ex < last or st.catching_up) and not self.venue_restarted(st, session, t_ex):
            return self.reject(TIME_BACKWARDS, st, session, 0, t_ex)
        st.last_key = t_ex
        st.last_t_ex = t_ex
        if bid is None or ask is None:
            return self.reject(NULL_SIDE, st, session, 0, t_ex, t_recv)
        bp = bid.px
        bq = bid.sz
        ap = ask.px
        aq = ask.sz
        reason = check_levels(bp, bq, ap, aq)
        if reason:
            return self.reject(reason, st, session, 0, t_ex, t_recv, bp, bq, ap, aq)
        seq = st.seq + 1
        st.seq = seq
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
        if type(m) is not _Bbo:
            return False
        d = m.data
        st = self.books.get(d.coin)
        bid, ask = d.bbo
        if st is None or bid is None or ask is None or check_levels(bid.px, bid.sz, ask.px, ask.sz):
            return False
        return self.rehearsed(VALID, st, session, st.seq + 1, d.time * 1_000_000, t_recv, bid.px, bid.sz, ask.px,
                              ask.sz)
