"""Everything a feed writes besides the hot path's record: events ring, counters, metrics log, log lines.

Owns the feed's shared-memory outputs (the books ring, the events ring, the counter block), its sample buffers and
``.hlog``, and the structured JSON log lines on stderr. Implements the supervisor's ``Reporter`` (counts, events,
classified failures, connection lost) and :meth:`housekeeping`, which the feed runs every ~100 ms off the hot
path: writer heartbeats, counter-block heartbeat and gauges, and draining the samples into the interval log.

Many instruments (or a share of a split venue): the hot loop stores each sample's instrument slot (its position in
this feed's list) beside it in :attr:`FeedOutputs.sample_keys`, one store into a preallocated array, and the drain
also records every sample under ``inst.<NAME>.feed_internal.<venue>`` / ``inst.<NAME>.info_age.<venue>`` (tagged
intervals of the same ``.hlog``; see docs/feeds.md, Per-instrument latency).

Counter names are the contract with the session's progress display: see :data:`INT_COUNTERS` and docs/feeds.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import numpy as np

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.swmr import SwmrWriter
from caerus.ipc.wait import WaitPolicy
from caerus.metrics.hdr import IntervalLog, SampleBuffer, instrument_tag
from caerus.net.failures import Failure, counter_name
from caerus.venuekit.book_rules import reject_counter
from caerus.wire import BOOK, EVENT, EventKind, FailureClass, RejectReason

if TYPE_CHECKING:
    from caerus.net.ws import WsSession


class ReportedLoop(Protocol):
    """What the outputs read from the feed loop they report for (caerus.venuekit.feed_loop.FeedSink). A protocol,
    so that this module does not import the loop that imports it."""

    @property
    def n_books(self) -> int: ...

    @property
    def last_t_ex(self) -> int: ...

    @property
    def active(self) -> WsSession | None: ...

    @property
    def books(self) -> Mapping[str, Any]: ...

    def untradeable_ns(self, t_ns: int) -> int: ...

    def take_samples(self) -> int: ...

    def connection_lost(self, conn: int, t_ns: int, lane: Any = None) -> None: ...

#: integer counters in the feed's counter block (documented in docs/feeds.md)
INT_COUNTERS: tuple[str, ...] = (
    "msgs",  # WebSocket messages received (all kinds)
    "books",  # valid BookRecords published
    "rejects",  # updates refused by validation (sum of reject.*)
    *(reject_counter(int(r)) for r in RejectReason),
    "untradeable_ns",  # time the newest published record was not tradeable (start-up, STALE, REJECTED) until VALID
    "frames_failed",  # frames whose handling raised: counted and dropped, the connection stays
    "frames_dropped",  # frames that are neither data nor a known control frame (not JSON / unknown shape)
    "overlap_dropped",  # rotation overlap: updates already published by the other connection
    "ordering_resets",  # a fresh connection's stream started older than what was published (venue restarted)
    "acks",
    "pongs",
    "greetings",
    "sub_errors",
    "venue_errors",
    "connects",  # connection attempts (primary and rotation candidates)
    "connected",  # WebSocket handshakes completed
    "reconnects",  # the primary connection ended and a new one was scheduled
    "stale",  # data watchdog fired
    "instrument_stale",  # per-instrument watchdog fired: one instrument silent on a live connection
    "resubscribes",  # subscribe frames sent again for a silent instrument (once per silence)
    "instruments",  # instruments this feed carries
    "rotations",  # make-before-break switches completed
    "pings",  # application keepalive pings sent
    *(counter_name(c) for c in FailureClass),
    "conn",  # id of the active connection (0: none)
    "connected_now",  # 1 while a connection is delivering, else 0
    "last_t_recv_ns",  # t_recv of the newest published record
    "last_t_exchange_ns",
    "events",  # records written to the events ring
    "samples_full",  # latency samples not stored because the buffer was full before a drain
    "wait_policy",  # the event loop that ran: 1 spin, 2 hybrid, 3 sleep
    "warm_reads",  # synthetic frames the warm path's shadow connection read (--warm-every-us; caerus.feed.warm)
    "warm_skipped",  # warm-path ticks skipped: the feed had published since the previous one
    "warm_intruders",  # other local connections the warm path's shadow listener closed unread at start
    # this process's CPU time (user + system) since its first message, and the messages since then: the cost per
    # message is cpu_ns / cpu_msgs (start-up -- imports, TLS set-up -- left out; meaningful with the sleep wait
    # policy: a spinning loop burns its core whatever arrives)
    "cpu_ns",
    "cpu_msgs",
)
WAIT_POLICY_CODES = {str(p): i for i, p in enumerate(WaitPolicy, 1)}  # spin 1, hybrid 2, sleep 3
# Connection-level events also get a log line (rejects and dropped frames are counted, not logged one by one).
_LOGGED_EVENTS = frozenset({EventKind.CONNECTED, EventKind.ROTATION_STARTED, EventKind.ROTATION_DONE,
                            EventKind.STALE})
FLOAT_COUNTERS: tuple[str, ...] = ("backoff_s",)
#: per-instrument counters, ``inst.<ID>.<what>`` (the id as in BOOK.symbol), when the feed carries several
INSTRUMENT_INTS: tuple[str, ...] = ("books", "rejects", "stale", "untradeable_ns")


class FeedOutputs:
    """The feed's rings, counter block, metrics and log (one per feed process)."""

    def __init__(
        self,
        venue_name: str,
        books_segment: str,
        events_segment: str,
        stats_segment: str,
        *,
        capacity: int = 4096,
        events_capacity: int = 4096,
        metrics_dir: Path | None = None,
        sample_capacity: int = 1 << 16,
        log_stream: IO[str] | None = None,
        comment: str | None = None,
        venue_code: int,
        instrument_ids: tuple[int, ...] = (),
        instrument_names: tuple[str, ...] = (),
        per_instrument: bool = False,
        process: str | None = None,
    ) -> None:
        self.venue_name = venue_name
        self.process = process or f"feed-{venue_name}"  # a share of a split venue has its own name (caerus.plan)
        self.books = SwmrWriter.create(books_segment, BOOK, capacity)
        self.events = SwmrWriter.create(events_segment, EVENT, events_capacity)
        # many instruments (or a share of them, ``per_instrument``): per-instrument counters for the session's report
        # (inst.<ID>.<what>)
        self.instrument_ids = instrument_ids if per_instrument or len(instrument_ids) > 1 else ()
        inst_ints = tuple(f"inst.{i}.{w}" for i in self.instrument_ids for w in INSTRUMENT_INTS)
        self.counters = CounterBlock.create(stats_segment, ints=INT_COUNTERS + inst_ints, floats=FLOAT_COUNTERS)
        self.feed_internal = SampleBuffer(sample_capacity)
        self.info_age = SampleBuffer(sample_capacity)
        self.stack = SampleBuffer(sample_capacity)  # t_recv - t_wire (busy client with kernel stamps only)
        self.tag_internal = f"feed_internal.{venue_name}"
        self.tag_age = f"info_age.{venue_name}"
        self.tag_stack = f"stack.{venue_name}"
        # each sample's instrument slot (index into instrument_names), stored by the hot loop beside the sample
        self.sample_keys = np.zeros(sample_capacity, dtype=np.uint16)
        names = instrument_names if self.instrument_ids else ()
        if names and len(names) != len(instrument_ids):
            raise ValueError(f"{len(names)} instrument names for {len(instrument_ids)} instrument ids")
        self.inst_tags_internal = tuple(instrument_tag(n, self.tag_internal) for n in names)
        self.inst_tags_age = tuple(instrument_tag(n, self.tag_age) for n in names)
        self.hlog: IntervalLog | None = None
        if metrics_dir is not None:
            self.hlog = IntervalLog(
                Path(metrics_dir) / f"{self.process}.hlog",
                [self.tag_internal, self.tag_age, self.tag_stack, *self.inst_tags_internal, *self.inst_tags_age],
                comment=comment,
            )
        self._log = log_stream or sys.stderr
        self._venue_code = venue_code  # the wire code of every event record (the venue registry's)
        self._idx = {name: i for i, name in enumerate(self.counters.int_names)}
        self.sink: ReportedLoop | None = None
        self._msgs_closed = 0  # messages received by sessions that already ended
        self._cpu0: tuple[int, int] | None = None  # (CPU time, messages) when the first message had arrived

    # -- Reporter ----------------------------------------------------------------------------------------------

    def count(self, name: str, n: int = 1) -> None:
        self.counters.ints[self._idx[name]] += n

    def event(self, kind: EventKind, code: int, conn: int, value: int = 0, aux: int = 0) -> None:
        self.events.publish(self._venue_code, int(kind), int(code), conn, time.time_ns(), value, aux)
        self.counters.ints[self._idx["events"]] += 1
        if kind in _LOGGED_EVENTS:
            self.log(kind.name.lower(), conn=conn, value=value, aux=aux)

    def log(self, what: str, **fields: object) -> None:
        line = {"t_ns": time.time_ns(), "proc": self.process, "event": what, **fields}
        self._log.write(json.dumps(line, default=str) + "\n")
        self._log.flush()

    def failure(self, failure: Failure, session: WsSession, role: str) -> None:
        self._msgs_closed += session.msg_count
        self.count(failure.counter)
        self.event(EventKind.DISCONNECTED, failure.cls, session.conn_id, failure.value, session.data_count)
        self.log(
            "disconnected",
            conn=session.conn_id,
            role=role,
            failure=failure.cls.name,
            value=failure.value,
            detail=failure.detail,
            msgs=session.msg_count,
            data=session.data_count,
            url=session.url,
        )

    def connection_lost(self, conn: int, lane: Any = None) -> None:
        """A connection of the pool is gone: its instruments get STALE records (``lane`` None: the first lane)."""
        if self.sink is not None:
            self.sink.connection_lost(conn, time.time_ns(), lane)
        self.counters.ints[self._idx["connected_now"]] = 0
        self.counters.ints[self._idx["conn"]] = 0

    # -- housekeeping (every ~100 ms, off the hot path) --------------------------------------------------------

    def housekeeping(self, live_msgs: int = 0, backoff_s: float = 0.0) -> None:
        """Heartbeats, gauges and metrics. ``live_msgs``: messages received by the sessions still open."""
        self.books.beat()
        self.events.beat()
        c = self.counters
        c.beat()
        ints = c.ints
        idx = self._idx
        msgs = ints[idx["msgs"]] = self._msgs_closed + live_msgs
        if msgs:
            if self._cpu0 is None:
                self._cpu0 = (time.process_time_ns(), msgs)
            ints[idx["cpu_ns"]] = time.process_time_ns() - self._cpu0[0]
            ints[idx["cpu_msgs"]] = msgs - self._cpu0[1]
        c.floats[0] = backoff_s
        sink = self.sink
        if sink is None:
            return
        ints[idx["books"]] = sink.n_books
        ints[idx["untradeable_ns"]] = sink.untradeable_ns(time.time_ns())
        ints[idx["last_t_exchange_ns"]] = sink.last_t_ex
        active = sink.active
        if active is not None:
            ints[idx["conn"]] = active.conn_id
            ints[idx["connected_now"]] = 1 if active.data_count else 0
            ints[idx["last_t_recv_ns"]] = active.last_data_ns
        if self.instrument_ids:
            self._instrument_counters(sink, ints)
        sink.take_samples()
        if self.hlog is not None:
            self._drain_samples(self.hlog)
            self.hlog.drain(self.tag_stack, self.stack)
            self.hlog.maybe_flush()
        else:
            self.feed_internal.n = 0
            self.info_age.n = 0
            self.stack.n = 0

    def _drain_samples(self, hlog: IntervalLog) -> None:
        """feed_internal and info_age into the interval log, each sample also under its instrument's tag."""
        keys = self.sample_keys
        hlog.drain_keyed(self.tag_internal, self.feed_internal, keys, self.inst_tags_internal)
        hlog.drain_keyed(self.tag_age, self.info_age, keys, self.inst_tags_age)

    def _instrument_counters(self, sink: ReportedLoop, ints: memoryview) -> None:
        base = len(INT_COUNTERS)
        now = time.time_ns()
        by_id = {st.id: st for st in sink.books.values()}
        for k, i in enumerate(self.instrument_ids):
            st = by_id.get(i)
            if st is None:
                continue
            j = base + k * len(INSTRUMENT_INTS)
            ints[j] = st.n_books
            ints[j + 1] = st.rejects
            ints[j + 2] = st.stale_count
            ints[j + 3] = st.untradeable_ns(now)

    def close(self) -> None:
        if self.hlog is not None:
            if self.sink is not None:
                self.sink.take_samples()
                self._drain_samples(self.hlog)
            self.hlog.drain(self.tag_stack, self.stack)
            self.hlog.close()
        self.books.beat()
        self.events.beat()
        self.books.close()
        self.events.close()
        self.counters.close()
