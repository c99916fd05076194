"""Capture throughput (rings -> chDB, rings -> Kafka) and what a running capture costs the hot path.

Three parts, one run:
1. chDB: a BOOK ring pre-filled with N records is drained by the capture pipeline (in-process) into a fresh chDB
   store: rows/s end to end (ring read + conversion + insert), and the store alone (insert of ready DataFrames).
2. Kafka: the same pipeline producing JSONEachRow messages (100 rows each, the capture default) to
   confluent-kafka's in-process mock cluster (``test.mock.num.brokers``); records/s counted until every delivery
   report came back.
3. Hot path: a paced writer process stamps ``t_recv`` and publishes BOOK records; a strategy-like reader process
   in latest-value mode (hybrid wait) takes ``t_decision`` when it picks a record up. A real ``caerus capture``
   process reads the same ring in every-record mode into chDB; it is SIGSTOPped in the "off" phases and running in
   the "on" phases (ABBA order, same processes throughout); the p50 ratio (on / off) is the cost of capture.
   Placement follows the fleet plan on small machines: writer and capture share the first CPU (the
   feed/housekeeping core), the reader has the last.

    python -m benchmarks.capture_throughput [--quick] [--json PATH]
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import at_least, at_most, benchmark_parser, emit, raise_priority, summarize
from caerus import wire
from caerus.plan import available_cpus, pin_current_process
from caerus.records.book import BOOK_SEQ, BOOK_T_RECV

CTX = mp.get_context("fork")
REPO = Path(__file__).resolve().parents[1]


def _book(i: int, t: int) -> tuple:
    return (1, 1, 0, 1, 0, 0, i, t, t, t, 100_000.0 + (i % 1000) * 0.1, 1.25, 100_000.1 + (i % 1000) * 0.1, 2.5, 0)


def _fill_ring(name: str, n: int):
    from caerus.ipc.swmr import SwmrWriter

    cap = 1 << max(1, (n - 1).bit_length())
    w = SwmrWriter.create(name, wire.BOOK, cap)
    t = time.time_ns()
    for i in range(n):
        w.publish(*_book(i, t + i))
    w.beat()
    return w


# --- 1 + 2: throughput ----------------------------------------------------------------------------------------

def _drain_rate(name: str, output, n: int) -> tuple[float, dict]:
    from caerus.capture.pipeline import Capture, CaptureConfig

    cap = Capture(CaptureConfig(segments=[name], batch_rows=65536, flush_interval_s=0.05), output)
    cap.housekeeping()
    t0 = time.perf_counter()
    while cap.sources[0].records < n:
        if cap.sources[0].drain(65536):
            cap.flush()
    cap.flush()
    return time.perf_counter() - t0, cap.summary()


def bench_chdb(n: int, work: Path) -> dict[str, float]:
    import pandas as pd

    from caerus.capture import rows
    from caerus.capture.pipeline import ChdbOutput
    from caerus.capture.store import ChdbStore

    store = ChdbStore(work / "store")
    try:
        # Warm the insert path once (first query plans, table creation) so the timing is the steady state.
        warm = pd.DataFrame(np.array([_book(i, i) for i in range(1000)], dtype=wire.BOOK.dtype))
        store.insert("books", warm, "warm")
        w = _fill_ring("bench.book.binance", n)
        dt, summary = _drain_rate("bench.book.binance", ChdbOutput(store), n)
        w.close(unlink=True)
        assert summary["rows"]["books"] == n and summary["lost"] == 0, summary
        # The store alone: ready frames of 65536 rows.
        a = np.array([_book(i, i) for i in range(65536)], dtype=wire.BOOK.dtype)
        df = rows.tables_from("book", a)["books"]
        reps = max(1, n // 65536)
        t0 = time.perf_counter()
        for _ in range(reps):
            store.insert("books", df, "store-only")
        dt_store = time.perf_counter() - t0
        stored = int(store.query("SELECT count() FROM caerus.books WHERE session = 'bench'", "TSV"))
        assert stored == n, stored
    finally:
        store.close()
    return {"chdb_rows_per_s": n / dt, "chdb_store_only_rows_per_s": reps * 65536 / dt_store}


def bench_kafka(n: int) -> dict[str, float]:
    from caerus.capture.kafka import KafkaOutput

    out = KafkaOutput("127.0.0.1:1", "caerus_states", buffer_bound=max(2 * n, 100_000), linger_ms=20,
                      extra={"test.mock.num.brokers": 3})
    out.check_reachable(10)
    w = _fill_ring("bench.book.hyperliquid", n)
    t0 = time.perf_counter()
    _drain_rate("bench.book.hyperliquid", out, n)
    left = out.close(120)
    dt = time.perf_counter() - t0
    w.close(unlink=True)
    assert left == 0 and out.delivered == n and out.dropped == 0, (left, out.delivered, out.dropped)
    return {"kafka_records_per_s": n / dt}


# --- 3: hot path with and without capture ------------------------------------------------------------------

HOT_CAPACITY = 1 << 16  # large enough that capture catches up after a stopped phase without losing anything


def _writer_main(name: str, n: int, gap_ns: int, cpu: int, go) -> None:
    from caerus.ipc.swmr import SwmrWriter

    pin_current_process([cpu])
    w = SwmrWriter.create(name, wire.BOOK, HOT_CAPACITY)
    publish = w.publish
    go.wait(120)
    gc.disable()
    nxt = time.perf_counter_ns()
    last_beat = nxt
    for i in range(n):
        nxt += gap_ns
        while time.perf_counter_ns() < nxt:
            time.sleep(0)  # yield the shared core between ticks, like a feed waiting on its socket
        t = time.time_ns()
        publish(1, 1, 0, 1, 0, 0, i, t, t, time.time_ns(), 100_000.0, 1.0, 100_000.1, 1.0, 0)
        if nxt - last_beat > 100_000_000:
            w.beat()
            last_beat = nxt
    for _ in range(3):
        publish(1, 1, 0, 1, 0, 0, -1, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0)
        time.sleep(0.05)
    w.close()


def _reader_main(name: str, n: int, cpu: int, out: str, ready) -> None:
    from caerus.ipc.swmr import SwmrReader
    from caerus.ipc.wait import make_waiter

    pin_current_process([cpu])
    r = SwmrReader.attach(name, wire.BOOK, timeout=120)
    waiter = make_waiter("hybrid")
    t_recv = np.zeros(n, dtype=np.int64)
    lat = np.zeros(n, dtype=np.int64)
    k = 0
    read_latest = r.read_latest
    idle, reset = waiter.idle, waiter.reset
    gc.collect()
    gc.freeze()
    gc.disable()
    ready.set()
    while True:
        rec = read_latest()
        if rec is None:
            idle()
            continue
        t = time.time_ns()
        if rec[BOOK_SEQ] < 0:
            break
        if k < n:
            t_recv[k] = rec[BOOK_T_RECV]
            lat[k] = t - rec[BOOK_T_RECV]
            k += 1
        reset()
    np.savez(out, t_recv=t_recv[:k], lat=lat[:k])


def _cpu_s(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def bench_hot_path(phases: int, phase_s: float, gap_us: float, work: Path) -> tuple[dict, dict]:
    """One writer, one reader, one capture process for the whole run; capture is SIGSTOPped in "off" phases.

    Same processes throughout, so process start-up, placement and warm-up cannot differ between the two sides;
    phases follow an ABBA order (off on on off off on ...) so slow drifts cancel. Samples are assigned to phases
    by their t_recv, skipping the first ``settle`` of each phase (capture catching up after SIGCONT is part of
    the "on" cost, but the switch itself is not).
    """
    cpus_all = available_cpus()
    cpus = (cpus_all[0], cpus_all[-1])
    gap_ns = int(gap_us * 1000)
    warm_s = 1.0
    total_s = warm_s + phases * phase_s + 0.5
    n = int(total_s * 1e9 / gap_ns)
    name = f"hp{os.getpid()}.book.binance"
    stats = f"hp{os.getpid()}.stats.capture"
    store = work / "store-hot"
    cap = subprocess.Popen([sys.executable, "-m", "caerus", "capture", "--segment", name, "--store", str(store),
                            "--cpus", str(cpus[0]), "--stats-segment", stats], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    go, ready = CTX.Event(), CTX.Event()
    out = str(work / "hot.npz")
    writer = CTX.Process(target=_writer_main, args=(name, n, gap_ns, cpus[0], go))
    reader = CTX.Process(target=_reader_main, args=(name, n, cpus[1], out, ready))
    writer.start()
    reader.start()
    phase_log: list[tuple[int, int, bool]] = []
    cpu_on = 0.0
    on_s = 0.0
    try:
        from caerus.ipc.counter_block import CounterBlock

        block = CounterBlock.attach(stats, timeout=120)  # capture is up: chDB imported, store open
        ready.wait(120)
        deadline = time.monotonic() + 60
        while block.snapshot()["segments.attached"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        block.close()
        go.set()
        time.sleep(warm_s)
        order = [(k // 2 + k) % 2 == 1 for k in range(phases)]  # ABBA: off on on off off on on off ...
        for on in order:
            os.kill(cap.pid, signal.SIGCONT if on else signal.SIGSTOP)
            c0 = _cpu_s(cap.pid) if on else 0.0
            t0 = time.time_ns()
            time.sleep(phase_s)
            t1 = time.time_ns()
            phase_log.append((t0, t1, on))
            if on:
                cpu_on += _cpu_s(cap.pid) - c0
                on_s += (t1 - t0) / 1e9
        os.kill(cap.pid, signal.SIGCONT)
        writer.join(600)
        reader.join(60)
    finally:
        for p in (writer, reader):
            if p.is_alive():
                p.kill()
                p.join(5)
        os.kill(cap.pid, signal.SIGCONT)
        cap.send_signal(signal.SIGTERM)
        cap.wait(60)
    import json

    seg = json.loads((store / "capture.json").read_text())["segments"][name]
    if seg["records"] != n + 3 or seg["lost"] != 0:  # + the 3 end markers
        raise RuntimeError(f"capture read {seg['records']} of {n} records, lost {seg['lost']}")
    data = np.load(out)
    t_recv, lat = data["t_recv"], data["lat"]
    settle_ns = int(0.1e9)
    off_parts, on_parts, pair = [], [], []
    for t0, t1, on in phase_log:
        sel = lat[(t_recv >= t0 + settle_ns) & (t_recv < t1)]
        (on_parts if on else off_parts).append(sel)
    # per ABBA block of two phases: p50(on) / p50(off)
    idx_on = idx_off = 0
    for i in range(0, len(phase_log) - 1, 2):
        blk = phase_log[i:i + 2]
        ons = [x for x in blk if x[2]]
        offs = [x for x in blk if not x[2]]
        if ons and offs:
            pair.append(float(np.median(on_parts[idx_on]) / np.median(off_parts[idx_off])))
        idx_on += len(ons)
        idx_off += len(offs)
    a, b = np.concatenate(off_parts), np.concatenate(on_parts)
    return {"tick_to_decision.no_capture": summarize(a), "tick_to_decision.with_capture": summarize(b)}, {
        "phases": phases, "phase_s": phase_s, "gap_us": gap_us, "cpus": list(cpus), "ticks": n,
        "pair_p50_ratios": pair, "capture_cpu_fraction_on": cpu_on / on_s if on_s else float("nan")}


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--rows", type=int, help="records for the throughput parts (default 1M, quick 200k)")
    parser.add_argument("--phases", type=int, help="alternating capture off/on phases (default 40, quick 16)")
    parser.add_argument("--phase-s", type=float, default=1.0, help="seconds per phase")
    parser.add_argument("--gap-us", type=float, default=300.0, help="writer pacing between ticks")
    parser.add_argument("--nice", type=int, default=-10)
    args = parser.parse_args(argv)
    raise_priority(args.nice)
    n_rows = args.rows or (200_000 if args.quick else 1_000_000)
    phases = args.phases or (16 if args.quick else 40)
    shm = Path(tempfile.mkdtemp(prefix="caerus-bench-capture-", dir="/dev/shm"))
    os.environ["CAERUS_SHM_DIR"] = str(shm)
    with tempfile.TemporaryDirectory(prefix="caerus-bench-capture-") as tmp:
        work = Path(tmp)
        try:
            # Hot path first: its children fork from a parent that has not loaded chDB / librdkafka yet.
            metrics, hp = bench_hot_path(phases, args.phase_s, args.gap_us, work)
            rates = bench_chdb(n_rows, work)
            rates |= bench_kafka(n_rows)
        finally:
            import shutil

            shutil.rmtree(shm, ignore_errors=True)
    ratio = metrics["tick_to_decision.with_capture"]["p50"] / metrics["tick_to_decision.no_capture"]["p50"]
    ratio_p99 = metrics["tick_to_decision.with_capture"]["p99"] / metrics["tick_to_decision.no_capture"]["p99"]
    for k, v in rates.items():
        print(f"{k}: {v:,.0f}")
    print("tick_to_decision p50 ratio (on/off) per pair of phases: "
          + ", ".join(f"{r:.2f}" for r in hp["pair_p50_ratios"]))
    print(f"capture CPU use while running: {hp['capture_cpu_fraction_on']:.1%} of one CPU")
    goals = [
        at_least("chdb_rows_per_s", rates["chdb_rows_per_s"], 500_000, "rows/s"),
        at_least("kafka_records_per_s", rates["kafka_records_per_s"], 200_000, "records/s"),
        at_most("tick_to_decision_p50_ratio_with_capture", ratio, 1.05, "x"),
    ]
    emit("capture_throughput", metrics, ratios={"tick_to_decision_p50_with_over_without_capture": ratio,
                                                "tick_to_decision_p99_with_over_without_capture": ratio_p99},
         goals=goals, quick=args.quick, json_path=args.json,
         extra={"rates": rates, "rows": n_rows, "hot_path": hp})
    return 0


if __name__ == "__main__":
    sys.exit(main())
