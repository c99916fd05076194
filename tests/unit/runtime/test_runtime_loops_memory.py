"""The strategy and execution hot loops keep nothing: run each in-process over real rings, with the collector
frozen and disabled as in production, and bound what they retain.

Two checks per loop, both by count and size (never by time):
* ``gc.collect()`` after the run finds (almost) no unreachable objects: with the collector off in production,
  every reference cycle made by the loop or its housekeeping would be kept for the life of the process.
* tracemalloc growth between a warmed-up baseline and the end of N more messages is below a bound that a leak
  of a single small object per message (N x >= 16 bytes) would exceed.
"""

from __future__ import annotations

import collections
import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from caerus.execution import app as execution_app
from caerus.execution import config as execution_config
from caerus.execution.books import LatestBooks
from caerus.execution.config import ExecutionConfig, PaperConfig, RiskConfig
from caerus.execution.engine import Engine
from caerus.execution.reconcile import PositionWatch
from caerus.execution.risk import RiskChecker
from caerus.execution.transports.paper import PaperTransport
from caerus.execution.unwind import FlattenOnHalt
from caerus.instruments import DEFAULT
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.metrics.hdr import IntervalLog, SampleBuffer
from caerus.runtime.clock import HousekeepingClock
from caerus.runtime.counters import LocalCounters
from caerus.runtime.memwatch import MemWatch
from caerus.runtime.supervisor import Supervisor
from caerus.strategy import app as strategy_app
from caerus.strategy.config import StrategyConfig
from caerus.strategy.instrument_desk import Desk
from caerus.wire import BOOK, EXEC, OrderReason, Tif, Venue
from tests.fixtures.pipeline import make_book
from tests.kit.rings import order_ring

N = 20_000  # messages in the measured phase
LEAK_BOUND = 96 * 1024  # bytes: one 16-byte object kept per message would be 320 KB
GARBAGE_BOUND = 50  # unreachable objects after the run: one-time ctypes types etc., never one per message
BN, HL = int(Venue.BINANCE), int(Venue.HYPERLIQUID)


def strategy_ctx(cfg: StrategyConfig, readers: list[Any], producer: Any, sup: Supervisor, *, log: Any, seq: int,
                 order_segment: str) -> strategy_app._Ctx:
    """The strategy loop's context as its app builds it, over test readers and producer (spin wait, 4k samples)."""
    return strategy_app._Ctx(
        cfg=cfg, readers=readers, producer=producer,
        counters=LocalCounters(strategy_app.INT_COUNTERS, strategy_app.FLOAT_COUNTERS), sup=sup,
        desk=Desk(cfg, DEFAULT), log=log, hop=SampleBuffer(1 << 12), ttd=SampleBuffer(1 << 12),
        tte=SampleBuffer(1 << 12), wtd=SampleBuffer(1 << 12), std=SampleBuffer(1 << 12),
        wait_policy="spin", clock=HousekeepingClock(cfg.housekeeping_ms), memwatch=MemWatch("strategy"),
        books=[0, 0, 0], by_reason=[0] * (max(OrderReason) + 1), seq=seq, order_segment=order_segment)


class _Driven:
    """A book reader that publishes the next scripted record into a real SWMR ring, then reads it back through
    the ring (so the loop's reads are the production path), and stops the supervisor after ``n`` records."""

    def __init__(self, writer: SwmrWriter, reader: SwmrReader, books: list[tuple], sup: Supervisor) -> None:
        self.writer, self.reader, self.books, self.sup = writer, reader, books, sup
        self.i = 0
        self.n = 0
        self.lost = 0  # a scripted reader is never lapped
        self.drain: object = None  # the execution side's poll, run once per record (keeps the order ring open)

    def read_latest(self) -> tuple | None:
        if self.i >= self.n:
            self.sup.stopping = True
            return None
        if self.drain is not None:
            self.drain()  # type: ignore[operator]
        self.writer.publish(*self.books[self.i % len(self.books)])
        self.i += 1
        return self.reader.read_latest()

    def refresh(self) -> bool:
        return False

    def close(self) -> None:
        self.reader.close()


