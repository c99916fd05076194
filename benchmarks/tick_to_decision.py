"""Tick-to-decision over the real fleet processes: synthetic feed -> `caerus strategy` -> `caerus execution`.

Measured path: a feed process (pinned like the fleet's feeds) stamps t_recv and publishes BOOK records into two
real SWMR rings; the real strategy process (`caerus strategy`, config ``mode = "bench"``: fire an IOC on every
Binance book it sees, through the same loop code as the real strategy) reads them in latest-value mode and
pushes ORDER records into the real MPSC ring; the real execution process (`caerus execution --transport null`)
stamps t_pickup, runs its risk checks, calls the null send_msg (the seam where the reference system's measured
interval ends) and writes EXEC records. Intervals come from the EXEC records, read after the run:
tick_to_decision = t_decision - t_recv, queue_transit = t_pickup - t_decision (the reference's "shared-memory
hop + pickup"), book_hop = t_seen - t_publish, decision = t_decision - t_seen (the strategy's own work, free of
scheduling). No parsing: the feed publishes synthetic books (DESIGN.md's
measured best case on 2 cores: ~5 us p50 / 8-10 us p99 tick to decision).

Reference, same run, same pinning: the equivalent pipeline over multiprocessing.Queue (feed -> Queue -> strategy
process running the same decision object -> Queue -> execution process), blocking gets.

Calibration, same run: ``floor.book_hop`` is the same feed read by a bare spinning reader pinned to the hot CPU
(nothing else of ours there): what a ring hop costs on this machine at this moment. On a shared, loaded box it is
far above DESIGN.md's ~1.1 us, and every ring number above it inherits that.

CPU placement follows caerus.plan.plan_fleet(): on a 2-core box the feed runs on the housekeeping CPU and
strategy + execution share the other with the hybrid wait policy.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from benchmarks.common import at_least, at_most, benchmark_parser, emit, summarize
from caerus.execution.config import ExecutionConfig
from caerus.plan import format_cpu_list, plan_fleet
from caerus.records.book import BOOK_SEQ, BOOK_T_PUBLISH, BOOK_T_RECV, BOOK_VENUE
from caerus.records.exec import EXEC_T_DECISION, EXEC_T_PICKUP, EXEC_T_SEEN, EXEC_TRIGGER_T_PUBLISH, EXEC_TRIGGER_T_RECV
from caerus.strategy.config import StrategyConfig

BOOK_INTERVAL_S = 500e-6  # one Binance book every 0.5 ms (+ a Hyperliquid book every 10th)
HL_EVERY = 10
WARMUP_FRACTION = 0.05  # first samples dropped (start-up, caches, first faults)

STRATEGY_TOML = 'mode = "bench"\norder_qty = 0.001\nmax_position = 0.002\nidle_spins = {strategy_spins}\n'
# Limits at their hard ceilings (caerus.execution.config): orders beyond 100/s are refused MAX_ORDER_RATE after
# t_pickup, so the measured interval (decision -> pickup) is the same for them; they are still EXEC records.
EXECUTION_TOML = (
    "idle_spins = {execution_spins}\n"
    "[risk]\nmax_order_qty = 0.01\nmax_position = 0.25\nmax_orders_per_s = 100\nprice_band_bps = 500.0\n"
)


# -- synthetic feed (both pipelines) -----------------------------------------------------------------------


def _pin(cpus: tuple[int, ...]) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))


def _gc_off() -> None:
    """Collect once, freeze what survives and switch the collector off: no collection pause inside the loop."""
    gc.collect()
    gc.freeze()
    gc.disable()


def _book_fields(i: int, venue: int, t_recv: int, t_publish: int) -> tuple:
    px = 95_000.0 + (i % 50) * 0.1
    if venue == 2:
        px = float(round(px))
    # wire.BOOK order: venue, flags, symbol, conn, reason, _pad, seq, t_exchange, t_recv, t_publish, prices/sizes,
    # t_wire (0: no kernel stamp)
    return (venue, 1, 0, 1, 0, 0, i, t_recv - 1_000_000, t_recv, t_publish, px, 1.0,
            px + (0.1 if venue == 1 else 1.0), 1.0, 0)


def ring_feed(shm: str, seg_bn: str, seg_hl: str, n: int, cpus: tuple[int, ...], go: mp.Event, ready: mp.Event
              ) -> None:
    os.environ["CAERUS_SHM_DIR"] = shm
    from caerus.ipc.swmr import SwmrWriter
    from caerus.wire import BOOK

    _pin(cpus)
    wb = SwmrWriter.create(seg_bn, BOOK, 4096)
    wh = SwmrWriter.create(seg_hl, BOOK, 4096)
    pub_b = wb.publish
    pub_h = wh.publish
    tns = time.time_ns
    # A first Hyperliquid book so the execution's price band has a reference before the first order.
    t = tns()
    pub_h(*_book_fields(0, 2, t, tns()))
    wb.beat()
    wh.beat()
    ready.set()
    go.wait()
    gc.disable()
    for i in range(1, n + 1):
        if i % HL_EVERY == 0:
            t = tns()
            pub_h(2, 1, 0, 1, 0, 0, i, t - 1_000_000, t, tns(), 95_000.0, 1.0, 95_001.0, 1.0, 0)
        t = tns()
        pub_b(1, 1, 0, 1, 0, 0, i, t - 1_000_000, t, tns(), 95_000.0, 1.0, 95_000.1, 1.0, 0)
        if i % 256 == 0:
            wb.beat()
            wh.beat()
        time.sleep(BOOK_INTERVAL_S)
    wb.beat()
    wh.beat()
    time.sleep(0.5)
    wb.close()
    wh.close()


def queue_feed(q: mp.Queue, n: int, cpus: tuple[int, ...], go: mp.Event) -> None:
    _pin(cpus)
    put = q.put
    tns = time.time_ns
    go.wait()
    gc.disable()
    for i in range(1, n + 1):
        if i % HL_EVERY == 0:
            t = tns()
            put((2, 1, 0, 1, 0, 0, i, t - 1_000_000, t, tns(), 95_000.0, 1.0, 95_001.0, 1.0))
        t = tns()
        put((1, 1, 0, 1, 0, 0, i, t - 1_000_000, t, tns(), 95_000.0, 1.0, 95_000.1, 1.0))
        time.sleep(BOOK_INTERVAL_S)
    put(None)


def queue_strategy(qin: mp.Queue, qout: mp.Queue, cpus: tuple[int, ...]) -> None:
    from caerus.strategy.bench import BenchFireEveryBook
    from caerus.strategy.config import StrategyConfig

    _pin(cpus)
    arb = BenchFireEveryBook(StrategyConfig(mode="bench"))
    get = qin.get
    put = qout.put
    tns = time.time_ns
    _gc_off()
    oid = 0
    while True:
        rec = get()
        if rec is None:
            put(None)
            return
        t_seen = tns()
        d = arb.on_book(rec, t_seen)
        if d is None:
            continue
        oid += 1
        t_decision = tns()
        put((oid, 1, 2, d[0], 1, d[1], rec[BOOK_VENUE], 0, d[2], d[3], rec[BOOK_SEQ], rec[BOOK_T_RECV],
             rec[BOOK_T_PUBLISH], t_seen, t_decision))
        arb.fired(d, t_decision)


def queue_execution(qin: mp.Queue, result: mp.Queue, cpus: tuple[int, ...], n: int) -> None:
    _pin(cpus)
    get = qin.get
    tns = time.time_ns
    out = np.zeros((n + 16, 4), dtype=np.int64)  # t_recv, t_publish, t_seen, t_decision (+ t_pickup below)
    pickup = np.zeros(n + 16, dtype=np.int64)
    _gc_off()
    k = 0
    while True:
        o = get()
        if o is None:
            break
        t_pickup = tns()
        if k < n + 16:
            out[k, 0] = o[11]
            out[k, 1] = o[12]
            out[k, 2] = o[13]
            out[k, 3] = o[14]
            pickup[k] = t_pickup
            k += 1
    result.put((out[:k].copy(), pickup[:k].copy()))


# -- the two pipelines --------------------------------------------------------------------------------------


def _intervals(t_recv: np.ndarray, t_publish: np.ndarray, t_seen: np.ndarray, t_decision: np.ndarray,
               t_pickup: np.ndarray) -> dict[str, np.ndarray]:
    skip = int(len(t_recv) * WARMUP_FRACTION)
    sl = slice(skip, None)
    return {
        "tick_to_decision": (t_decision - t_recv)[sl],
        "queue_transit": (t_pickup - t_decision)[sl],
        "book_hop": (t_seen - t_publish)[sl],
        "decision": (t_decision - t_seen)[sl],  # the strategy's own work: decision + order fields, no scheduling
    }


def run_ring(n: int, feed_cpus: tuple[int, ...], hot_cpus: tuple[int, ...], policy: str, spins: tuple[int, int]
             ) -> tuple[dict, dict]:
    from caerus.ipc.counter_block import CounterBlock
    from caerus.ipc.swmr import SwmrReader
    from caerus.wire import EXEC

    shm = Path("/dev/shm") / f"caerus-bench-t2d-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    shm.mkdir()
    work = Path(tempfile.mkdtemp(prefix="caerus-t2d-"))
    env = {**os.environ, "CAERUS_SHM_DIR": str(shm), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    os.environ["CAERUS_SHM_DIR"] = str(shm)
    (work / "strategy.toml").write_text(STRATEGY_TOML.format(strategy_spins=spins[0]))
    (work / "execution.toml").write_text(EXECUTION_TOML.format(execution_spins=spins[1]))
    s = "bench"
    procs: list[subprocess.Popen] = []
    ctx = mp.get_context("fork")
    go, ready = ctx.Event(), ctx.Event()
    feed = ctx.Process(target=ring_feed, args=(str(shm), f"{s}.book.binance", f"{s}.book.hyperliquid", n,
                                               feed_cpus, go, ready), daemon=True)
    cpus = format_cpu_list(hot_cpus)
    common = ["--wait-policy", policy, "--cpus", cpus, "--attach-timeout", "30"]
    try:
        feed.start()
        if not ready.wait(30):
            raise RuntimeError("benchmark feed did not start")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "caerus", "execution", "--segment", f"{s}.orders", "--transport", "null",
             "--book-segment", f"{s}.book.hyperliquid", "--exec-segment", f"{s}.exec", "--exec-capacity",
             str(1 << (max(n, 2) - 1).bit_length()), "--config", str(work / "execution.toml"),
             "--stats-segment", f"{s}.stats.execution", *common], env=env))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "caerus", "strategy", "--segment", f"{s}.book.binance", "--segment",
             f"{s}.book.hyperliquid", "--order-segment", f"{s}.orders", "--config", str(work / "strategy.toml"),
             "--stats-segment", f"{s}.stats.strategy", *common], env=env))
        blocks = {}
        for name in ("strategy", "execution"):
            blocks[name] = CounterBlock.attach(f"{s}.stats.{name}", timeout=30)
        deadline = time.monotonic() + 30
        while any(b.get("state") != 1 for b in blocks.values()):
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[3]} exited with {p.returncode} during start-up")
            if time.monotonic() > deadline:
                raise RuntimeError("strategy/execution did not reach the running state within 30 s")
            time.sleep(0.02)
        reader = SwmrReader.attach(f"{s}.exec", EXEC, timeout=10)
        time.sleep(0.3)  # let both settle into their loops (gc frozen, first housekeeping done)
        go.set()
        feed.join(n * BOOK_INTERVAL_S * 20 + 60)
        last, stable_since = -1, time.monotonic()
        while time.monotonic() - stable_since < 0.5:  # until the execution stops receiving orders
            cur = blocks["execution"].get("orders")
            if cur != last:
                last, stable_since = cur, time.monotonic()
            time.sleep(0.1)
        counters = {name: b.snapshot() for name, b in blocks.items()}
        rows = []
        while (rec := reader.read_next()) is not None:
            rows.append(rec)
        lost = reader.lost
        reader.close()
        for b in blocks.values():
            b.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if feed.is_alive():
            feed.terminate()
        feed.join(5)
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    if not rows:
        raise RuntimeError("no EXEC records: the ring pipeline produced no orders")
    cols = [EXEC_TRIGGER_T_RECV, EXEC_TRIGGER_T_PUBLISH, EXEC_T_SEEN, EXEC_T_DECISION, EXEC_T_PICKUP]
    arr = np.array([[r[c] for c in cols] for r in rows], dtype=np.int64)
    info = {
        "books_published": n,
        "orders": len(rows),
        "exec_lost": lost,
        "strategy_counters": {k: v for k, v in counters["strategy"].items() if v},
        "execution_counters": {k: v for k, v in counters["execution"].items() if v},
    }
    return _intervals(*(arr[:, i] for i in range(5))), info


def run_floor(n: int, feed_cpus: tuple[int, ...], hot_cpus: tuple[int, ...]) -> np.ndarray:
    """Calibration: the same feed, read by a bare spinning latest-value reader pinned to the hot CPU (no strategy,
    no execution, no yields): the environment's floor for t_seen - t_publish at this moment."""
    from caerus.ipc.swmr import SwmrReader
    from caerus.wire import BOOK

    shm = Path("/dev/shm") / f"caerus-bench-floor-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    shm.mkdir()
    os.environ["CAERUS_SHM_DIR"] = str(shm)
    ctx = mp.get_context("fork")
    go, ready = ctx.Event(), ctx.Event()
    feed = ctx.Process(target=ring_feed, args=(str(shm), "floor.book.binance", "floor.book.hyperliquid", n,
                                               feed_cpus, go, ready), daemon=True)
    out = np.zeros(n, dtype=np.int64)
    k = 0
    before = os.sched_getaffinity(0)
    try:
        feed.start()
        if not ready.wait(30):
            raise RuntimeError("benchmark feed did not start")
        reader = SwmrReader.attach("floor.book.binance", BOOK, timeout=10)
        _pin(hot_cpus)
        read = reader.read_latest
        tns = time.time_ns
        gc.disable()
        go.set()
        deadline = time.monotonic() + n * BOOK_INTERVAL_S * 20 + 30
        spins = 0
        while k < n:
            rec = read()
            if rec is None:
                spins += 1
                if not spins & 0xFFFF and (not feed.is_alive() or time.monotonic() > deadline):
                    break
                continue
            out[k] = tns() - rec[BOOK_T_PUBLISH]
            k += 1
        gc.enable()
        reader.close()
    finally:
        os.sched_setaffinity(0, before)
        if feed.is_alive():
            feed.terminate()
        feed.join(5)
        shutil.rmtree(shm, ignore_errors=True)
    return out[int(k * WARMUP_FRACTION):k]


