"""Keeps one venue subscription alive: reconnect with back-off, pacing, keepalive, data watchdog, rotation.

The supervisor owns sessions (:class:`~caerus.net.ws.WsSession`), never market data: the feed's sink decodes,
validates and publishes, and tells the supervisor when a rotation candidate has caught up. Everything here runs
off the hot path on a timer (``tick_s``):

- **Reconnect**: a primary session that ends (any classified failure) is replaced after an exponential back-off
  with full jitter (reset once a connection delivered data), never sooner than the new-connection token bucket
  allows; a rate-limited handshake (HTTP 429/418) waits at least ``rate_limited_delay_s``.
- **Keepalive**: sends the venue's application ping (Hyperliquid ``{"method":"ping"}``) every ``keepalive_s``
  on every open session; protocol pings from the venue (Binance) are answered by ``websockets`` itself.
- **Data watchdog**: a session whose newest data message is older than ``stale_after_s`` is ended as STALE. This is
  the only way to notice a subscription that was acknowledged on the wrong route and then stays silent.
- **Rotation (make-before-break)**: once the primary is ``rotate_after_s`` old, a candidate session is opened and
  subscribed; both deliver during the overlap, the sink publishes each update once (ordered by the venue key)
  and, as soon as the candidate has caught up with what was published, switches to it and calls
  :meth:`Supervisor.switched`, which closes the old one as a planned ROTATION. A candidate that does not catch up
  within ``rotation_timeout_s`` is dropped and retried later.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from caerus.net.failures import Failure
from caerus.net.pacing import Backoff, TokenBucket
from caerus.net.ws import MessageHandler, WsSession
from caerus.wire import EventKind, FailureClass


@dataclass(frozen=True)
class Endpoint:
    """Where and how to subscribe: the full URL, subscribe frames and the venue's keepalive."""

    url: str
    subscribe: tuple[bytes | str, ...]
    keepalive_frame: bytes | str | None = None
    keepalive_s: float | None = None
    max_size: int = 1 << 20


@dataclass(frozen=True)
class SupervisorConfig:
    """Timings and limits; defaults are production values, tests pass small ones."""

    open_timeout_s: float = 10.0
    close_timeout_s: float = 2.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    connects_per_min: float = 10.0
    connect_burst: int = 2
    stale_after_s: float = 10.0
    rotate_after_s: float | None = None  # None: never rotate
    rotation_timeout_s: float = 30.0
    rate_limited_delay_s: float = 60.0
    tick_s: float = 0.05

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "rotate_after_s":
                continue
            if not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"supervisor setting {f.name} must be > 0, got {value!r}")
        if self.backoff_cap_s < self.backoff_base_s:
            raise ValueError(f"backoff_cap_s ({self.backoff_cap_s}) < backoff_base_s ({self.backoff_base_s})")
        if self.rotate_after_s is not None and self.rotate_after_s <= self.stale_after_s:
            raise ValueError(f"rotate_after_s ({self.rotate_after_s}) must exceed stale_after_s ({self.stale_after_s})")


class Sink(Protocol):
    """What the feed gives the supervisor: the message handler and the active/candidate session slots."""

    active: WsSession | None
    candidate: WsSession | None
    on_message: MessageHandler

    def frame_failed(self, raw: bytes, session: WsSession, exc: Exception) -> None: ...

    def bind_supervisor(self, supervisor: Supervisor) -> None: ...


class Reporter(Protocol):
    """Where the supervisor reports (counters, structured log lines, event records)."""

    def event(self, kind: EventKind, code: int, conn: int, value: int = 0, aux: int = 0) -> None: ...

    def count(self, name: str, n: int = 1) -> None: ...

    def failure(self, failure: Failure, session: WsSession, role: str) -> None: ...

    def connection_lost(self, conn: int) -> None: ...


