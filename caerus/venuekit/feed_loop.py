"""What both venue feed loops share: per-instrument book state, connection lanes, the slow paths around the hot
path, and make-before-break switching.

One feed process carries every instrument of the session for its venue. Each instrument has a :class:`BookState`
(its ordering key, its untradeable interval, its last message time for the per-instrument watchdog) and belongs to
one :class:`Lane`: a connection of the pool with its own supervisor (reconnect, data watchdog, rotation). A lane
stands in for the sink towards its supervisor (``active``/``candidate`` slots, the message handler, the reporter).

A venue loop (``caerus.venues.<venue>.feed``) implements ``on_message`` (decode -> validate -> publish)
and hands everything unusual to this base: frames that are not data (ack, error, pong, greeting, garbage),
rejected updates, and messages from a session that is not the active one (rotation overlap). Nothing here runs for
an ordinary valid update.

Rotation rule (the same for both venues, keyed per instrument by the venue's order key: Binance ``u``,
Hyperliquid ``time``): during the overlap only the active session publishes; a message from the candidate whose
key is at least its instrument's last published key means the candidate has caught up, so the lane switches to
it at that very message (published if its key is new, dropped as an overlap duplicate if equal) and asks the
supervisor to close the old one. Anything the old session delivers after that is dropped. The candidate may still
hold, for the lane's other instruments, updates the old one already published: until each instrument's first
publish on the new connection, an update at or below its last key is an overlap duplicate (counted as such, not
as a reject). Anything the old session had not delivered yet, the candidate delivers. So nothing is lost and
nothing is published twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from caerus.net.failures import Failure, SessionEnded
from caerus.net.ws import WsSession
from caerus.venuekit.book_rules import MALFORMED, WITHDRAWS_QUOTE, reject_counter
from caerus.venuekit.frames import FrameKind
from caerus.wire import BOOK, BookFlags, EventKind, FailureClass, RejectReason

if TYPE_CHECKING:
    from caerus.net.connection_supervisor import Supervisor
    from caerus.venuekit.feed_outputs import FeedOutputs

VALID = int(BookFlags.VALID)
DEPTH = int(BookFlags.DEPTH)
ROTATED = int(BookFlags.ROTATED)
STALE = int(BookFlags.STALE)
REJECTED = int(BookFlags.REJECTED)
_NAN = float("nan")
_REJECTED = int(EventKind.BOOK_REJECTED)
_ORDERING = frozenset({int(RejectReason.DUPLICATE), int(RejectReason.SEQ_NOT_INCREASING),
                       int(RejectReason.TIME_BACKWARDS)})


class BookState:
    """One instrument's state in its venue's feed (the hot path reads and writes these attributes)."""

    __slots__ = ("active", "catching_up", "extra_flags", "id", "lane", "last_key", "last_t_ex", "n_books",
                 "pending", "rejects", "reset_pending", "seen", "seq", "silent", "slot", "stale_count", "symbol",
                 "t_last", "untradeable_closed_ns", "untradeable_since")

    def __init__(self, symbol: str, instrument_id: int) -> None:
        self.symbol = symbol  # the venue's name (Binance BTCUSDT, Hyperliquid BTC)
        self.id = instrument_id  # BOOK.symbol
        self.slot = 0  # position in this feed's instruments: the key stored beside each latency sample
        self.lane: Lane | None = None
        self.active: WsSession | None = None  # the lane's active session (kept in step by Lane.active)
        self.last_key = -1  # order key of the newest published update (Binance u / Hyperliquid time in ns)
        self.last_t_ex = 0
        self.seq = 0  # Hyperliquid: the feed's own record counter for this instrument
        # Something to do at the next publish (rotation flag, end of a catch-up, a fresh connection): one test on
        # the hot path, the work in FeedSink.first_publish.
        self.pending = False
        self.extra_flags = 0  # ROTATED for the first record after a switch
        self.catching_up = False  # after a lane switch, before this instrument's first publish on the new session
        self.reset_pending = False  # a fresh connection may restart the venue's ordering (see venue_restarted)
        self.n_books = 0
        self.rejects = 0
        # the per-instrument watchdog's view, kept by housekeeping (never by the hot path): when the count of this
        # instrument's updates (published + refused) last moved, and that count
        self.t_last = 0
        self.seen = 0
        self.silent = False  # the watchdog marked it STALE; cleared by its next VALID record
        self.stale_count = 0
        # Since when the newest published record is not tradeable (STALE or REJECTED; 0: it is). From start-up
        # until the first VALID record counts too.
        self.untradeable_since = time.time_ns()
        self.untradeable_closed_ns = 0

    def untradeable_ns(self, t_ns: int) -> int:
        since = self.untradeable_since
        return self.untradeable_closed_ns + (t_ns - since if since else 0)


class Lane:
    """One connection of the feed's pool and the instruments it carries; what its supervisor sees as the sink
    (active and candidate slots, message handler) and as the reporter (counts and events go to the outputs)."""

    def __init__(self, sink: FeedSink, number: int, books: Sequence[BookState]) -> None:
        self.sink = sink
        self.number = number
        self.books = tuple(books)
        self._active: WsSession | None = None
        self.candidate: WsSession | None = None
        self.supervisor: Supervisor | None = None
        self.on_message = sink.on_message
        for st in self.books:
            st.lane = self

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(st.symbol for st in self.books)

    @property
    def active(self) -> WsSession | None:
        return self._active

    @active.setter
    def active(self, session: WsSession | None) -> None:
        # a new connection that has delivered nothing yet (not a promoted rotation candidate, which has)
        fresh = session is not None and session is not self._active and not session.data_count
        self._active = session
        for st in self.books:
            st.active = session
            if fresh:
                st.reset_pending = st.pending = True

    def switch(self, session: WsSession) -> WsSession | None:
        """The candidate caught up: it becomes active for every instrument of the lane; returns the old one."""
        old = self._active
        self._active = session
        self.candidate = None
        for st in self.books:
            st.active = session
            st.extra_flags = ROTATED
            st.catching_up = st.pending = True
        return old

    # -- the sink protocol towards the supervisor ------------------------------------------------------------
    def frame_failed(self, raw: bytes, session: WsSession, exc: Exception) -> None:
        self.sink.frame_failed(raw, session, exc)

    def bind_supervisor(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    # -- the reporter protocol ---------------------------------------------------------------------------------
    def event(self, kind: EventKind, code: int, conn: int, value: int = 0, aux: int = 0) -> None:
        self.sink.out.event(kind, code, conn, value, aux)

    def count(self, name: str, n: int = 1) -> None:
        self.sink.out.count(name, n)

    def failure(self, failure: Failure, session: WsSession, role: str) -> None:
        self.sink.out.failure(failure, session, role)

    def connection_lost(self, conn: int) -> None:
        self.sink.out.connection_lost(conn, self)


class FeedSink:
    """Base of the per-venue feed loops (per-instrument state, lanes, counters, slow paths)."""

    venue: int
    classify: Callable[[bytes], tuple[FrameKind, str]]
    #: the venue loop: decode -> validate -> publish (each venue's subclass defines it)
    on_message: Callable[[bytes, int, WsSession], bool]

    def __init__(self, out: FeedOutputs, *, symbols: Sequence[str] | None = None, symbol: str | None = None,
                 ids: Sequence[int] | None = None, lanes: int = 1, parse_error_limit: int = 100) -> None:
        if symbols is None:
            symbols = (symbol or self.default_symbol(),)
        symbols = tuple(symbols)
        ids = tuple(ids) if ids is not None else tuple(range(len(symbols)))
        if not symbols or len(ids) != len(symbols) or len(set(symbols)) != len(symbols):
            raise ValueError(f"feed symbols {symbols} / ids {ids}: one distinct symbol per instrument id")
        if not 1 <= lanes <= len(symbols):
            raise ValueError(f"{lanes} connections for {len(symbols)} instruments: need 1..{len(symbols)}")
        self.out = out
        self.publish = out.books.publish
        self.books = {s: BookState(s, i) for s, i in zip(symbols, ids, strict=True)}
        states = list(self.books.values())
        for k, st in enumerate(states):
            st.slot = k
        # contiguous chunks, as even as possible: lane k carries instruments [k*n/K, (k+1)*n/K)
        n = len(states)
        self.lanes = tuple(Lane(self, k, states[k * n // lanes:(k + 1) * n // lanes]) for k in range(lanes))
        self.parse_error_limit = parse_error_limit
        # samples (preallocated; the feed's housekeeping drains them into the .hlog)
        self.fi = out.feed_internal
        self.ia = out.info_age
        self.fi_mv = memoryview(self.fi.arr.data)
        self.ia_mv = memoryview(self.ia.arr.data)
        self.key_mv = memoryview(out.sample_keys.data)  # each sample's instrument slot (FeedOutputs drains by it)
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
        # the shadow connection's rehearsals (caerus.feed.warm): their records are packed here, never into the ring
        self._rehearsal_record = bytearray(BOOK.size)
        self._pack_rehearsal = BOOK.struct.pack_into
        self.rehearsals = 0

    def default_symbol(self) -> str:
        raise ValueError("a feed sink needs its instruments' symbols")

    # -- the single-lane view (one connection, one instrument: what tests and benchmarks of one book use) ---------
    @property
    def symbol(self) -> str:
        return self._first.symbol

    @property
    def _first(self) -> BookState:
        return next(iter(self.books.values()))

    @property
    def active(self) -> WsSession | None:
        return self.lanes[0].active

    @active.setter
    def active(self, session: WsSession | None) -> None:
        self.lanes[0].active = session

    @property
    def candidate(self) -> WsSession | None:
        return self.lanes[0].candidate

    @candidate.setter
    def candidate(self, session: WsSession | None) -> None:
        self.lanes[0].candidate = session

    @property
    def supervisor(self) -> Supervisor | None:
        return self.lanes[0].supervisor

    def bind_supervisor(self, supervisor: Supervisor) -> None:
        self.lanes[0].bind_supervisor(supervisor)

    @property
    def last_key(self) -> int:
        return self._first.last_key

    @last_key.setter
    def last_key(self, value: int) -> None:
        self._first.last_key = value

    @property
    def last_t_ex(self) -> int:
        """The newest exchange time published, over every instrument."""
        return max(st.last_t_ex for st in self.books.values())

    @last_t_ex.setter
    def last_t_ex(self, value: int) -> None:
        self._first.last_t_ex = value

    @property
    def untradeable_since(self) -> int:
        return self._first.untradeable_since

    @property
    def n_books(self) -> int:
        return sum(st.n_books for st in self.books.values())

    # -- the common tail of every valid update ------------------------------------------------------------------

    def publish_valid(self, st: BookState, flags: int, conn: int, seq: int, t_ex: int, t_recv: int,
                      bp: float, bq: float, ap: float, aq: float, t_wire: int = 0) -> bool:
        """Publish a validated top of book and take its latency samples. Returns True (data).

        The definition of the tail every valid update takes. The built-in venues' loops inline this body (a call
        costs ~70 ns, ~6% of their path): deliberate copies, kept in step by
        tests/unit/venues/test_venues_feed_loops.py::test_inlined_publish_tail_matches_feed_sink_publish_valid, which
        feeds the same frames through both and compares records.
        """
        if st.pending:
            flags |= self.first_publish(st)
        t_pub = time.time_ns()
        self.publish(self.venue, flags, st.id, conn, 0, 0, seq, t_ex, t_recv, t_pub, bp, bq, ap, aq, t_wire)
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
        """The venue loop run on a synthetic frame from the shadow connection (caerus.net.shadow), to keep it
        warm: the same decode, checks and record packing as ``on_message``, into a scratch record. It changes no
        book state, ring, counter or sample. True when the frame is a top of book ``on_message`` would publish; a
        synthetic frame it refuses is a bug (the warmer stops on it). Each venue's loop defines it."""
        raise NotImplementedError(f"{type(self).__name__} has no rehearsal")

    def rehearsed(self, flags: int, st: BookState, session: WsSession, seq: int, t_ex: int, t_recv: int,
                  bp: float, bq: float, ap: float, aq: float) -> bool:
        """A rehearsal's tail: ``publish_valid``'s clock read and record, packed into the scratch record."""
        t_pub = time.time_ns()
        self._pack_rehearsal(self._rehearsal_record, 0, self.venue, flags, st.id, session.conn_id, 0, 0, seq, t_ex,
                             t_recv, t_pub, bp, bq, ap, aq, session.t_wire)
        self.rehearsals += 1
        return True

    # -- slow paths --------------------------------------------------------------------------------------------

    def first_publish(self, st: BookState) -> int:
        """The first publish of an instrument after a switch or a reconnect: end its catch-up; returns the flags
        the record carries for it (ROTATED after a switch)."""
        flags = st.extra_flags
        st.extra_flags = 0
        st.catching_up = st.reset_pending = st.pending = False
        return flags

    def samples_full(self) -> None:
        self.ints[self._i_samples_full] += 1

    def _tradeable_again(self, st: BookState, t_ns: int) -> None:
        st.untradeable_closed_ns += t_ns - st.untradeable_since
        st.untradeable_since = 0
        st.silent = False

    @staticmethod
    def _untradeable(st: BookState, t_ns: int) -> None:
        if not st.untradeable_since:
            st.untradeable_since = t_ns

    def reject(self, reason: int, st: BookState | None, session: WsSession, seq: int, t_ex: int, t_recv: int = 0,
               bp: float = _NAN, bq: float = _NAN, ap: float = _NAN, aq: float = _NAN) -> bool:
        """Count a refused update by reason and record an event. Returns True (data).

        An update that withdraws the quote (a null side, a crossed/locked/non-positive/non-finite book, an
        unreadable data frame) on the active connection is published as a REJECTED record carrying the reason, so
        readers stop trading this instrument on this venue until its next VALID record. An update refused for its
        order (duplicate, older) or instrument says nothing about the current book: counted only, the latest
        record stands. An ordering refusal while the instrument catches up after a switch is an overlap duplicate.
        """
        if st is not None and reason in _ORDERING and st.catching_up:
            self.ints[self._i_overlap] += 1
            return True
        ints = self.ints
        ints[self._i_rejects] += 1
        ints[self._i_reject[reason]] += 1
        self.out.event(EventKind.BOOK_REJECTED, reason, session.conn_id, seq, t_ex)
        if st is None:
            return True
        st.rejects += 1
        if reason in WITHDRAWS_QUOTE:
            self.withdraw(reason, st, session, seq, t_ex, t_recv, bp, bq, ap, aq)
        return True

    def withdraw(self, reason: int, st: BookState, session: WsSession, seq: int, t_ex: int, t_recv: int = 0,
                 bp: float = _NAN, bq: float = _NAN, ap: float = _NAN, aq: float = _NAN) -> None:
        """Publish a REJECTED record for the instrument (its quote is no longer the venue's), when ``session`` is
        its active connection; readers stop trading it until its next VALID record."""
        if session is st.active:
            t_ns = time.time_ns()
            self.publish(self.venue, REJECTED, st.id, session.conn_id, reason, 0, self.rejected_seq(st, seq), t_ex,
                         t_recv or t_ns, t_ns, bp, bq, ap, aq, session.t_wire if t_recv else 0)
            self._untradeable(st, t_ns)

    def rejected_seq(self, st: BookState, seq: int) -> int:
        """The seq field of a REJECTED record (the venue's update id; Hyperliquid numbers its own records)."""
        return seq if seq > 0 else self.current_seq(st)

    def frame_failed(self, raw: bytes, session: WsSession, exc: Exception) -> None:
        """A frame whose handling raised (a bug or an input nothing anticipated): counted, logged, dropped.

        The receive loop calls this instead of letting the exception end the connection: one frame must never
        cost the connection or the process. A connection that is mostly such frames ends like one mostly of
        garbage (PARSE_ERROR), through the same counter.
        """
        self.ints[self._i_failed] += 1
        self._bad_frame(session, f"{type(exc).__name__}: {exc}"[:200] + f" frame={bytes(raw[:80])!r}")

    def venue_restarted(self, st: BookState, session: WsSession, key: int) -> bool:
        """The first update of an instrument on a fresh connection is older than what we published: did the venue
        restart?

        Binance ids and Hyperliquid block times never go backwards on the real venues, but a restarted venue (or
        emulator) starts its streams over; without this, every update would be rejected forever while the data
        watchdog stays happy. So on an instrument's first update on a new primary connection (a STALE record
        already told readers the book was not live), an older key resets its ordering state instead of being
        rejected. Called only from the reject branch: costs nothing on the common path.
        """
        if not st.reset_pending or key >= st.last_key or session is not st.active:
            return False
        self.out.count("ordering_resets")
        self.out.log("ordering_reset", conn=session.conn_id, symbol=st.symbol, last_key=st.last_key, key=key)
        st.last_key = -1
        st.last_t_ex = 0
        st.reset_pending = False
        return True

    def overlap(self, st: BookState, session: WsSession, key: int) -> bool:
        """A data message from a session that is not the instrument's active one; True when it should be
        processed now (the candidate caught up on this instrument and the lane switched to it)."""
        lane = st.lane
        if lane is not None and session is lane.candidate and key >= st.last_key:
            old = lane.switch(session)
            if lane.supervisor is not None:
                lane.supervisor.switched(old, session)
            if key > st.last_key:
                return True
        self.ints[self._i_overlap] += 1
        return False

    def other(self, raw: bytes, session: WsSession) -> bool:
        """A frame the data decoder refused: classify, count, maybe end the session. Returns False (not data)."""
        kind, detail = type(self).classify(raw)
        return self.control(kind, detail, session, raw)

    def frame_symbol(self, raw: bytes) -> str | None:
        """The instrument a malformed data frame names, when it can still be read (venue loops override)."""
        return None

    def control(self, kind: FrameKind, detail: str, session: WsSession, raw: bytes = b"") -> bool:
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
            # An unreadable update withdraws the quote of the instrument it names; when it names none we can read,
            # of every instrument on that connection (the safe side: their next VALID records restore them).
            st = self.books.get(self.frame_symbol(raw) or "")
            targets = (st,) if st is not None else self._books_of(session)
            first = targets[0] if targets else None
            self.reject(MALFORMED, first, session, 0, first.last_t_ex if first is not None else 0)  # counted once
            for other in targets[1:]:
                self.withdraw(MALFORMED, other, session, 0, other.last_t_ex)
            self._bad_frame(session, detail)
            return True
        else:  # MALFORMED / UNKNOWN
            self.ints[self._i_dropped] += 1
            out.event(EventKind.FRAME_DROPPED, int(kind), session.conn_id)
            self._bad_frame(session, detail)
        return False

    def _books_of(self, session: WsSession) -> tuple[BookState, ...]:
        for lane in self.lanes:
            if session is lane.active or session is lane.candidate:
                return lane.books
        return ()

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

    def connection_lost(self, conn: int, t_ns: int, lane: Lane | None = None) -> None:
        """Publish a STALE (not VALID) record for every instrument of the lane that lost its connection: their
        books are not live until their next VALID records."""
        for st in (lane or self.lanes[0]).books:
            self.publish(self.venue, STALE, st.id, conn, 0, 0, self.current_seq(st), st.last_t_ex, t_ns, t_ns,
                         0.0, 0.0, 0.0, 0.0, 0)
            self._untradeable(st, t_ns)

    def watch_instruments(self, now_ns: int, stale_ns: int,
                          resubscribe: Callable[[WsSession, str], None] | None = None) -> int:
        """The per-instrument watchdog (housekeeping): an instrument with no update for ``stale_ns`` on a
        connection that is delivering other data gets a STALE record (readers stop trading it), a STALE event
        (``aux`` = its id) and a count, and ``resubscribe(session, symbol)`` asks the venue for it again once (a
        subscription the venue dropped comes back; a halted market is acknowledged and stays quiet). Its next
        VALID record makes it tradeable again. Returns how many fired.

        A silent connection is the supervisor's data watchdog's; this catches one instrument gone quiet on a live
        connection (a subscription the venue dropped, a halted market).
        """
        fired = 0
        for st in self.books.values():
            seen = st.n_books + st.rejects
            if seen != st.seen:
                st.seen = seen
                st.t_last = now_ns
            session = st.active
            if st.silent or session is None or not session.data_count or not session.opened_ns:
                continue
            since = max(st.t_last, session.opened_ns)
            if now_ns - since > stale_ns:
                st.silent = True
                st.stale_count += 1
                fired += 1
                age_ms = (now_ns - since) // 1_000_000
                self.publish(self.venue, STALE, st.id, session.conn_id, 0, 0, self.current_seq(st), st.last_t_ex,
                             now_ns, now_ns, 0.0, 0.0, 0.0, 0.0, 0)
                self._untradeable(st, now_ns)
                self.out.count("instrument_stale")
                self.out.event(EventKind.STALE, FailureClass.STALE, session.conn_id, age_ms, st.id)
                self.out.log("instrument_stale", symbol=st.symbol, id=st.id, conn=session.conn_id, silent_ms=age_ms)
                if resubscribe is not None:
                    resubscribe(session, st.symbol)
                    self.out.count("resubscribes")
        return fired

    def untradeable_ns(self, t_ns: int) -> int:
        """The longest time any instrument's newest record was not tradeable since start-up (housekeeping)."""
        return max(st.untradeable_ns(t_ns) for st in self.books.values())

    def current_seq(self, st: BookState) -> int:
        """The seq field of the instrument's newest published record (a STALE record repeats it)."""
        return max(st.last_key, 0)