def run_queue(n: int, feed_cpus: tuple[int, ...], hot_cpus: tuple[int, ...]) -> tuple[dict, dict]:
    ctx = mp.get_context("fork")
    q1, q2, result = ctx.Queue(), ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    procs = [
        ctx.Process(target=queue_feed, args=(q1, n, feed_cpus, go), daemon=True),
        ctx.Process(target=queue_strategy, args=(q1, q2, hot_cpus), daemon=True),
        ctx.Process(target=queue_execution, args=(q2, result, hot_cpus, n), daemon=True),
    ]
    for p in procs:
        p.start()
    time.sleep(0.5)
    go.set()
    out, pickup = result.get(timeout=n * BOOK_INTERVAL_S * 20 + 60)
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.terminate()
    return _intervals(out[:, 0], out[:, 1], out[:, 2], out[:, 3], pickup), {"books_published": n,
                                                                           "orders": len(pickup)}


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--books", type=int, help="Binance books per pipeline and round (default 2000 quick, "
                        "10000 full)")
    parser.add_argument("--rounds", type=int, help="alternating ring/queue rounds (default 2 quick, 4 full): both "
                        "pipelines see the same machine load")
    parser.add_argument("--wait-policy", choices=("spin", "hybrid", "sleep"), help="override the plan's policy")
    parser.add_argument("--strategy-spins", type=int, help="hybrid policy: strategy's empty polls before a yield "
                        "(default: the strategy config default)")
    parser.add_argument("--execution-spins", type=int, help="hybrid policy: execution's empty polls before a "
                        "yield (default: the execution config default)")
    args = parser.parse_args(argv)
    n = args.books or (2000 if args.quick else 10_000)
    rounds = args.rounds or (2 if args.quick else 4)
    spins = (StrategyConfig().idle_spins if args.strategy_spins is None else args.strategy_spins,
             ExecutionConfig().idle_spins if args.execution_spins is None else args.execution_spins)
    plan = plan_fleet()
    feed_cpus = plan.placement("feed-binance").cpus
    hot = plan.placement("strategy")
    policy = args.wait_policy or hot.wait_policy
    _pin(plan.housekeeping)  # this process (the orchestrator) stays off the hot CPU
    print(f"plan: feed on CPU {format_cpu_list(feed_cpus)}, strategy+execution on CPU {format_cpu_list(hot.cpus)} "
          f"({policy}, idle spins strategy {spins[0]} / execution {spins[1]}); {rounds} x {n} Binance books "
          f"per pipeline every {BOOK_INTERVAL_S * 1e6:.0f} us, rounds alternate floor/ring/queue", flush=True)
    ring_parts, queue_parts, ring_infos, queue_infos, floor_parts = [], [], [], [], []
    for _ in range(rounds):
        floor_parts.append(run_floor(n, feed_cpus, hot.cpus))
        r, ri = run_ring(n, feed_cpus, hot.cpus, policy, spins)
        q, qi = run_queue(n, feed_cpus, hot.cpus)
        ring_parts.append(r)
        queue_parts.append(q)
        ring_infos.append(ri)
        queue_infos.append(qi)
    ring = {k: np.concatenate([p[k] for p in ring_parts]) for k in ring_parts[0]}
    queue = {k: np.concatenate([p[k] for p in queue_parts]) for k in queue_parts[0]}
    ring_info = {"rounds": ring_infos, "books_published": n * rounds, "orders": sum(i["orders"] for i in ring_infos)}
    queue_info = {"rounds": queue_infos, "books_published": n * rounds,
                  "orders": sum(i["orders"] for i in queue_infos)}
    metrics: dict[str, dict] = {}
    for side, data in (("ring", ring), ("queue", queue)):
        for name in ("tick_to_decision", "queue_transit", "book_hop", "decision"):
            metrics[f"{side}.{name}"] = summarize(data[name])
    metrics["floor.book_hop"] = summarize(np.concatenate(floor_parts))
    ratios = {}
    for name in ("tick_to_decision", "queue_transit"):
        for q in ("p50", "p99"):
            ratios[f"{name}.{q}.queue_over_ring"] = metrics[f"queue.{name}"][q] / metrics[f"ring.{name}"][q]
    ratios["book_hop.p50.ring_over_floor"] = metrics["ring.book_hop"]["p50"] / metrics["floor.book_hop"]["p50"]
    r_t2d = metrics["ring.tick_to_decision"]
    goals = [
        at_most("ring.tick_to_decision.p50", r_t2d["p50"], 11_300),
        at_most("ring.tick_to_decision.p99", r_t2d["p99"], 16_300),
        at_most("ring.queue_transit.p50", metrics["ring.queue_transit"]["p50"], 1_000),
        at_least("tick_to_decision.p50.queue_over_ring", ratios["tick_to_decision.p50.queue_over_ring"], 10),
        at_least("tick_to_decision.p99.queue_over_ring", ratios["tick_to_decision.p99.queue_over_ring"], 10),
    ]
    negatives = {k: int(np.count_nonzero(v < 0)) for k, v in {**{f"ring.{a}": b for a, b in ring.items()},
                                                              **{f"queue.{a}": b for a, b in queue.items()}}.items()}
    emit("tick_to_decision", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"plan": plan.to_dict(), "wait_policy": policy,
                "idle_spins": {"strategy": spins[0], "execution": spins[1]}, "book_interval_us": BOOK_INTERVAL_S * 1e6,
                "ring": ring_info, "queue": queue_info, "clock_artifacts": negatives,
                "reference_cpp": {"tick_to_decision": {"p50": 11_300, "p99": 16_300},
                                  "queue_transit": {"p50": 500, "p99": 3_300}},
                "note": "no parsing (synthetic books); DESIGN.md best case on 2 cores ~5 us p50 / 8-10 us p99"})
    print(f"ring: {ring_info['orders']} orders from {n * rounds} Binance books (latest-value mode coalesces books the "
          f"strategy had not read yet); queue: {queue_info['orders']} orders; clock artifacts: {negatives}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
