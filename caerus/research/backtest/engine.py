"""The replay loop: book events -> the fleet's own decision code (caerus.strategy's Desk / LatencyArb) -> orders,
fills and EXEC records back, deterministically.

What the live strategy process does (caerus.strategy.app), replayed in simulated time:

* Books reach the strategy at ``t_seen`` (caerus.research.backtest.latency: feed latency, drawn; or
  caerus.research.backtest.observed: a session's own reads, latest-value, as observed) and are fed, in t_seen
  order, one BOOK record tuple at a time to ``Desk.arbs[symbol].on_book(record, t_seen)`` -- the same objects,
  unmodified. A decision takes a producer sequence and order id as the live loop does (a slot still in flight
  holds the order back: ``order_table_full``), and ``fired`` is told at ``t_decision``.
* The order's path (decision, queue transit, engine to send, wire) is drawn per order (as observed: the session's
  own order on the same book); the fill model judges it against the target venue's book as of its arrival
  (caerus.research.backtest.fills: on Hyperliquid the book of the block it reaches, less what our own earlier
  fills took from it); the fill's time (``t_match``) is that block's.
* The EXEC record carrying the result reaches the strategy a wire time and a book hop after the venue answered;
  until then the strategy holds further orders (``guard.in_flight``), exactly as live. Orders with no result
  within ``order_timeout_ms`` expire to UNKNOWN on the strategy's housekeeping period, as live.
* ``signal = "ab"`` alternates the naive rule and the model in windows from the replay's start, switched on the
  first book at or after each edge before its decision, as the live loop does; each order records its arm (the
  ``arm`` column) and caerus.research.backtest.results splits the orders, fills and markouts by arm.

The loop allocates nothing per book around the decision call: record tuples are built before it, in batches of
``BATCH`` books (each built just before its replay and freed after it, see :func:`batches`); the only per-book work
besides ``on_book`` is one comparison against the next due EXEC/housekeeping time.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from caerus.instruments import InstrumentSet
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillModel, FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.research.backtest.observed import ObservedDraws
from caerus.strategy.ab import AbWindows
from caerus.strategy.config import StrategyConfig
from caerus.strategy.instrument_desk import Desk
from caerus.strategy.latency_arb import D_PX, D_QTY, D_REASON, D_SIDE
from caerus.wire import EXEC, BookFlags, Tif, Venue

ID_LOW_BITS = 48  # as caerus.strategy.app: strategy id above, the producer sequence below
ID_LOW_MASK = (1 << ID_LOW_BITS) - 1
_NEVER = 1 << 62
_IOC = int(Tif.IOC)
_HL = int(Venue.HYPERLIQUID)
#: books per batch of records (:func:`batches`): small enough to stay in cache, large enough that numpy's per-call
#: cost (22 calls per batch) is nothing
BATCH = 1024
#: one row per order, these columns (JSON, consistency checks, metrics)
#: (``arm``: 1 when the trained model decided the order, 0 the naive rule: wire.OrderFlags.MODEL, as live)
ORDER_COLUMNS = ("symbol", "reason", "side", "px", "qty", "trigger_venue", "trigger_seq", "trigger_t_recv",
                 "t_seen", "t_decision", "t_pickup", "t_sent", "t_match", "outcome", "fill_px", "fill_qty", "arm")


@dataclass(frozen=True)
class RunSpec:
    """Everything a run depends on (with the events): the same spec and seed give the same result."""

    strategy: StrategyConfig
    instruments: InstrumentSet
    latency: LatencyModel
    fills: FillRules
    seed: int = 1
    start_ns: int | None = None  # the strategy starts here: earlier books only set the latest book per venue
    target_venue: int = _HL


@dataclass
class RunOutput:
    orders: dict[str, np.ndarray]
    decisions: list[int]
    guards: list[list[int]]  # per instrument, in GUARD_NAMES order
    books: list[int]  # books fed per instrument
    table_full: int
    t_first: int  # first and last t_seen replayed
    t_last: int
    events: int
    target: dict[str, np.ndarray] = field(default_factory=dict)  # the target venue's tradeable books: sym, t, mid
    ab: AbWindows | None = None  # signal = "ab": the naive/model windows the replay alternated
    # how the fill model matched: the block clock applied or not, its interval (ns) and where that came from
    fill_notes: dict[str, object] = field(default_factory=dict)


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while records are built and replayed, as it was afterwards.

    Building one tuple per book (hundreds of thousands of container objects) makes the collector scan them again and
    again: measured 0.15 s vs 0.28-0.41 s for 207k records built at once (in batches it would still run every 700
    tuples). Nothing built here forms a
    reference cycle, so pausing it frees nothing later than reference counting would."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def timeline(events: BookEvents, spec: RunSpec, draws: LatencyDraws) -> tuple[BookEvents, np.ndarray, np.ndarray]:
    """(events with t_recv and t_publish filled in, the rows the strategy reads in the order it reads them, their
    t_seen): what the replay reads and when, as arrays (records are built from them batch by batch)."""
    have_recv = bool((events.t_recv != 0).any())
    recv, pub, seen = draws.t_seen(events.venue, events.t_exchange, events.t_recv, events.t_publish,
                                   have_recv=have_recv, symbol=events.symbol, seq=events.seq)
    events = BookEvents(**{**events.__dict__, "t_recv": recv, "t_publish": pub})
    order = np.argsort(seen, kind="stable")
    order = draws.reads(events.venue, events.symbol, events.seq, seen, order)  # as observed: latest-value reads
    if spec.start_ns is not None:
        before = order[seen[order] < spec.start_ns]
        after = order[seen[order] >= spec.start_ns]
        # the newest book per (venue, instrument) before the start is what the strategy reads first (latest value)
        key = events.venue[before].astype(np.int64) << 16 | events.symbol[before]
        _, last = np.unique(key[::-1], return_index=True)
        keep = np.sort(before[::-1][last])
        seen = seen.copy()
        seen[keep] = spec.start_ns
        order = np.concatenate([keep, after])
    return events, order, seen[order]


def prepare(events: BookEvents, spec: RunSpec,
            draws: LatencyDraws) -> tuple[BookEvents, list[tuple], list[int], np.ndarray]:
    """(events with t_recv and t_publish filled in, records, t_seen, the row of each record in ``events``); records
    and t_seen in t_seen order, all of them at once (for callers that keep them; :func:`run` builds them in
    batches)."""
    events, order, seen = timeline(events, spec, draws)
    return events, events.records(events.t_publish, order), seen.tolist(), order


def batches(events: BookEvents, order: np.ndarray, seen: np.ndarray,
            size: int = BATCH) -> Iterator[tuple[list[tuple], list[int]]]:
    """The records of ``order``'s rows and their t_seen (``seen``: in ``order``), ``size`` books at a time, each
    batch built when the loop asks for it. A batch is freed once replayed, so the next one is built in the memory it
    left, still in cache: building and freeing 207k records at once cost ~0.11 s, in batches of 1024 ~0.05 s, and
    a run's peak memory (tracemalloc) fell from 124 MB to 23 MB. The columns are put in read order once, in numpy: a
    batch is then a slice of them (a view), not an index per batch."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1 book, got {size}")
    read = events.take(order)
    pub = read.t_publish
    for i in range(0, len(order), size):
        yield read.records(pub, slice(i, i + size)), seen[i:i + size].tolist()