def _measure(run_phase: object, n: int) -> tuple[int, int]:
    """Run a warm-up phase, then ``n`` messages; returns (retained bytes growth, unreachable objects)."""
    run_phase(n // 4)  # type: ignore[operator]  # warm-up: first-time caches, buffers, interned ints
    gc.collect()
    tracemalloc.start(4)
    try:
        gc.freeze()
        gc.disable()  # as in production (caerus.runtime.gcpolicy): cyclic garbage stays until collected below
        before = tracemalloc.take_snapshot()
        run_phase(n)  # type: ignore[operator]
        after = tracemalloc.take_snapshot()
        gc.set_debug(gc.DEBUG_SAVEALL)
        unreachable = gc.collect()  # before re-enabling: an automatic pass would hide what the phase left
        if unreachable > GARBAGE_BOUND:  # name what formed the cycles in the failure output
            print(collections.Counter(type(o).__name__ for o in gc.garbage).most_common(12))
            print([repr(o)[:150] for o in gc.garbage if type(o).__name__ in ("function", "dict", "tuple")][:20])
        gc.garbage.clear()
    finally:
        gc.set_debug(0)
        gc.enable()
        gc.unfreeze()
        tracemalloc.stop()
    # hdrh's encoder allocates a ctypes buffer of a type per encoded length; caerus.metrics.hdr makes and keeps every
    # such type at a histogram shape's first encode (the warm-up), and the buffers themselves are freed. hdrh's
    # codec stays out of the count as before. Everything else counts.
    flt = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "*/hdrh/codec.py"))
    diff = after.filter_traces(flt).compare_to(before.filter_traces(flt), "lineno")
    growth = sum(s.size_diff for s in diff)
    if growth >= LEAK_BOUND:  # name the call sites in the failure output
        print("\n".join(str(s) for s in diff[:10]))
    return growth, unreachable


@pytest.mark.slow
def test_strategy_loop_and_housekeeping_keep_nothing(shm_dir: Path, tmp_path: Path) -> None:
    cfg = StrategyConfig(mode="bench", housekeeping_ms=0.001, yield_after_order=False)
    t0 = time.time_ns()
    hl_books = [make_book(HL, 95_000.0 + i % 7, 95_001.0 + i % 7, t0 + i, seq=i + 1) for i in range(64)]
    bn_books = [make_book(BN, 95_010.0 + i % 5, 95_011.0 + i % 5, t0 + i, seq=i + 1) for i in range(64)]
    w_hl, w_bn = SwmrWriter.create("m.book.hl", BOOK, 64), SwmrWriter.create("m.book.bn", BOOK, 64)
    consumer, producer = order_ring("m.orders", 1024)
    sup = Supervisor()
    readers = [_Driven(w_hl, SwmrReader.attach("m.book.hl", BOOK, timeout=1), hl_books, sup),
               _Driven(w_bn, SwmrReader.attach("m.book.bn", BOOK, timeout=1), bn_books, sup)]
    log = IntervalLog(tmp_path / "strategy.hlog", strategy_app.TAGS, interval_s=0.001)  # flush on every pass
    ctx = strategy_ctx(cfg, readers, producer, sup, log=log, seq=time.time_ns(), order_segment="m.orders")

    readers[1].drain = consumer.poll

    def phase(n: int) -> None:
        for r in readers:
            r.n = r.i + n // 2
        sup.stopping = False
        strategy_app._loop(ctx)
        while consumer.poll() is not None:  # the execution side, drained off the measured loop
            pass

    try:
        growth, unreachable = _measure(phase, N)
        assert ctx.desk.decisions >= N // 2, "the loop did not see the books it was fed"
        assert sum(ctx.by_reason) > N // 4, "the loop did not fire (nothing on the order path was exercised)"
        assert ctx.counters.ints[strategy_app._I["books.binance"]] > 0, "housekeeping did not run"
        assert log.intervals_written > 10, "housekeeping did not flush the metrics log"
        assert unreachable <= GARBAGE_BOUND, f"the strategy loop left {unreachable} objects in reference cycles"
        assert growth < LEAK_BOUND, f"the strategy loop retained {growth} bytes over {N} books"
    finally:
        log.close()
        for r in readers:
            r.close()
        w_hl.close(unlink=True)
        w_bn.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


