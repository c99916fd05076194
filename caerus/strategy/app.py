"""`caerus strategy`: the strategy process -- the book rings -> decisions per instrument -> MPSC order ring.

One ring per venue, or one per feed process when the plan splits a venue's instruments across several
(caerus.plan.feed_shares): every ring is read the same way, each record's venue and instrument are its own fields.

One instrument (the default) reads each ring in latest-value mode: a burst is skipped to its newest book. Many
instruments share each venue's ring, so it is read in every-record mode (the newest record of the ring is not the
newest of every instrument); each record goes to its instrument's decision object (caerus.strategy.instrument_desk),
and a reader lapped by the feed counts what it lost (``books.lost``).

Hot loop (per new book): stamp t_seen, sample book_hop (t_seen - t_publish), run the decision; on an order stamp
t_decision immediately before the push into the order ring and sample tick_to_decision (t_decision - the trigger
book's t_recv). Samples go into preallocated buffers; every ``housekeeping_ms`` (checked with one clock read per
1024 loop passes) they are drained into ``<metrics-dir>/strategy.hlog``, counters are mirrored into the counter
block, heartbeats are written, the kill file is checked and readers re-attach to restarted feeds.

The run skeleton (GC policy, error-counted loop, housekeeping clock, kill switch) is caerus.runtime's; this
module owns what is the strategy's own: its flags, counters, the loop body and its housekeeping. The loop
allocates nothing per book that outlives the pass (the record tuple, the timestamps and a fired order's fields
are freed by reference counting; nothing in the loop or its housekeeping forms a reference cycle).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from caerus import instruments
from caerus.config import ConfigError, load_config
from caerus.ipc import segment
from caerus.ipc.mpsc import MpscProducer
from caerus.ipc.swmr import SwmrReader
from caerus.ipc.wait import WaitPolicy, make_waiter
from caerus.metrics.hdr import IntervalLog, SampleBuffer, instrument_tag
from caerus.records.book import BOOK_SEQ, BOOK_SYMBOL, BOOK_T_PUBLISH, BOOK_T_RECV, BOOK_T_WIRE, BOOK_VENUE
from caerus.runtime.args import add_process_args, fail_config, parse_cpus
from caerus.runtime.attach import attach_until
from caerus.runtime.clock import CHECK_MASK, HousekeepingClock
from caerus.runtime.counters import Counters, index_of, open_counters
from caerus.runtime.memwatch import MemWatch
from caerus.runtime.pinning import pin
from caerus.runtime.process import serve
from caerus.runtime.supervisor import HaltCause, Supervisor
from caerus.strategy.ab import AbWindows
from caerus.strategy.config import StrategyConfig
from caerus.strategy.instrument_desk import Desk
from caerus.strategy.latency_arb import D_PX, D_QTY, D_REASON, D_SIDE, GUARD_NAMES
from caerus.strategy.model_signal import ModelError
from caerus.strategy.orders import FINAL_NAMES, OrderTable
from caerus.wire import BOOK, EXEC, ORDER, OrderFlags, OrderReason, Tif, Venue

PROCESS = "strategy"
TAGS = ("book_hop", "tick_to_decision", "tick_to_eval", "wire_to_decision", "seen_to_decision",
        # shadow orders (StrategyConfig.shadow_every_ms): their own t_decision - t_recv, and real fires'
        # tick_to_decision split by whether shadows were flowing in that window (shadow_ab_window_s)
        "shadow_to_decision", "tick_to_decision_warmed", "tick_to_decision_unwarmed",
        # real fires' tick_to_decision by the arm that decided them (signal = "ab": naive and model windows)
        "tick_to_decision_naive", "tick_to_decision_model")
TTD_CAPACITY = 1 << 14


def instrument_tags(names: tuple[str, ...]) -> tuple[str, ...]:
    """Many instruments: each one's tick_to_decision as its own tagged interval in the .hlog (the tag names it);
    ``inst.`` as for the per-instrument counters, so the report puts them in its Instruments table."""
    return tuple(instrument_tag(name, "tick_to_decision") for name in names) if len(names) > 1 else ()
INT_COUNTERS = (
    "state",
    "halt_cause",
    "books.binance",
    "books.hyperliquid",
    "books.other",
    "decisions",
    "orders",
    *(f"orders.{r.name.lower()}" for r in OrderReason),
    "ring_full",
    "errors",
    "reattached",
    "orders_lost_to_restart",
    *GUARD_NAMES,
    # what became of the orders (from the EXEC ring; latency_arb mode)
    "orders.in_flight",
    "orders.unknown",
    *(f"orders.final.{n}" for n in FINAL_NAMES),
    "order_table_full",
    "shadows",  # shadow orders pushed (never sent: execution rehearses and drops them)
    "shadows.ring_full",
    "shadows.warming",  # 1 while shadows flow (A/B windows alternate it)
    # the naive/model A/B (signal = "ab"): windows of ab.window_ns from ab.t0_ns (epoch ns), even ones naive;
    # the time each arm has had and the orders each decided (wire.OrderFlags.MODEL tags the model's)
    "ab.model_arm",  # 1 while the model decides
    "ab.t0_ns",
    "ab.window_ns",
    "ab.naive_ns",
    "ab.model_ns",
    "ab.orders.naive",
    "ab.orders.model",
    "exec.records",
    "exec.unmatched",
    "exec.lost",
    "books.lost",  # records the feeds wrote over before this process read them (many-instrument mode)
    "instruments",
    # CPU time (user + system) since the first book, and the books since then (cost per book: cpu_ns / cpu_books;
    # meaningful with the sleep wait policy)
    "cpu_ns",
    "cpu_books",
)
FLOAT_COUNTERS = ("position", "basis_bps", "ewma_bps", "signal_bps")
# Order ids: strategy_id in the bits above ID_LOW_BITS, the low bits of the producer sequence below, so two
# strategies never share an id and one strategy repeats an id only after 2**48 ns (~78 h) of sequence numbers.
ID_LOW_BITS = 48
ID_LOW_MASK = (1 << ID_LOW_BITS) - 1
_NEVER = 1 << 62  # a next-shadow time no clock reaches (shadows off)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment", action="append", required=True, metavar="NAME",
                        help="book ring to read (at least twice: Binance and Hyperliquid, any order; one per feed "
                             "process when the plan splits a venue)")
    parser.add_argument("--order-segment", required=True, metavar="NAME", help="MPSC order ring (S.orders)")
    parser.add_argument("--exec-segment", metavar="NAME",
                        help="EXEC ring the execution engine writes (S.exec): order results, the confirmed "
                             "position (required in latency_arb mode)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="strategy TOML config (default: defaults)")
    parser.add_argument("--kill-file", metavar="PATH", help="halt once this file exists (overrides config)")
    parser.add_argument("--instruments", type=Path, metavar="FILE",
                        help="the session's instruments.json (default: BTC alone)")
    add_process_args(parser, wait_default=WaitPolicy.HYBRID)  # shares a core with execution on small hosts


@dataclass
class _Ctx:
    cfg: StrategyConfig
    readers: list[SwmrReader]
    producer: MpscProducer
    counters: Counters
    sup: Supervisor
    desk: Desk
    log: IntervalLog | None
    hop: SampleBuffer
    ttd: SampleBuffer
    tte: SampleBuffer  # tick_to_eval: every book read, fire or not
    wtd: SampleBuffer  # wire_to_decision: fires whose trigger book carries a kernel receive stamp
    std: SampleBuffer  # seen_to_decision: t_decision - t_seen, fires (the decision's own segment of the path)
    wait_policy: str
    clock: HousekeepingClock
    memwatch: MemWatch
    books: list[int]  # per venue code (0 = other)
    by_reason: list[int]
    seq: int = 0  # the producer sequence of the last pushed order (starts at the start-up time in ns)
    ring_full: int = 0
    order_segment: str = ""
    orders_lost_to_restart: int = 0
    exec_reader: SwmrReader | None = None
    table_full: int = 0
    shadows: int = 0
    shadow_ring_full: int = 0
    warming: bool = True  # shadows flow in this window (always, unless shadow_ab_window_s alternates it)
    ab_t0: int = 0  # start of the first window of both A/Bs (shadows on/off, naive/model)
    shadow_ab: AbWindows | None = None  # shadow_ab_window_s: arm A = shadows flow
    signal_ab: AbWindows | None = None  # signal = "ab": arm A = the naive rule, arm B = the model
    model_arm: bool = False  # the model decides now (signal_ab's arm B, or signal = "model" throughout)
    arm_orders: list[int] = field(default_factory=lambda: [0, 0])  # real orders by deciding arm (naive, model)
    cpu0: tuple[int, int] | None = None  # (CPU time, books read) when the first book had been read
    # shadow_to_decision: shadow orders' t_decision - t_recv
    shd: SampleBuffer = field(default_factory=lambda: SampleBuffer(1 << 14))
    # real fires' tick_to_decision while shadows flow, and while they do not (A/B windows)
    ttd_warm: SampleBuffer = field(default_factory=lambda: SampleBuffer(1 << 14))
    ttd_cold: SampleBuffer = field(default_factory=lambda: SampleBuffer(1 << 14))
    # real fires' tick_to_decision by deciding arm (naive/model A/B)
    ttd_naive: SampleBuffer = field(default_factory=lambda: SampleBuffer(1 << 14))
    ttd_model: SampleBuffer = field(default_factory=lambda: SampleBuffer(1 << 14))
    # beside ttd.arr (at least its capacity): each sample's instrument id, split off the hot path into
    # ttd_inst_tags (inst.<NAME>.tick_to_decision, by instrument id; empty for one instrument)
    ttd_sym: np.ndarray = field(default_factory=lambda: np.zeros(TTD_CAPACITY, dtype=np.int64))
    ttd_inst_tags: tuple[str, ...] = ()


def run(args: argparse.Namespace) -> int:
    # -- validate everything before attaching anything ----------------------------------------------------
    if len(args.segment) < 2:
        return fail_config(f"--segment must be given at least twice (Binance and Hyperliquid books), "
                           f"got {len(args.segment)}")
    if len(set(args.segment)) != len(args.segment):
        return fail_config(f"--segment given twice: {sorted({s for s in args.segment if args.segment.count(s) > 1})} "
                           f"(each ring would be read twice)")
    try:
        cfg = load_config(StrategyConfig, args.config, "strategy")
        cpus = parse_cpus(args.cpus)
        insts = instruments.load(args.instruments)
    except (ConfigError, ValueError) as exc:
        return fail_config(str(exc))
    unknown = sorted(set(cfg.instruments) - set(insts.names))
    if unknown:
        return fail_config(f"[instruments] names {', '.join(unknown)}, which the session does not trade "
                           f"({', '.join(insts.names)})")
    if cfg.mode == "latency_arb" and not args.exec_segment:
        return fail_config("--exec-segment is required in latency_arb mode: the position comes from confirmed "
                           "fills (the EXEC ring the execution engine writes), never from assumed ones")
    if args.metrics_dir:
        try:
            Path(args.metrics_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return fail_config(f"--metrics-dir {args.metrics_dir}: {exc.strerror}")
    try:
        pin(cpus)
    except ValueError as exc:
        return fail_config(str(exc))

    try:
        desk = Desk(cfg, insts)  # reads and checks a model file (signal = "model") before anything is attached
    except ModelError as exc:
        return fail_config(str(exc))

    def on_halt(cause: HaltCause) -> None:
        desk.halt()

    sup = Supervisor.for_process(cfg, args.kill_file, on_halt)
    counters: Counters | None = None
    readers: list[SwmrReader] = []
    readers_extra: list[SwmrReader] = []  # the exec ring reader (closed with the book readers)
    producer = None
    log = None
    ctx: _Ctx | None = None
    memwatch = MemWatch(PROCESS)
    try:
        inst_ints, inst_floats = desk.counter_names()
        counters = open_counters(args.stats_segment, INT_COUNTERS + inst_ints, FLOAT_COUNTERS + inst_floats)
        for name in args.segment:
            r = attach_until(functools.partial(SwmrReader.attach, name, BOOK),
                             f"book segment {name!r}", lambda: sup.stopping, args.attach_timeout, counters.beat)
            if r is None:
                return 0
            if desk.multi:
                r.seek_end()  # every-record mode: books from now on (what the ring held before is old)
            readers.append(r)
        producer = attach_until(lambda t: MpscProducer.attach(args.order_segment, ORDER, timeout=t),
                                f"order segment {args.order_segment!r}", lambda: sup.stopping,
                                args.attach_timeout, counters.beat)
        if producer is None:
            return 0
        exec_reader = None
        if args.exec_segment:
            exec_reader = attach_until(lambda t: SwmrReader.attach(args.exec_segment, EXEC, timeout=t),
                                       f"exec segment {args.exec_segment!r}", lambda: sup.stopping,
                                       args.attach_timeout, counters.beat)
            if exec_reader is None:
                return 0
            exec_reader.seek_end()  # results of orders pushed from now on (an earlier run's are not ours)
            readers_extra.append(exec_reader)
        inst_tags = instrument_tags(insts.names)
        if args.metrics_dir:
            log = IntervalLog(Path(args.metrics_dir) / f"{PROCESS}.hlog", TAGS + inst_tags,
                              comment=f"caerus {PROCESS} pid {os.getpid()} mode {cfg.mode}")
        ctx = _Ctx(cfg=cfg, readers=readers, producer=producer, counters=counters, sup=sup, desk=desk, log=log,
                   hop=SampleBuffer(1 << 16), ttd=SampleBuffer(TTD_CAPACITY), ttd_inst_tags=inst_tags,
                   tte=SampleBuffer(1 << 16),
                   wtd=SampleBuffer(1 << 14), std=SampleBuffer(1 << 14), wait_policy=args.wait_policy,
                   clock=HousekeepingClock(cfg.housekeeping_ms), memwatch=memwatch, books=[0, 0, 0],
                   by_reason=[0] * (max(OrderReason) + 1), seq=time.time_ns(), order_segment=args.order_segment,
                   exec_reader=exec_reader)
        ctx.ab_t0 = time.time_ns()
        if cfg.shadow_ab_window_s:
            ctx.shadow_ab = AbWindows(ctx.ab_t0, int(cfg.shadow_ab_window_s * 1e9))
        if cfg.ab_window_ns:
            ctx.signal_ab = AbWindows(ctx.ab_t0, cfg.ab_window_ns)
        ctx.model_arm = desk.model is not None and ctx.signal_ab is None
        run_ctx = ctx
        serve(PROCESS, sup, lambda: _loop(run_ctx), lambda: _housekeeping(run_ctx), ctx.clock, memwatch)
        return 0
    except segment.SegmentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if ctx is not None:
            sup.stop()
            _housekeeping(ctx)  # final counters and samples
            memwatch.report()
        if log is not None:
            log.close()
        if ctx is not None:
            ctx.producer.close()  # the current one: housekeeping closed any it replaced
        elif producer is not None:
            producer.close()
        for r in (*readers, *readers_extra):
            r.close()
        if counters is not None and args.stats_segment:
            counters.close()


def _loop(ctx: _Ctx) -> None:
    """The hot loop; returns on stop (or raises, and the caller counts the error and re-enters)."""
    sup = ctx.sup
    desk = ctx.desk
    arbs = desk.arbs
    n_arbs = len(arbs)
    multi = desk.multi
    # many instruments share a ring: every record (see the module docstring); one: the newest only
    reads = tuple(r.read_next if multi else r.read_latest for r in ctx.readers)
    inst_books = desk.books
    inst_fires = desk.fires
    push = ctx.producer.try_push
    tns = time.time_ns
    hop_buf = ctx.hop
    ttd_buf = ctx.ttd
    hop = hop_buf.arr
    ttd = ttd_buf.arr
    ttd_sym = ctx.ttd_sym
    hop_cap = hop_buf.capacity
    ttd_cap = ttd_buf.capacity
    tte_buf = ctx.tte
    tte = tte_buf.arr
    tte_cap = tte_buf.capacity
    wtd_buf = ctx.wtd
    wtd = wtd_buf.arr
    std_buf = ctx.std
    std = std_buf.arr
    books = ctx.books
    by_reason = ctx.by_reason
    waiter = make_waiter(ctx.wait_policy, spins=ctx.cfg.idle_spins)
    idle = waiter.idle
    reset = waiter.reset
    sid = ctx.cfg.strategy_id
    sid_hi = sid << ID_LOW_BITS
    yield_after_order = ctx.cfg.yield_after_order and ctx.wait_policy == WaitPolicy.HYBRID
    sched_yield = os.sched_yield
    hl = int(Venue.HYPERLIQUID)
    ioc = int(Tif.IOC)
    b_venue, b_seq, b_t_recv, b_t_publish = BOOK_VENUE, BOOK_SEQ, BOOK_T_RECV, BOOK_T_PUBLISH
    b_t_wire = BOOK_T_WIRE
    b_sym = BOOK_SYMBOL
    clock = ctx.clock
    reads_results = arbs[0].orders is not None  # None in bench mode: no results read
    exec_reader = ctx.exec_reader
    read_exec = exec_reader.read_next if exec_reader is not None and reads_results else None
    # bench mode reads no results: an empty table (never an order in flight) keeps the loop's test one attribute;
    # many instruments read results on every pass (one order table per instrument)
    first_orders = arbs[0].orders
    in_flight_of = first_orders if first_orders is not None and not multi else OrderTable(sid, capacity=2)
    always_exec = multi
    on_exec = desk.on_exec
    shadow_ns = int(ctx.cfg.shadow_every_ms * 1e6)
    shadow_flag = int(OrderFlags.SHADOW)
    bn = int(Venue.BINANCE)
    warming = ctx.warming
    next_shadow = 0 if shadow_ns and warming else _NEVER
    shd_buf = ctx.shd
    split_fires = shadow_ns > 0  # real fires also go to tick_to_decision_warmed / _unwarmed
    # The naive/model A/B: the arm turns on the first book seen at or after each window edge, before its decision,
    # so an order's t_seen is in the window of the arm that decided it. One comparison per book; never true
    # without the A/B.
    signal_ab = ctx.signal_ab
    ab_edge = 0 if signal_ab is not None else _NEVER
    model_flag = int(OrderFlags.MODEL)
    arm_flag = model_flag if ctx.model_arm else 0
    arm_orders = ctx.arm_orders
    ttd_naive, ttd_model = ctx.ttd_naive, ctx.ttd_model
    passes = 0
    while not sup.stopping:
        worked = False
        if read_exec is not None and (always_exec or in_flight_of.in_flight):
            # An order is out: its result comes back on the EXEC ring (one record per pass; results are rare).
            erec = read_exec()
            if erec is not None:
                on_exec(erec)
                worked = True
        for read in reads:
            rec = read()
            if rec is None:
                continue
            t_seen = tns()
            worked = True
            sym = rec[b_sym]
            if sym >= n_arbs:
                books[0] += 1  # an instrument this process does not trade (a feed started with another list)
                continue
            arb = arbs[sym]
            inst_books[sym] += 1
            if t_seen >= ab_edge:
                assert signal_ab is not None  # ab_edge is _NEVER without the A/B
                ctx.model_arm = model_arm = signal_ab.arm(t_seen) == 1
                ab_edge = signal_ab.next_edge(t_seen)
                desk.use_model(model_arm)
                arm_flag = model_flag if model_arm else 0
            d = arb.on_book(rec, t_seen)
            flags = 0
            if d is not None:
                seq = ctx.seq + 1
                oid = sid_hi | (seq & ID_LOW_MASK)
                orders = arb.orders
                if orders is not None and not orders.free(seq):
                    ctx.table_full += 1  # the slot still holds an order in flight or unknown: hold this one back
                    d = None
            elif t_seen >= next_shadow and rec[b_venue] == bn:
                # Nothing fired: rehearse the fire path (same pricing, push, pickup, risk, signing; never sent).
                next_shadow = t_seen + shadow_ns
                d = arb.shadow(t_seen)
                if d is not None:
                    seq = ctx.seq + 1  # a shadow takes a producer sequence like any order (execution sees it)
                    oid = sid_hi | (seq & ID_LOW_MASK)
                    flags = shadow_flag
            if d is not None:
                t_decision = t_eval = tns()
                if push(oid, sid, hl, d[D_SIDE], ioc, d[D_REASON], rec[b_venue], flags | arm_flag, d[D_PX], d[D_QTY],
                        rec[b_seq], rec[b_t_recv], rec[b_t_publish], t_seen, t_decision, seq, rec[b_t_wire], sym, 0):
                    # -- after the order is out: bookkeeping and samples -------------------------------------
                    ctx.seq = seq
                    if flags:  # a shadow: its own histogram; no fire, no position, no tick_to_eval sample
                        if shd_buf.n < shd_buf.capacity:
                            shd_buf.arr[shd_buf.n] = t_decision - rec[b_t_recv]
                            shd_buf.n += 1
                        else:
                            shd_buf.full += 1
                        ctx.shadows += 1
                        if yield_after_order:
                            sched_yield()
                    else:
                        if split_fires:
                            _sample(ctx.ttd_warm if warming else ctx.ttd_cold, t_decision - rec[b_t_recv])
                        if signal_ab is not None:
                            _sample(ttd_model if arm_flag else ttd_naive, t_decision - rec[b_t_recv])
                        arm_orders[1 if arm_flag else 0] += 1
                        if ttd_buf.n < ttd_cap:
                            ttd[ttd_buf.n] = t_decision - rec[b_t_recv]
                            ttd_sym[ttd_buf.n] = sym  # its instrument: one store, split off the hot path
                            ttd_buf.n += 1
                        else:
                            ttd_buf.full += 1
                        if std_buf.n < std_buf.capacity:
                            std[std_buf.n] = t_decision - t_seen
                            std_buf.n += 1
                        else:
                            std_buf.full += 1
                        t_wire = rec[b_t_wire]
                        if t_wire:  # 0: the feed's client had no kernel stamp (never a substitute number)
                            if wtd_buf.n < wtd_buf.capacity:
                                wtd[wtd_buf.n] = t_decision - t_wire
                                wtd_buf.n += 1
                            else:
                                wtd_buf.full += 1
                        arb.fired(d, t_decision, oid, seq)
                        by_reason[d[D_REASON]] += 1
                        inst_fires[sym] += 1
                        if yield_after_order:
                            sched_yield()
                elif flags:
                    ctx.shadow_ring_full += 1
                else:
                    ctx.ring_full += 1
            else:
                t_eval = tns()  # no fire: stamped after the decision (a fire's is its t_decision, before the push)
            # tick_to_eval, every book, fire or not (sampled after the order is out, never before the push); a book
            # that carried a shadow has no sample: its stamp came after the rehearsal, not after the decision
            if flags:
                pass
            elif tte_buf.n < tte_cap:
                tte[tte_buf.n] = t_eval - rec[b_t_recv]
                tte_buf.n += 1
            else:
                tte_buf.full += 1
            if hop_buf.n < hop_cap:
                hop[hop_buf.n] = t_seen - rec[b_t_publish]
                hop_buf.n += 1
            else:
                hop_buf.full += 1
            venue = rec[b_venue]
            books[venue if venue < 3 else 0] += 1
        if worked:
            reset()
        else:
            idle()
        passes += 1
        if not passes & CHECK_MASK and clock.due(tns()):
            _housekeeping(ctx)
            push = ctx.producer.try_push  # housekeeping may have re-attached to a restarted execution
            if ctx.warming != warming:  # an A/B window turned
                warming = ctx.warming
                next_shadow = 0 if shadow_ns and warming else _NEVER
            if read_exec is not None and ctx.exec_reader is not None:
                read_exec = ctx.exec_reader.read_next  # ... and the exec reader to its new ring


def _sample(buf: SampleBuffer, v: int) -> None:
    """One sample into a split buffer (after the order is out: fires only, never per book)."""
    if buf.n < buf.capacity:
        buf.arr[buf.n] = v
        buf.n += 1
    else:
        buf.full += 1


def _housekeeping(ctx: _Ctx) -> None:
    """Off the hot path: metrics, counters, heartbeat, kill file, reader refresh."""
    if ctx.log is not None:
        ctx.log.drain("book_hop", ctx.hop)
        ctx.log.drain_keyed("tick_to_decision", ctx.ttd, ctx.ttd_sym, ctx.ttd_inst_tags)
        ctx.log.drain("tick_to_eval", ctx.tte)
        ctx.log.drain("wire_to_decision", ctx.wtd)
        ctx.log.drain("seen_to_decision", ctx.std)
        ctx.log.drain("shadow_to_decision", ctx.shd)
        ctx.log.drain("tick_to_decision_warmed", ctx.ttd_warm)
        ctx.log.drain("tick_to_decision_unwarmed", ctx.ttd_cold)
        ctx.log.drain("tick_to_decision_naive", ctx.ttd_naive)
        ctx.log.drain("tick_to_decision_model", ctx.ttd_model)
        ctx.log.maybe_flush()
    else:
        for buf in (ctx.hop, ctx.ttd, ctx.tte, ctx.wtd, ctx.std, ctx.shd, ctx.ttd_warm, ctx.ttd_cold, ctx.ttd_naive,
                    ctx.ttd_model):
            buf.n = 0
    if ctx.shadow_ab is not None:
        ctx.warming = ctx.shadow_ab.arm(time.time_ns()) == 0
    ctx.sup.check_kill_file()
    ctx.memwatch.tick()
    for r in ctx.readers:
        if r.refresh():
            ctx.counters.ints[_I["reattached"]] += 1
    new_producer = ctx.producer.reattach(ctx.order_segment, ORDER)
    if new_producer is not None:
        # Execution restarted and re-created the order ring: orders still unconsumed in the old lane never reach
        # it. Count them, switch, and let the loop rebind its push.
        ctx.orders_lost_to_restart += ctx.producer.pending()
        ctx.producer.close()
        ctx.producer = new_producer
        ctx.counters.ints[_I["reattached"]] += 1
    ctx.counters.ints[_I["orders_lost_to_restart"]] = ctx.orders_lost_to_restart
    desk = ctx.desk
    ints = ctx.counters.ints
    tables = [a.orders for a in desk.arbs if a.orders is not None]
    if ctx.exec_reader is not None:
        if ctx.exec_reader.refresh():
            ints[_I["reattached"]] += 1
        # Keep up with the ring (other strategies' records too), so the loop reads only fresh ones.
        while (erec := ctx.exec_reader.read_next()) is not None:
            if tables:
                desk.on_exec(erec)
        ints[_I["exec.lost"]] = ctx.exec_reader.lost
    if tables:
        now = time.time_ns()
        for orders in tables:
            orders.expire(now)
        ints[_I["orders.in_flight"]] = sum(o.in_flight for o in tables)
        ints[_I["orders.unknown"]] = sum(o.unknown for o in tables)
        for i, name in enumerate(FINAL_NAMES):
            ints[_I[f"orders.final.{name}"]] = sum(o.finals[i] for o in tables)
        ints[_I["exec.records"]] = sum(o.records for o in tables)  # each table sees its instrument's records
        ints[_I["exec.unmatched"]] = sum(o.unmatched for o in tables)
    ints[_I["order_table_full"]] = ctx.table_full
    ints[_I["shadows"]] = ctx.shadows
    ints[_I["shadows.ring_full"]] = ctx.shadow_ring_full
    ints[_I["shadows.warming"]] = int(ctx.warming and ctx.cfg.shadow_every_ms > 0)
    ints[_I["ab.model_arm"]] = int(ctx.model_arm)
    ints[_I["ab.orders.naive"]], ints[_I["ab.orders.model"]] = ctx.arm_orders
    if ctx.signal_ab is not None:
        ints[_I["ab.t0_ns"]] = ctx.signal_ab.t0
        ints[_I["ab.window_ns"]] = ctx.signal_ab.window_ns
        ints[_I["ab.naive_ns"]], ints[_I["ab.model_ns"]] = ctx.signal_ab.time_per_arm(time.time_ns())
    ints[_I["state"]] = int(ctx.sup.state)
    ints[_I["halt_cause"]] = int(ctx.sup.halt_cause)
    ints[_I["books.other"]] = ctx.books[0]
    ints[_I["books.binance"]] = ctx.books[int(Venue.BINANCE)]
    ints[_I["books.hyperliquid"]] = ctx.books[int(Venue.HYPERLIQUID)]
    ints[_I["decisions"]] = desk.decisions
    ints[_I["instruments"]] = len(desk.arbs)
    ints[_I["books.lost"]] = sum(r.lost for r in ctx.readers)
    books = sum(ctx.books)
    if books:
        if ctx.cpu0 is None:
            ctx.cpu0 = (time.process_time_ns(), books)
        ints[_I["cpu_ns"]] = time.process_time_ns() - ctx.cpu0[0]
        ints[_I["cpu_books"]] = books - ctx.cpu0[1]
    ints[_I["orders"]] = sum(ctx.by_reason)
    for reason in OrderReason:
        ints[_I[f"orders.{reason.name.lower()}"]] = ctx.by_reason[reason]
    ints[_I["ring_full"]] = ctx.ring_full
    ints[_I["errors"]] = ctx.sup.errors
    for i, total in enumerate(desk.guards()):
        ints[_I[GUARD_NAMES[i]]] = total
    floats = ctx.counters.floats
    first = desk.arbs[0]
    floats[_F["position"]] = first.position
    floats[_F["basis_bps"]] = first.basis
    floats[_F["ewma_bps"]] = first.ewma
    floats[_F["signal_bps"]] = first.signal
    desk.write_counters(ctx.counters, len(INT_COUNTERS), len(FLOAT_COUNTERS))
    ctx.counters.beat()


_I = index_of(INT_COUNTERS)
_F = index_of(FLOAT_COUNTERS)