def run(events: BookEvents, spec: RunSpec, *, batch: int = BATCH) -> RunOutput:
    """Replay ``events`` through a fresh Desk under ``spec`` (``batch``: books per batch of records; any size
    gives the same result)."""
    draws = (LatencyDraws if spec.latency.observed is None else ObservedDraws)(spec.latency, spec.seed)
    with gc_paused():
        events, rows, seen = timeline(events, spec, draws)
        rules = spec.fills
        clock = {"exchange": events.t_exchange, "publish": events.t_publish, "recv": events.t_recv}[rules.clock]
        fills = FillModel(rules, spec.target_venue, events.symbol, events.venue, events.flags, clock, events.bid_px,
                          events.bid_qty, events.ask_px, events.ask_qty)
        desk = Desk(spec.strategy, spec.instruments)
        loop = _Loop(desk, fills, draws, spec)
        # every batch is freed by reference counting as the loop moves on, before the collector is back
        loop.run(batches(events, rows, seen, batch))
    tgt = (events.venue == spec.target_venue) & ((events.flags & (BookFlags.VALID | BookFlags.STALE))
                                                 == BookFlags.VALID)
    t_order = np.argsort(clock[tgt], kind="stable")
    sym_by_row = events.symbol[rows]
    return RunOutput(
        orders={c: np.asarray(v) for c, v in zip(ORDER_COLUMNS, zip(*loop.orders, strict=True), strict=True)}
        if loop.orders else {c: np.zeros(0) for c in ORDER_COLUMNS},
        decisions=[a.decisions for a in desk.arbs],
        guards=[list(a.guards) for a in desk.arbs],
        books=np.bincount(sym_by_row, minlength=len(desk.arbs)).tolist()[:len(desk.arbs)],
        table_full=loop.table_full,
        ab=loop.ab,
        t_first=int(seen[0]) if len(seen) else 0,
        t_last=int(seen[-1]) if len(seen) else 0,
        events=len(rows),
        target={"symbol": events.symbol[tgt][t_order], "t": clock[tgt][t_order],
                "mid": ((events.bid_px[tgt] + events.ask_px[tgt]) * 0.5)[t_order]},
        fill_notes={"blocks": fills.blocks, "block_ns": fills.block_ns, "block_source": fills.block_source},
    )


