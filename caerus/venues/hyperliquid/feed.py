"""The Hyperliquid feed's hot path: bbo / l2Book message -> checks -> BookRecord in the SWMR ring.

One tagged-union msgspec decode classifies and parses every JSON frame at once (``bbo``, ``l2Book``, ``pong``,
``subscriptionResponse``, ``error``); only a valid top of book on the active session takes the publish path. A
``null`` side is NULL_SIDE; block ``time`` going backwards is TIME_BACKWARDS (equal is normal: one block, several
coins). Hyperliquid has no sequence numbers, so the record's ``seq`` is the feed's own publish counter.
Ordering state (the newest block ``time`` seen) advances on every parsed update of our coin, valid or not, so an
older update never follows a newer rejected one. A frame for another coin is WRONG_INSTRUMENT. Times out of range
(negative, or past what a record holds) fail the typed decode: MALFORMED.
"""

from __future__ import annotations

import time

import msgspec

from caerus.feed.outputs import FeedOutputs
from caerus.feed.sink import DEPTH, VALID, FeedSink
from caerus.net.ws import WsSession
from caerus.venues.book import NULL_SIDE, TIME_BACKWARDS, WRONG_INSTRUMENT, check_levels
from caerus.venues.hyperliquid import data as hyperliquid
from caerus.wire import Venue

_VENUE = int(Venue.HYPERLIQUID)
_Bbo = hyperliquid.Bbo
_L2Book = hyperliquid.L2Book


class HyperliquidSink(FeedSink):
    venue = _VENUE
    classify = staticmethod(hyperliquid.classify)

    def __init__(self, out: FeedOutputs, *, symbol: str = hyperliquid.DEFAULT_SYMBOL,
                 parse_error_limit: int = 100) -> None:
        super().__init__(out, symbol=symbol, parse_error_limit=parse_error_limit)
        self._decode = hyperliquid.DECODER.decode
        self.seq = 0

    def current_seq(self) -> int:
        return self.seq

    def rejected_seq(self, seq: int) -> int:
        # Hyperliquid has no update ids: a REJECTED record takes the next number of the feed's own counter.
        self.seq += 1
        return self.seq

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
        if d.coin != self.symbol:
            return self.reject(WRONG_INSTRUMENT, session, 0, t_ex)
        if session is not self.active and not self.overlap(session, t_ex):
            return True
        if t_ex < self.last_t_ex and not self.venue_restarted(session, t_ex):
            return self.reject(TIME_BACKWARDS, session, 0, t_ex)
        self.last_key = t_ex
        self.last_t_ex = t_ex
        if bid is None or ask is None:
            return self.reject(NULL_SIDE, session, 0, t_ex, t_recv)
        bp = bid.px
        bq = bid.sz
        ap = ask.px
        aq = ask.sz
        reason = check_levels(bp, bq, ap, aq)
        if reason:
            return self.reject(reason, session, 0, t_ex, t_recv, bp, bq, ap, aq)
        seq = self.seq + 1
        self.seq = seq
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
