"""`caerus strategy`: the strategy process -- two book rings in latest-value mode -> decisions -> MPSC order ring.

Hot loop (per new book): stamp t_seen, sample book_hop (t_seen - t_publish), run the decision; on an order stamp
t_decision immediately before the push into the order ring and sample tick_to_decision (t_decision - the trigger
book's t_recv). Samples go into preallocated buffers; every ``housekeeping_ms`` (checked with one clock read per
1024 loop passes) they are drained into ``<metrics-dir>/strategy.hlog``, counters are mirrored into the counter
block, heartbeats are written, the kill file is checked and readers re-attach to restarted feeds.

Garbage collection is frozen and disabled once start-up is done (DESIGN.md: it brought p99.9 from 5.7 ms to
44 us); the loop allocates nothing per book beyond the record tuple, the timestamps and a fired order's fields.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from caerus.ipc import segment
from caerus.ipc.counters import CounterBlock
from caerus.ipc.mpsc import MpscProducer
from caerus.ipc.swmr import SwmrReader
from caerus.ipc.wait import make_waiter
from caerus.metrics.hdr import IntervalLog, SampleBuffer
from caerus.strategy import runtime
from caerus.strategy.bench import BenchFireEveryBook
from caerus.strategy.config import ConfigError, StrategyConfig, load_config
from caerus.strategy.latency_arb import (
    B_SEQ,
    B_T_PUBLISH,
    B_T_RECV,
    B_VENUE,
    D_PX,
    D_QTY,
    D_REASON,
    D_SIDE,
    GUARD_NAMES,
    LatencyArb,
)
from caerus.strategy.supervisor import HaltCause, Supervisor
from caerus.wire import BOOK, ORDER, OrderReason, Tif, Venue

PROCESS = "strategy"
TAGS = ("book_hop", "tick_to_decision")
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
)
FLOAT_COUNTERS = ("position", "basis_bps", "ewma_bps", "signal_bps")
_HOUSEKEEPING_MASK = 1023  # read the clock for housekeeping once per 1024 loop passes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment", action="append", required=True, metavar="NAME",
                        help="book ring to read (give it twice: Binance and Hyperliquid, any order)")
    parser.add_argument("--order-segment", required=True, metavar="NAME", help="MPSC order ring (S.orders)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="strategy TOML config (default: defaults)")
    parser.add_argument("--kill-file", metavar="PATH", help="halt once this file exists (overrides config)")
    runtime.add_process_args(parser)


@dataclass
class _Ctx:
    cfg: StrategyConfig
    readers: list[SwmrReader]
    producer: MpscProducer
    counters: CounterBlock | runtime.LocalCounters
    sup: Supervisor
    arb: LatencyArb | BenchFireEveryBook
    log: IntervalLog | None
    hop: SampleBuffer
    ttd: SampleBuffer
    wait_policy: str
    order_id: int = 0
    books: list[int] | None = None  # per venue code (0 = other)
    by_reason: list[int] | None = None
    ring_full: int = 0
    next_housekeeping: int = 0  # kept across loop re-entries (after an error) so housekeeping never starves
    order_segment: str = ""
    orders_lost_to_restart: int = 0


def run(args: argparse.Namespace) -> int:
    # -- validate everything before attaching anything ----------------------------------------------------
    if len(args.segment) != 2:
        return runtime.fail_config(f"--segment must be given exactly twice (Binance and Hyperliquid books), "
                                   f"got {len(args.segment)}")
    try:
        cfg = load_config(args.config)
        cpus = runtime.parse_cpus(args.cpus)
    except (ConfigError, ValueError) as exc:
        return runtime.fail_config(str(exc))
    kill_file = args.kill_file if args.kill_file is not None else cfg.kill_file
    if args.metrics_dir:
        try:
            Path(args.metrics_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return runtime.fail_config(f"--metrics-dir {args.metrics_dir}: {exc.strerror}")
    try:
        runtime.pin(cpus)
    except ValueError as exc:
        return runtime.fail_config(str(exc))

    arb: LatencyArb | BenchFireEveryBook = BenchFireEveryBook(cfg) if cfg.mode == "bench" else LatencyArb(cfg)

    def on_halt(cause: HaltCause) -> None:
        arb.halted = True

    sup = Supervisor(kill_file=kill_file, max_errors=cfg.max_errors, error_window_s=cfg.error_window_s,
                     on_halt=on_halt)
    sup.install_signals()
    counters: CounterBlock | runtime.LocalCounters | None = None
    readers: list[SwmrReader] = []
    producer = None
    log = None
    ctx: _Ctx | None = None
    try:
        counters = runtime.open_counters(args.stats_segment, INT_COUNTERS, FLOAT_COUNTERS)
        for name in args.segment:
            r = runtime.attach_until(lambda t, n=name: SwmrReader.attach(n, BOOK, timeout=t),
                                     f"book segment {name!r}", lambda: sup.stopping, args.attach_timeout, counters.beat)
            if r is None:
                return 0
            readers.append(r)
        producer = runtime.attach_until(lambda t: MpscProducer.attach(args.order_segment, ORDER, timeout=t),
                                        f"order segment {args.order_segment!r}", lambda: sup.stopping,
                                        args.attach_timeout, counters.beat)
        if producer is None:
            return 0
        if args.metrics_dir:
            log = IntervalLog(Path(args.metrics_dir) / f"{PROCESS}.hlog", TAGS,
                              comment=f"caerus {PROCESS} pid {os.getpid()} mode {cfg.mode}")
        ctx = _Ctx(cfg=cfg, readers=readers, producer=producer, counters=counters, sup=sup, arb=arb, log=log,
                   hop=SampleBuffer(1 << 16), ttd=SampleBuffer(1 << 14), wait_policy=args.wait_policy,
                   order_id=time.time_ns(), books=[0, 0, 0], by_reason=[0] * (max(OrderReason) + 1),
                   order_segment=args.order_segment)
        sup.running()
        _housekeeping(ctx)
        gc.collect()
        gc.freeze()
        gc.disable()
        while not sup.stopping:
            try:
                _loop(ctx)
            except Exception as exc:  # counted; repeated errors halt trading, the process keeps its counters live
                sup.record_error(exc)
                if sup.errors <= 3:
                    print(f"strategy: loop error {sup.last_error}", file=sys.stderr)
                if time.time_ns() >= ctx.next_housekeeping:
                    ctx.next_housekeeping = time.time_ns() + int(cfg.housekeeping_ms * 1e6)
                    _housekeeping(ctx)
        return 0
    except segment.SegmentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        gc.enable()
        if ctx is not None:
            sup.stop()
            _housekeeping(ctx)  # final counters and samples
        if log is not None:
            log.close()
        if ctx is not None:
            ctx.producer.close()  # the current one: housekeeping closed any it replaced
        elif producer is not None:
            producer.close()
        for r in readers:
            r.close()
        if counters is not None and args.stats_segment:
            counters.close()


def _loop(ctx: _Ctx) -> None:
    """The hot loop; returns on stop (or raises, and the caller counts the error and re-enters)."""
    sup = ctx.sup
    reads = tuple(r.read_latest for r in ctx.readers)
    on_book = ctx.arb.on_book
    fired = ctx.arb.fired
    push = ctx.producer.try_push
    tns = time.time_ns
    hop_buf = ctx.hop
    ttd_buf = ctx.ttd
    hop = hop_buf.arr
    ttd = ttd_buf.arr
    hop_cap = hop_buf.capacity
    ttd_cap = ttd_buf.capacity
    books = ctx.books
    by_reason = ctx.by_reason
    waiter = make_waiter(ctx.wait_policy, spins=ctx.cfg.idle_spins)
    idle = waiter.idle
    reset = waiter.reset
    sid = ctx.cfg.strategy_id
    yield_after_order = ctx.cfg.yield_after_order and ctx.wait_policy == "hybrid"
    sched_yield = os.sched_yield
    hl = int(Venue.HYPERLIQUID)
    ioc = int(Tif.IOC)
    hk_ns = int(ctx.cfg.housekeeping_ms * 1e6)
    next_hk = ctx.next_housekeeping or tns() + hk_ns
    passes = 0
    while not sup.stopping:
        worked = False
        for read in reads:
            rec = read()
            if rec is None:
                continue
            t_seen = tns()
            worked = True
            d = on_book(rec, t_seen)
            if d is not None:
                oid = ctx.order_id + 1
                t_decision = tns()
                if push(oid, sid, hl, d[D_SIDE], ioc, d[D_REASON], rec[B_VENUE], 0, d[D_PX], d[D_QTY], rec[B_SEQ],
                        rec[B_T_RECV], rec[B_T_PUBLISH], t_seen, t_decision):
                    # -- after the order is out: bookkeeping and samples -------------------------------------
                    ctx.order_id = oid
                    if ttd_buf.n < ttd_cap:
                        ttd[ttd_buf.n] = t_decision - rec[B_T_RECV]
                        ttd_buf.n += 1
                    else:
                        ttd_buf.full += 1
                    fired(d, t_decision)
                    by_reason[d[D_REASON]] += 1
                    if yield_after_order:
                        sched_yield()
                else:
                    ctx.ring_full += 1
            if hop_buf.n < hop_cap:
                hop[hop_buf.n] = t_seen - rec[B_T_PUBLISH]
                hop_buf.n += 1
            else:
                hop_buf.full += 1
            venue = rec[B_VENUE]
            books[venue if venue < 3 else 0] += 1
        if worked:
            reset()
        else:
            idle()
        passes += 1
        if not passes & _HOUSEKEEPING_MASK:
            now = tns()
            if now >= next_hk:
                next_hk = ctx.next_housekeeping = now + hk_ns
                _housekeeping(ctx)
                push = ctx.producer.try_push  # housekeeping may have re-attached to a restarted execution


def _housekeeping(ctx: _Ctx) -> None:
    """Off the hot path: metrics, counters, heartbeat, kill file, reader refresh."""
    if ctx.log is not None:
        ctx.log.drain("book_hop", ctx.hop)
        ctx.log.drain("tick_to_decision", ctx.ttd)
        ctx.log.maybe_flush()
    else:
        ctx.hop.n = ctx.ttd.n = 0
    ctx.sup.check_kill_file()
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
    arb = ctx.arb
    ints = ctx.counters.ints
    ints[_I["state"]] = int(ctx.sup.state)
    ints[_I["halt_cause"]] = int(ctx.sup.halt_cause)
    ints[_I["books.other"]] = ctx.books[0]
    ints[_I["books.binance"]] = ctx.books[int(Venue.BINANCE)]
    ints[_I["books.hyperliquid"]] = ctx.books[int(Venue.HYPERLIQUID)]
    ints[_I["decisions"]] = arb.decisions
    ints[_I["orders"]] = sum(ctx.by_reason)
    for r in OrderReason:
        ints[_I[f"orders.{r.name.lower()}"]] = ctx.by_reason[r]
    ints[_I["ring_full"]] = ctx.ring_full
    ints[_I["errors"]] = ctx.sup.errors
    for i, name in enumerate(GUARD_NAMES):
        ints[_I[name]] = arb.guards[i]
    floats = ctx.counters.floats
    floats[_F["position"]] = arb.position
    floats[_F["basis_bps"]] = arb.basis
    floats[_F["ewma_bps"]] = arb.ewma
    floats[_F["signal_bps"]] = arb.signal
    ctx.counters.beat()


_I = {name: i for i, name in enumerate(INT_COUNTERS)}
_F = {name: i for i, name in enumerate(FLOAT_COUNTERS)}