class Supervisor:
    """Runs until :meth:`stop`; at most one primary and one rotation candidate at a time."""

    def __init__(
        self,
        endpoint: Endpoint,
        cfg: SupervisorConfig,
        sink: Sink,
        reporter: Reporter,
        *,
        ssl_context: ssl.SSLContext | None = None,
        rng: random.Random | None = None,
        session_factory: Callable[..., WsSession] = WsSession,
        conn_ids: tuple[int, int] = (1, 1),
        bucket: TokenBucket | None = None,
    ) -> None:
        cfg.validate()
        self.endpoint = endpoint
        self.cfg = cfg
        self.sink = sink
        self.reporter = reporter
        self.ssl_context = ssl_context
        # WsSession (websockets' asyncio client) or BusyWsSession (caerus.net.busy): the same seam, any client
        self.session_factory = session_factory
        self.backoff = Backoff(cfg.backoff_base_s, cfg.backoff_cap_s, rng)
        # new connections per minute: the venue counts them per client, so a feed's pool shares one bucket
        self.bucket = bucket if bucket is not None else TokenBucket(cfg.connects_per_min, cfg.connect_burst)
        # connection ids (first, step): a feed's pool gives its lanes interleaved ids (lane k of K: k+1, k+1+K, ...)
        # so every connection of the process has its own (BOOK.conn, EVENT.conn)
        self._conn_step = conn_ids[1]
        self.conn_seq = conn_ids[0] - conn_ids[1]
        self.primary: WsSession | None = None
        self.candidate: WsSession | None = None
        self.rotations = 0
        self._tasks: dict[WsSession, asyncio.Task[Any]] = {}
        self._reported: dict[WsSession, int] = {}  # 1 = CONNECTED reported, 2 = SUBSCRIBED reported too
        self._last_ping: dict[WsSession, float] = {}
        self._candidate_started = 0.0
        self._next_connect = 0.0
        self._next_rotation = 0.0
        self._stop = asyncio.Event()
        self._pings: set[asyncio.Task[None]] = set()
        sink.bind_supervisor(self)

    # -- control -----------------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def sessions(self) -> list[WsSession]:
        """Sessions not yet finished (primary, candidate, and ones closing)."""
        return list(self._tasks)

    def next_connect_in(self) -> float:
        """Seconds until the next primary connection attempt (0 when connected or due)."""
        return 0.0 if self.primary is not None else max(0.0, self._next_connect - time.monotonic())

    async def run(self) -> None:
        """Supervise until stopped, then end every session as SHUTDOWN and report it."""
        try:
            while not self._stop.is_set():
                self._tick(time.monotonic())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.cfg.tick_s)
        finally:
            await self._shutdown()

    # -- the timer ---------------------------------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        for session in [s for s, t in self._tasks.items() if t.done()]:
            self._finish(session, now)
        if self.primary is None and now >= self._next_connect:
            if self.bucket.try_take():
                self.primary = self._start(role="primary")
                self.sink.active = self.primary
            else:
                self._next_connect = now + self.bucket.wait_time()
        now_ns = time.time_ns()
        stale_ns = int(self.cfg.stale_after_s * 1e9)
        for session in list(self._tasks):
            self._report_progress(session)
            if session.ending:
                continue
            if session.opened_ns and now_ns - session.last_data_ns > stale_ns:
                age_ms = (now_ns - session.last_data_ns) // 1_000_000
                session.end(FailureClass.STALE, f"no data for {age_ms} ms", age_ms)
                self.reporter.event(EventKind.STALE, FailureClass.STALE, session.conn_id, age_ms)
                self.reporter.count("stale")
                continue
            self._keepalive(session, now)
        self._rotation(now, now_ns)

    def _start(self, role: str) -> WsSession:
        self.conn_seq += self._conn_step
        ep = self.endpoint
        session = self.session_factory(
            ep.url,
            self.conn_seq,
            self.sink.on_message,
            ep.subscribe,
            ssl_context=self.ssl_context,
            open_timeout_s=self.cfg.open_timeout_s,
            close_timeout_s=self.cfg.close_timeout_s,
            max_size=ep.max_size,
            on_error=self.sink.frame_failed,
        )
        self.reporter.count("connects")
        self.reporter.event(EventKind.CONNECTING, 0, session.conn_id, 1 if role == "primary" else 2)
        self._tasks[session] = asyncio.get_running_loop().create_task(session.serve(), name=f"ws-{session.conn_id}")
        self._last_ping[session] = time.monotonic()
        return session

    def _report_progress(self, session: WsSession) -> None:
        state = self._reported.get(session, 0)
        if state == 0 and session.opened_ns:
            self._reported[session] = state = 1
            self.reporter.count("connected")
            self.reporter.event(EventKind.CONNECTED, 0, session.conn_id)
        if state == 1 and session.subscribed:
            self._reported[session] = 2
            self.reporter.event(EventKind.SUBSCRIBED, 0, session.conn_id)

    def _keepalive(self, session: WsSession, now: float) -> None:
        ep = self.endpoint
        if ep.keepalive_frame is None or ep.keepalive_s is None or not session.opened_ns:
            return
        if now - self._last_ping[session] >= ep.keepalive_s:
            self._last_ping[session] = now
            task = asyncio.get_running_loop().create_task(session.send(ep.keepalive_frame))
            self._pings.add(task)
            task.add_done_callback(self._pings.discard)
            self.reporter.count("pings")

    def _rotation(self, now: float, now_ns: int) -> None:
        cfg = self.cfg
        cand = self.candidate
        if cand is not None:
            if not cand.ending and now - self._candidate_started > cfg.rotation_timeout_s:
                cand.end(FailureClass.STALE, "rotation candidate did not catch up in time")
            return
        p = self.primary
        if cfg.rotate_after_s is None or p is None or not p.opened_ns or p.done or now < self._next_rotation:
            return
        if (now_ns - p.opened_ns) / 1e9 >= cfg.rotate_after_s and self.bucket.try_take():
            self.candidate = cand = self._start(role="candidate")
            self._candidate_started = now
            self.sink.candidate = cand
            self.reporter.event(EventKind.ROTATION_STARTED, 0, cand.conn_id, p.conn_id)

    def switched(self, old: WsSession | None, new: WsSession) -> None:
        """Called by the sink (synchronously) when the candidate caught up and became the active session."""
        self.primary = new
        self.candidate = None
        self.rotations += 1
        self.reporter.count("rotations")
        self.reporter.event(EventKind.ROTATION_DONE, 0, new.conn_id, old.conn_id if old else 0)
        if old is not None:
            old.end(FailureClass.ROTATION, f"replaced by connection {new.conn_id}")

    def _finish(self, session: WsSession, now: float) -> None:
        self._report_progress(session)  # a session that opened and ended between two ticks still gets CONNECTED
        task = self._tasks.pop(session)
        self._reported.pop(session, None)
        self._last_ping.pop(session, None)
        if task.cancelled():
            failure = Failure(FailureClass.SHUTDOWN, 0, "cancelled")
        elif not task.done():  # only from _shutdown: it did not end even when cancelled; the process is leaving
            failure = Failure(FailureClass.SHUTDOWN, 0, "did not end within the close timeout")
        else:
            failure = task.result()
        role = "primary" if session is self.primary else "candidate" if session is self.candidate else "retired"
        self.reporter.failure(failure, session, role)
        if session.data_count:
            self.backoff.reset()
        if role == "candidate":
            self.candidate = None
            self.sink.candidate = None
            self._next_rotation = now + self.backoff.next_delay()
            return
        if role != "primary":
            return
        cand = self.candidate
        if cand is not None and not cand.done and cand.data_count:
            # The primary died mid-rotation but the candidate is already delivering: promote it, no gap.
            self.sink.active = cand
            self.sink.candidate = None
            self.switched(None, cand)
            return
        self.primary = None
        self.sink.active = None
        self.reporter.connection_lost(session.conn_id)
        if self._stop.is_set():
            return
        self.reporter.count("reconnects")
        delay = self.backoff.next_delay() if failure.is_fault else 0.0
        if failure.cls is FailureClass.RATE_LIMITED:
            delay = max(delay, self.cfg.rate_limited_delay_s)
        self._next_connect = now + delay

    async def _shutdown(self) -> None:
        for session in self._tasks:
            session.end(FailureClass.SHUTDOWN, "feed stopping")
        tasks: Sequence[asyncio.Task[Failure]] = list(self._tasks.values())
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.cfg.close_timeout_s + 1.0)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        now = time.monotonic()
        # every session is reported once, a task still running after its cancel too: connects == sum(fail.*)
        for session in list(self._tasks):
            self._finish(session, now)
        for ping in list(self._pings):
            ping.cancel()