class _Loop:
    """The per-book loop and the per-order path; state of one run."""

    def __init__(self, desk: Desk, fills: FillModel, draws: LatencyDraws, spec: RunSpec) -> None:
        self.desk = desk
        self.fills = fills
        self.draws = draws
        self.sid = spec.strategy.strategy_id
        self.seq = 0
        self.orders: list[tuple] = []
        self.table_full = 0
        self.pending: list[tuple[int, int, tuple]] = []  # (t the strategy reads it, seq, EXEC record)
        self.hk_ns = int(spec.strategy.housekeeping_ms * 1e6)
        self.next_hk = _NEVER
        paper0 = spec.fills.clock == "publish"
        self.paper0 = paper0
        self.paper_lat = spec.fills.paper_latency_ns
        self.target = spec.target_venue
        # signal = "ab": as the live loop (caerus.strategy.app), windows from the strategy's start (here the replay's
        # start) alternate the naive rule (first) and the model, the arm turning on the first book seen at or after
        # each edge, before its decision; each order carries the arm that decided it
        self.ab: AbWindows | None = None
        self.ab_edge = _NEVER
        self.model_arm = int(desk.model is not None and not spec.strategy.ab_window_ns)
        self.start_ns = spec.start_ns
        if desk.model is not None and spec.strategy.ab_window_ns:
            self.ab = AbWindows(0, spec.strategy.ab_window_ns)  # t0 set at the first book (run)

    def run(self, batches: Iterable[tuple[list[tuple], list[int]]]) -> None:
        """Replay the books, batch by batch (records and their t_seen, in t_seen order); a batch is dropped as soon
        as it is replayed, the next wake time carries over."""
        wake = -1
        for recs, seen in batches:
            if not recs:
                continue
            if wake < 0:
                wake = self._start(seen[0])
            wake = self._replay(recs, seen, wake)
            del recs, seen  # before the next batch is built: it reuses their memory

    def _start(self, t0: int) -> int:
        """At the first book: housekeeping's first period and the A/B windows start; the first wake time."""
        self.next_hk = t0 + self.hk_ns
        wake = self.next_hk
        if self.ab is not None:
            self.ab.t0 = self.ab_edge = t0 if self.start_ns is None else self.start_ns
            wake = min(wake, self.ab_edge)
        return wake

    def _replay(self, recs: list[tuple], seen: list[int], wake: int) -> int:
        """One batch through the decision code; the next wake time."""
        arbs = self.desk.arbs
        n_arbs = len(arbs)
        fire = self._fire
        wake_up = self._wake
        if n_arbs == 1:
            arb = arbs[0]
            on = arb.on_book
            for rec, t in zip(recs, seen, strict=True):
                if t >= wake:
                    wake = wake_up(t)
                d = on(rec, t)
                if d is not None:
                    w = fire(arb, rec, t, d)
                    if w < wake:
                        wake = w
            return wake
        ons = [a.on_book for a in arbs]
        for rec, t in zip(recs, seen, strict=True):
            if t >= wake:
                wake = wake_up(t)
            sym = rec[2]
            if sym >= n_arbs:
                continue
            d = ons[sym](rec, t)
            if d is not None:
                w = fire(arbs[sym], rec, t, d)
                if w < wake:
                    wake = w
        return wake

    def _wake(self, t: int) -> int:
        """EXEC records due by ``t`` to the strategy, then housekeeping (order expiry); the next wake time."""
        pending = self.pending
        on_exec = self.desk.on_exec
        while pending and pending[0][0] <= t:
            on_exec(heapq.heappop(pending)[2])
        if t >= self.next_hk:
            for a in self.desk.arbs:
                if a.orders is not None and a.orders.in_flight:
                    a.orders.expire(t)
            self.next_hk = t - (t - self.next_hk) % self.hk_ns + self.hk_ns
        nxt = self.next_hk
        if self.ab is not None:
            if t >= self.ab_edge:  # the A/B window turned: this book is decided by the new arm
                self.model_arm = self.ab.arm(t)
                self.desk.use_model(self.model_arm == 1)
                self.ab_edge = self.ab.next_edge(t)
            nxt = min(nxt, self.ab_edge)
        return min(pending[0][0], nxt) if pending else nxt

    def _fire(self, arb: object, rec: tuple, t_seen: int, d: tuple) -> int:
        """One decision: take a sequence, draw its path, match it, tell the strategy, schedule its EXEC."""
        seq = self.seq + 1
        orders = arb.orders  # type: ignore[attr-defined]
        if orders is not None and not orders.free(seq):
            self.table_full += 1
            return _NEVER
        self.seq = seq
        oid = (self.sid << ID_LOW_BITS) | (seq & ID_LOW_MASK)
        dec, qt, ps, wire, back = self.draws.order_path((rec[0], rec[2], rec[6]))
        t_decision = t_seen + dec
        t_pickup = t_decision + qt
        t_sent = t_pickup + ps
        t_arrival = t_sent + wire
        if self.paper0:
            t_match = t_pickup + wire
        elif self.paper_lat:
            t_match = t_sent + self.paper_lat + wire
        else:
            t_match = t_arrival
        side, reason, px, qty = d[D_SIDE], d[D_REASON], d[D_PX], d[D_QTY]
        sym = rec[2]
        outcome, fill_px, fill_qty, t_match = self.fills.fill(sym, side, px, qty, t_match)
        arb.fired(d, t_decision, oid, seq)  # type: ignore[attr-defined]
        self.orders.append((sym, reason, side, px, qty, rec[0], rec[6], rec[8], t_seen, t_decision, t_pickup,
                            t_sent, t_match, outcome, fill_px, fill_qty, self.model_arm))
        # the EXEC record as the engine publishes it (caerus.wire.EXEC), final at once (an IOC)
        exec_rec = (oid, self.sid, self.target, side, _IOC, reason, rec[0], 0, px, qty, rec[6], rec[8], rec[9],
                    t_seen, t_decision, seq, 0, sym, 0, t_pickup, t_sent, outcome, 0, 0, 0, fill_px, fill_qty)
        t_back = (t_match if t_match > t_arrival else t_arrival) + back
        heapq.heappush(self.pending, (t_back, seq, exec_rec))
        return t_back


if len(EXEC.names) != 27:  # pragma: no cover - _fire builds EXEC tuples field by field
    raise ImportError(f"caerus.wire.EXEC changed ({EXEC.names}): update caerus.research.backtest.engine._fire")