@pytest.mark.slow
def test_execution_loop_and_housekeeping_keep_nothing(shm_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The rate check keeps the last max_orders_per_s pickup times (a preallocated ring): small enough that the
    # warm-up fills it, so the measured phase only replaces entries. The rate is above the hard ceiling (so most
    # orders reach the paper fills): lifted here, in the test, where the code reads it.
    monkeypatch.setattr(execution_config, "HARD_MAX_ORDERS_PER_S", 1024)
    cfg = ExecutionConfig(housekeeping_ms=0.001, risk=RiskConfig(max_orders_per_s=1024, max_position=0.25,
                                                                   max_order_qty=1.0),
                          paper=PaperConfig(markout_ms=(0.001,)))
    consumer, producer = order_ring("m.orders", 1024)
    exec_w = SwmrWriter.create("m.exec", EXEC, 1024)
    books = LatestBooks()
    sup = Supervisor()
    transport = PaperTransport(cfg.paper, books, on_reply=lambda r: None)
    risk = RiskChecker(cfg.risk, books)
    engine = Engine(consumer, transport, risk, books, exec_w, max_pending=cfg.max_pending)
    log = IntervalLog(tmp_path / "execution.hlog", execution_app.TAGS, interval_s=0.001)
    ctx = execution_app._Ctx(
        cfg=cfg, engine=engine, sup=sup, counters=LocalCounters(execution_app.INT_COUNTERS,
                                                                execution_app.FLOAT_COUNTERS),
        log=log, consumer=consumer, exec_writer=exec_w, wait_policy="spin",
        clock=HousekeepingClock(cfg.housekeeping_ms), memwatch=MemWatch("execution"),
        watch=PositionWatch(transport, engine, sup, interval_s=cfg.reconcile_interval_s, timeout_s=5.0,
                            process="execution"),
        flattener=FlattenOnHalt(False, engine, transport, sup, 5.0))
    t0 = time.time_ns()
    orders = [(i + 1, 1, HL, 1 if i % 2 else -1, int(Tif.IOC), int(OrderReason.BENCH), BN, 0,
               95_001.0 if i % 2 else 95_000.0, 0.001, i, t0, t0, t0) for i in range(64)]
    real_step = engine.step
    state = [0, 0, 0]  # pushed, limit, calls

    def driven_step() -> bool:
        # An order every other call (the calls between find the ring empty and take the idle path, where
        # housekeeping runs): push, refresh the target venue's book (paper fills and markouts need one), step.
        state[2] ^= 1
        i = state[0]
        if state[2] or i >= state[1]:
            if i >= state[1]:
                sup.stopping = True
            return real_step()
        state[0] = i + 1
        now = time.time_ns()
        books.put(make_book(HL, 95_000.0, 95_001.0, now, seq=i + 1))
        producer.try_push(*orders[i & 63], now, i + 1, 0, 0, 0)  # t_decision now (fresh), seq increasing
        return real_step()

    engine.step = driven_step  # type: ignore[method-assign]

    def phase(n: int) -> None:
        state[1] = state[0] + n
        sup.stopping = False
        execution_app._loop(ctx)
        execution_app._housekeeping(ctx)

    try:
        growth, unreachable = _measure(phase, N)
        assert engine.orders >= N, "the engine did not see the orders it was fed"
        assert transport.accounts[HL].fills > 1000, "paper did not fill (the fill path was not exercised)"
        assert transport.accounts[HL].markout_n[0] > 1000, "markouts were not settled"
        assert log.intervals_written > 10, "housekeeping did not flush the metrics log"
        assert unreachable <= GARBAGE_BOUND, f"the execution loop left {unreachable} objects in reference cycles"
        assert growth < LEAK_BOUND, f"the execution loop retained {growth} bytes over {N} orders"
    finally:
        log.close()
        exec_w.close(unlink=True)
        producer.close()
        consumer.close(unlink=True)


@pytest.mark.parametrize("leak_bytes", [16])
def test_the_bound_catches_a_per_message_leak(leak_bytes: int) -> None:
    """The measurement itself: a loop that keeps one small object per message is caught."""
    kept: list[bytes] = []

    def phase(n: int) -> None:
        for i in range(n):
            kept.append(bytes(leak_bytes) + i.to_bytes(4, "little"))

    growth, _ = _measure(phase, N)
    assert growth >= LEAK_BOUND
