"""Capture throughput (rings -> chDB, rings -> Kafka) and what a running capture costs the hot path.

Three parts, one run:
1. chDB: a BOOK ring pre-filled with N records is drained by the capture pipeline (in-process) into a fresh chDB
   store: rows/s end to end (ring read + conversion + insert), and the store alone (insert of ready DataFrames).
2. Kafka: the same pipeline producing one JSONEachRow message per row to confluent-kafka's in-process mock cluster
   (``test.mock.num.brokers``); records/s counted until every delivery report came back.
3. Hot path: a paced writer process stamps ``t_recv`` and publishes BOOK records; a strategy-like reader process
   in latest-value mode (hybrid wait) takes ``t_decision`` when it picks a record up. Episodes alternate without
   and with a real ``caerus capture`` process reading the same ring in every-record mode into chDB; the p50 ratio
   (with / without) is the cost of capture. Placement follows the fleet plan on small machines: writer and
   capture share the first CPU (the feed/housekeeping core), the reader has the last.

    python -m benchmarks.capture_throughput [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
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

from benchmarks.common import add_common_args, at_least, at_most, emit, raise_priority, summarize
from caerus import wire
from caerus.plan import available_cpus, pin_current_process

CTX = mp.get_context("fork")
REPO = Path(__file__).resolve().parents[1]
_T_RECV = wire.BOOK.index("t_recv")
_SEQ = wire.BOOK.index("seq")


def _book(i: int, t: int) -> tuple:
    return (1, 1, 0, 1, i, t, t, t, 100_000.0 + (i % 1000) * 0.1, 1.25, 100_000.1 + (i % 1000) * 0.1, 2.5)


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

def _writer_main(name: str, n: int, gap_ns: int, cpu: int, ready) -> None:
    from caerus.ipc.swmr import SwmrWriter

    pin_current_process([cpu])
    w = SwmrWriter.create(name, wire.BOOK, 4096)
    publish = w.publish
    ready.wait(60)
    gc.disable()
    nxt = time.perf_counter_ns()
    last_beat = nxt
    for i in range(n):
        nxt += gap_ns
        while time.perf_counter_ns() < nxt:
            time.sleep(0)  # yield the shared core to capture between ticks, like a feed waiting on its socket
        t = time.time_ns()
        publish(1, 1, 0, 1, i, t, t, time.time_ns(), 100_000.0, 1.0, 100_000.1, 1.0)
        if nxt - last_beat > 100_000_000:
            w.beat()
            last_beat = nxt
    for _ in range(3):
        publish(1, 1, 0, 1, -1, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)
        time.sleep(0.05)
    w.close()


def _reader_main(name: str, n: int, cpu: int, out: str, ready) -> None:
    from caerus.ipc.swmr import SwmrReader
    from caerus.ipc.wait import make_waiter

    pin_current_process([cpu])
    r = SwmrReader.attach(name, wire.BOOK, timeout=60)
    waiter = make_waiter("hybrid")
    samples = np.zeros(n, dtype=np.int64)
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
        if rec[_SEQ] < 0:
            break
        if k < n:
            samples[k] = t - rec[_T_RECV]
            k += 1
        reset()
    np.save(out, samples[:k])


CAPTURE_CPU: list[float] = []  # capture's CPU use (fraction of one CPU) during each "with capture" episode


def _cpu_s(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _episode(tag: str, with_capture: bool, n: int, gap_ns: int, cpus: tuple[int, int], work: Path) -> np.ndarray:
    name = f"hp{os.getpid()}.book.binance"
    cap = None
    store = work / f"store-{tag}"
    if with_capture:
        env = os.environ.copy()
        cap = subprocess.Popen([sys.executable, "-m", "caerus", "capture", "--segment", name, "--store", str(store),
                                "--cpus", str(cpus[0]), "--stats-segment", f"hp{os.getpid()}.stats.{tag}"],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from caerus.ipc.counters import CounterBlock

        # Its counter block appears once chDB is imported and the store is open: start the ticks after that.
        CounterBlock.attach(f"hp{os.getpid()}.stats.{tag}", timeout=120).close()
    cpu0 = _cpu_s(cap.pid) if cap is not None else 0.0
    wall0 = time.perf_counter()
    ready = CTX.Event()
    out = str(work / f"{tag}.npy")
    writer = CTX.Process(target=_writer_main, args=(name, n, gap_ns, cpus[0], ready))
    writer.start()
    reader = CTX.Process(target=_reader_main, args=(name, n, cpus[1], out, ready))
    reader.start()
    try:
        writer.join(600)
        reader.join(60)
    finally:
        for p in (writer, reader):
            if p.is_alive():
                p.kill()
                p.join(5)
        if cap is not None:
            CAPTURE_CPU.append((_cpu_s(cap.pid) - cpu0) / (time.perf_counter() - wall0))
            cap.send_signal(signal.SIGTERM)
            cap.wait(60)
    if cap is not None:
        import json

        summary = json.loads((store / "capture.json").read_text())
        seg = summary["segments"][name]
        if seg["records"] + seg["lost"] < n:
            raise RuntimeError(f"capture saw {seg['records']} + lost {seg['lost']} of {n} records")
    from caerus.ipc import segment

    segment.unlink(name)
    return np.load(out)[200:]  # first ticks pay page faults and caches


def bench_hot_path(n: int, episodes: int, gap_us: float, work: Path) -> tuple[dict, dict]:
    cpus_all = available_cpus()
    cpus = (cpus_all[0], cpus_all[-1])
    off: list[np.ndarray] = []
    on: list[np.ndarray] = []
    pair_ratios: list[float] = []
    for e in range(episodes):
        # Alternate which goes first so slow drifts of the shared machine do not favour one side.
        first_on = e % 2 == 1
        for with_capture in ((True, False) if first_on else (False, True)):
            tag = f"{'on' if with_capture else 'off'}{e}"
            (on if with_capture else off).append(_episode(tag, with_capture, n, int(gap_us * 1000), cpus, work))
        pair_ratios.append(float(np.median(on[-1]) / np.median(off[-1])))
    a, b = np.concatenate(off), np.concatenate(on)
    return {"tick_to_decision.no_capture": summarize(a), "tick_to_decision.with_capture": summarize(b)}, {
        "episodes": episodes, "ticks_per_episode": n, "gap_us": gap_us, "cpus": list(cpus),
        "pair_p50_ratios": pair_ratios, "capture_cpu_fraction": CAPTURE_CPU}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--rows", type=int, help="records for the throughput parts (default 1M, quick 200k)")
    parser.add_argument("--ticks", type=int, help="ticks per hot-path episode (default 20000, quick 3000)")
    parser.add_argument("--episodes", type=int, help="alternating off/on episode pairs (default 6, quick 4)")
    parser.add_argument("--gap-us", type=float, default=300.0, help="writer pacing between ticks")
    parser.add_argument("--nice", type=int, default=-10)
    args = parser.parse_args(argv)
    raise_priority(args.nice)
    n_rows = args.rows or (200_000 if args.quick else 1_000_000)
    ticks = args.ticks or (3_000 if args.quick else 20_000)
    episodes = args.episodes or (4 if args.quick else 6)
    shm = Path(tempfile.mkdtemp(prefix="caerus-bench-capture-", dir="/dev/shm"))
    os.environ["CAERUS_SHM_DIR"] = str(shm)
    with tempfile.TemporaryDirectory(prefix="caerus-bench-capture-") as tmp:
        work = Path(tmp)
        try:
            # Hot path first: its children fork from a parent that has not loaded chDB / librdkafka yet.
            metrics, hp = bench_hot_path(ticks, episodes, args.gap_us, work)
            rates = bench_chdb(n_rows, work)
            rates |= bench_kafka(n_rows)
        finally:
            import shutil

            shutil.rmtree(shm, ignore_errors=True)
    ratio = metrics["tick_to_decision.with_capture"]["p50"] / metrics["tick_to_decision.no_capture"]["p50"]
    ratio_p99 = metrics["tick_to_decision.with_capture"]["p99"] / metrics["tick_to_decision.no_capture"]["p99"]
    for k, v in rates.items():
        print(f"{k}: {v:,.0f}")
    print("tick_to_decision p50 ratio per off/on pair: " + ", ".join(f"{r:.2f}" for r in hp["pair_p50_ratios"]))
    print("capture CPU use during the episodes (share of one CPU): "
          + ", ".join(f"{c:.1%}" for c in hp["capture_cpu_fraction"]))
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
