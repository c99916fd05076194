"""What both venue feed loops share: the slow paths around the hot path, and make-before-break switching.

A venue loop (``caerus.venues.<venue>.feed``) implements ``on_message`` (decode -> validate -> publish)
and hands everything unusual to this base: frames that are not data (ack, error, pong, greeting, garbage),
rejected updates, and messages from a session that is not the active one (rotation overlap). Nothing here runs for
an ordinary valid update.

Rotation rule (the same for both venues, keyed by the venue's order key: Binance ``u``, Hyperliquid ``time``):
during the overlap only the active session publishes; a message from the candidate whose key is at least the
last published key means the candidate has caught up, so the sink switches to it at that very message (published
if its key is new, dropped as an overlap duplicate if equal) and asks the supervisor to close the old one.
Anything the old session delivers after that is dropped; anything it had not delivered yet, the candidate (which
is caught up) delivers. So nothing is lost and nothing is published twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from caerus.net.failures import SessionEnded
from caerus.net.ws import WsSession
from caerus.venues.book import MALFORMED, WITHDRAWS_QUOTE, reject_counter
from caerus.venues.frames import FrameKind
from caerus.wire import BookFlags, EventKind, FailureClass, RejectReason

if TYPE_CHECKING:
    from caerus.feed.outputs import FeedOutputs
    from caerus.net.supervisor import Supervisor

VALID = int(BookFlags.VALID)
DEPTH = int(BookFlags.DEPTH)
ROTATED = int(BookFlags.ROTATED)
STALE = int(BookFlags.STALE)
REJECTED = int(BookFlags.REJECTED)
_NAN = float("nan")
_REJECTED = int(EventKind.BOOK_REJECTED)


class FeedSink:
    """Base of the per-venue feed loops (state, counters, slow paths)."""

    venue: int
    classify: Callable[[bytes], tuple[FrameKind, str]]

    def __init__(self, out: FeedOutputs, *, symbol: str, parse_error_limit: int = 100) -> None:
        self.out = out
        self.symbol = symbol  # the venue's name of the subscribed instrument: data for any other is refused
        self.publish = out.books.publish
        self.active: WsSession | None = None
        self.candidate: WsSession | None = None
        self.supervisor: Supervisor | None = None
        self.parse_error_limit = parse_error_limit
        # ordering state (the hot path reads and writes these)
        self.last_key = -1  # order key of the newest published update (Binance u / Hyperliquid time in ns)
        self.last_t_ex = 0
        self.extra_flags = 0  # ROTATED for the first record after a switch
        self.n_books = 0
        # Since when the newest published record is not tradeable (STALE or REJECTED; 0: it is). The first VALID
        # record after that closes the interval into the ``untradeable_ns`` counter (the report's per-venue
        # untradeable time). From start-up until the first VALID record counts too.
        self.untradeable_since = time.time_ns()
        self.untradeable_closed_ns = 0
        # samples (preallocated; the feed's housekeeping drains them into the .hlog)
        self.fi = out.feed_internal
        self.ia = out.info_age
        self.fi_mv = memoryview(self.fi.arr.data)
        self.ia_mv = memoryview(self.ia.arr.data)
        self.n_samples = 0
        self.sample_cap = self.fi.capacity
        ints = out.counters.ints
        self.ints = ints
        idx = out.counters.int_index
        self._i_rejects = idx("rejects")
        self._i_reject = {int(r): idx(reject_counter(int(r))) for r in RejectReason}
        self._i_dropped = idx("frames_dropped")
        self._i_overlap = idx("overlap_dropped")
        self._i_samples_full = idx("samples_full")
        self._i_failed = idx("frames_failed")

    def bind_supervisor(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    # -- the common tail of every valid update ------------------------------------------------------------------

    def publish_valid(self, flags: int, conn: int, seq: int, t_ex: int, t_recv: int,
                      bp: float, bq: float, ap: float, aq: float, t_wire: int = 0) -> bool:
        """Publish a validated top of book and take its latency samples. Returns True (data).

        The definition of the tail every valid update takes. The built-in venues' loops inline this body (a call
        costs ~70 ns, ~6% of their path); a unit test feeds the same frames through both and compares records.
        """
        if self.extra_flags:
            flags |= self.extra_flags
            self.extra_flags = 0
        t_pub = time.time_ns()
        self.publish(self.venue, flags, 0, conn, 0, 0, seq, t_ex, t_recv, t_pub, bp, bq, ap, aq, t_wire)
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

    # -- slow paths --------------------------------------------------------------------------------------------

    def samples_full(self) -> None:
        self.ints[self._i_samples_full] += 1

    def _tradeable_again(self, t_ns: int) -> None:
        self.untradeable_closed_ns += t_ns - self.untradeable_since
        self.untradeable_since = 0

    def _untradeable(self, t_ns: int) -> None:
        if not self.untradeable_since:
            self.untradeable_since = t_ns

    def reject(self, reason: int, session: WsSession, seq: int, t_ex: int, t_recv: int = 0,
               bp: float = _NAN, bq: float = _NAN, ap: float = _NAN, aq: float = _NAN) -> bool:
        """Count a refused update by reason and record an event. Returns True (data).

        An update that withdraws the quote (a null side, a crossed/locked/non-positive/non-finite book, an
        unreadable data frame) on the active connection is published as a REJECTED record carrying the reason, so
        readers stop trading this venue until the next VALID record. An update refused for its order (duplicate,
        older) or instrument says nothing about the current book: counted only, the latest record stands.
        """
        ints = self.ints
        ints[self._i_rejects] += 1
        ints[self._i_reject[reason]] += 1
        self.out.event(EventKind.BOOK_REJECTED, reason, session.conn_id, seq, t_ex)
        if reason in WITHDRAWS_QUOTE and session is self.active:
            t_ns = time.time_ns()
            self.publish(self.venue, REJECTED, 0, session.conn_id, reason, 0, self.rejected_seq(seq), t_ex,
                         t_recv or t_ns, t_ns, bp, bq, ap, aq, session.t_wire if t_recv else 0)
            self._untradeable(t_ns)
        return True

    def rejected_seq(self, seq: int) -> int:
        """The seq field of a REJECTED record (the venue's update id; Hyperliquid numbers its own records)."""
        return seq if seq > 0 else self.current_seq()

    def frame_failed(self, raw: bytes, session: WsSession, exc: Exception) -> None:
        """A frame whose handling raised (a bug or an input nothing anticipated): counted, logged, dropped.

        The receive loop calls this instead of letting the exception end the connection: one frame must never
        cost the connection or the process. A connection that is mostly such frames ends like one mostly of
        garbage (PARSE_ERROR), through the same counter.
        """
        self.ints[self._i_failed] += 1
        self._bad_frame(session, f"{type(exc).__name__}: {exc}"[:200] + f" frame={bytes(raw[:80])!r}")

    def venue_restarted(self, session: WsSession, key: int) -> bool:
        """The first message of a fresh connection is older than what we published: did the venue restart?

        Binance ids and Hyperliquid block times never go backwards on the real venues, but a restarted venue (or
        emulator) starts its stream over; without this, every update would be rejected forever while the data
        watchdog stays happy. So on the first data message of a new primary connection (a STALE record already
        told readers the book was not live), an older key resets the ordering state instead of being rejected.
        Called only from the reject branch: costs nothing on the common path.
        """
        if session.data_count or key >= self.last_key or session is not self.active:
            return False
        self.out.count("ordering_resets")
        self.out.log("ordering_reset", conn=session.conn_id, last_key=self.last_key, key=key)
        self.last_key = -1
        self.last_t_ex = 0
        return True

    def overlap(self, session: WsSession, key: int) -> bool:
        """A data message from a session that is not the active one; True when it should be processed now."""
        if session is self.candidate and key >= self.last_key:
            old = self.active
            self.active = session
            self.candidate = None
            self.extra_flags = ROTATED
            if self.supervisor is not None:
                self.supervisor.switched(old, session)
            if key > self.last_key:
                return True
        self.ints[self._i_overlap] += 1
        return False

    def other(self, raw: bytes, session: WsSession) -> bool:
        """A frame the data decoder refused: classify, count, maybe end the session. Returns False (not data)."""
        kind, detail = type(self).classify(raw)
        return self.control(kind, detail, session)

    def control(self, kind: FrameKind, detail: str, session: WsSession) -> bool:
        out = self.out
        if kind is FrameKind.SUB_ERROR and session.data_count:
            # Data is already flowing on this connection: an error now did not reject our subscription.
            kind = FrameKind.VENUE_ERROR
        if kind is FrameKind.ACK:
            session.subscribed = True
            out.count("acks")
            out.log("subscribed", conn=session.conn_id, detail=detail)
        elif kind is FrameKind.PONG:
            out.count("pongs")
        elif kind is FrameKind.GREETING:
            out.count("greetings")
        elif kind is FrameKind.SUB_ERROR:
            out.count("sub_errors")
            raise SessionEnded(FailureClass.SUBSCRIPTION_REJECTED, detail)
        elif kind is FrameKind.VENUE_ERROR:
            out.count("venue_errors")
            out.log("venue_error", conn=session.conn_id, detail=detail)
        elif kind is FrameKind.MALFORMED_DATA:
            self.reject(MALFORMED, session, 0, self.last_t_ex)
            self._bad_frame(session, detail)
            return True
        else:  # MALFORMED / UNKNOWN
            self.ints[self._i_dropped] += 1
            out.event(EventKind.FRAME_DROPPED, int(kind), session.conn_id)
            self._bad_frame(session, detail)
        return False

    def _bad_frame(self, session: WsSession, detail: str) -> None:
        n = session.bad_frames = session.bad_frames + 1
        if n <= 3 or n % 1000 == 0:
            self.out.log("bad_frame", conn=session.conn_id, count=n, frame=detail)
        # Garbage now and then is dropped and counted; a connection that is mostly garbage is restarted.
        if n >= self.parse_error_limit and 2 * n > session.msg_count:
            raise SessionEnded(FailureClass.PARSE_ERROR, f"{n} unparseable frames of {session.msg_count}", n)

    def take_samples(self) -> int:
        """Hand the collected samples to the buffers (housekeeping, between messages); returns how many."""
        n = self.n_samples
        self.fi.n = n
        self.ia.n = n
        self.n_samples = 0
        return n

    def connection_lost(self, conn: int, t_ns: int) -> None:
        """Publish a STALE (not VALID) record: this venue's book is not live until the next VALID record."""
        self.publish(self.venue, STALE, 0, conn, 0, 0, self.current_seq(), self.last_t_ex, t_ns, t_ns,
                     0.0, 0.0, 0.0, 0.0, 0)
        self._untradeable(t_ns)

    def untradeable_ns(self, t_ns: int) -> int:
        """Time this venue's newest record was not tradeable since start-up, up to ``t_ns`` (housekeeping)."""
        since = self.untradeable_since
        return self.untradeable_closed_ns + (t_ns - since if since else 0)

    def current_seq(self) -> int:
        """The seq field of the newest published record (a STALE record repeats it)."""
        return max(self.last_key, 0)
