"""Multi-process IPC tests: the seqlock torture test, start orders, stale writers, MPSC exactly-once delivery.

Processes are real (fork); every child is joined or killed by PID before the test ends.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

import pytest

from caerus import wire
from caerus.ipc import segment
from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.records.book import BOOK_SEQ

CTX = mp.get_context("fork")
TORTURE_RECORDS = 1_000_000
TORTURE_CAPACITY = 8  # tiny: the writer laps readers constantly


def checked_book(n: int) -> tuple:
    """A record whose every field is a function of n, so a torn record (fields of two records) is detectable."""
    return (1, n & 0x7F, n & 0xFFFF, n & 0xFFFF, n & 0xFF, (n >> 8) & 0xFF, n, n * 3 + 1, n * 5 + 2, (n * 7) ^ 0x5A5A5A,
            n * 0.5, n * 0.25 + 1.0, n * 0.5 + 0.5, float(n % 9973), n * 11 + 3)


def torture_writer(name: str, total: int, start: mp.Event) -> None:
    w = SwmrWriter.create(name, wire.BOOK, TORTURE_CAPACITY)
    start.wait(30)
    for n in range(1, total + 1):
        w.publish(*checked_book(n))
    w.beat()


def torture_reader(name: str, mode: str, total: int, ready: mp.Event, out: mp.Queue) -> None:
    r = SwmrReader.attach(name, wire.BOOK, timeout=30)
    ready.set()
    read = torn = out_of_order = 0
    last = 0
    every = mode == "every"
    read_one = r.read_next if every else r.read_latest
    # every-record mode ends when the reader has passed the last record, latest-value mode when it has seen it
    while (r._next <= total) if every else (last < total):
        rec = read_one()
        if rec is None:
            continue
        n = rec[BOOK_SEQ]
        if rec != checked_book(n):
            torn += 1
        if n <= last:
            out_of_order += 1
        last = n
        read += 1
    out.put({"mode": mode, "read": read, "lost": r.lost, "torn": torn, "out_of_order": out_of_order, "last": last})


def test_seqlock_torture_no_torn_record_and_exact_loss_count(shm_dir) -> None:
    start = CTX.Event()
    ready = [CTX.Event(), CTX.Event()]
    out = CTX.Queue()
    writer = CTX.Process(target=torture_writer, args=("torture", TORTURE_RECORDS, start))
    writer.start()
    readers = [
        CTX.Process(target=torture_reader, args=("torture", mode, TORTURE_RECORDS, ev, out))
        for mode, ev in zip(("every", "latest"), ready, strict=True)
    ]
    for p in readers:
        p.start()
    try:
        for ev in ready:
            assert ev.wait(30), "reader did not attach"
        start.set()
        results = {res["mode"]: res for res in (out.get(timeout=600) for _ in readers)}
    finally:
        for p in [writer, *readers]:
            p.join(10)
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
    every, latest = results["every"], results["latest"]
    assert every["torn"] == 0 and latest["torn"] == 0
    assert every["out_of_order"] == 0 and latest["out_of_order"] == 0
    # Exact accounting: every record number was either read or counted lost, never both.
    assert every["read"] + every["lost"] == TORTURE_RECORDS
    assert every["last"] == TORTURE_RECORDS and latest["last"] == TORTURE_RECORDS
    assert every["lost"] > 0, "a tiny ring under a flat-out writer must lap the reader at least once"


def late_writer(name: str, delay: float, records: int) -> None:
    time.sleep(delay)
    w = SwmrWriter.create(name, wire.BOOK, 64)
    for n in range(1, records + 1):
        w.publish(*checked_book(n))
        w.beat()
        time.sleep(0.001)


@pytest.mark.parametrize("writer_first", [True, False], ids=["writer-first", "reader-first"])
def test_either_start_order_attaches(shm_dir, writer_first: bool) -> None:
    p = CTX.Process(target=late_writer, args=("order", 0.0 if writer_first else 0.3, 20))
    p.start()
    try:
        if writer_first:
            while not segment.shm_path("order").exists():
                time.sleep(0.01)
        r = SwmrReader.attach("order", wire.BOOK, timeout=30)
        got = []
        deadline = time.monotonic() + 30  # bounded: a writer that died early must fail this test, not hang it
        while len(got) + r.lost < 20 and time.monotonic() < deadline:
            rec = r.read_next()
            if rec is not None:
                got.append(rec[BOOK_SEQ])
            elif not p.is_alive() and r.head() < 20:
                pytest.fail(f"the writer exited ({p.exitcode}) after {r.head()} of 20 records")
        assert got == list(range(1, 21))
    finally:
        p.join(10)


def beating_writer(name: str, ready: mp.Event) -> None:
    w = SwmrWriter.create(name, wire.BOOK, 64)
    w.publish(*checked_book(1))
    while True:
        w.beat()
        ready.set()
        time.sleep(0.01)


def test_sigkilled_writer_is_seen_as_stale_and_its_segment_can_be_taken_over(shm_dir) -> None:
    ready = CTX.Event()
    p = CTX.Process(target=beating_writer, args=("stale", ready))
    p.start()
    assert ready.wait(30)
    r = SwmrReader.attach("stale", wire.BOOK, timeout=5)
    assert r.writer_alive(stale_after_s=5.0)
    with pytest.raises(segment.SegmentBusy):
        SwmrWriter.create("stale", wire.BOOK, 64)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    assert not r.writer_alive(stale_after_s=5.0)  # pid gone, even though the heartbeat is recent
    w = SwmrWriter.create("stale", wire.BOOK, 64)  # dead writer's segment: takeover allowed
    w.publish(*checked_book(7))
    assert r.refresh()
    assert r.read_next()[BOOK_SEQ] == 7


def order_producer(name: str, producer_id: int, count: int, out: mp.Queue) -> None:
    p = MpscProducer.attach(name, wire.ORDER, timeout=30)
    refused = 0
    for i in range(count):
        oid = producer_id * 1_000_000 + i
        while not p.try_push(oid, producer_id, 2, 1, 1, 6, 1, 0, 1.0, 1.0, i, 0, 0, 0, time.time_ns(), i + 1, 0, 0,
                             0):
            refused += 1
    out.put((producer_id, p.lane, refused))


def test_mpsc_several_producers_deliver_every_order_exactly_once(shm_dir) -> None:
    producers, per_producer = 3, 20_000
    c = MpscConsumer.create("orders", wire.ORDER, 64, lanes=4)
    out = CTX.Queue()
    procs = [CTX.Process(target=order_producer, args=("orders", k + 1, per_producer, out)) for k in range(producers)]
    for p in procs:
        p.start()
    seen: dict[int, int] = {}
    per_lane_last: dict[int, int] = {}
    deadline = time.monotonic() + 120
    try:
        while len(seen) < producers * per_producer:
            rec = c.poll()
            if rec is None:
                # bounded: a producer that died (its exit code says why) must not leave this loop polling forever
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not dead and time.monotonic() < deadline, (
                    f"{len(seen)} of {producers * per_producer} orders; producer exit codes {dead}")
                continue
            oid, pid_field, seq = rec[0], rec[1], rec[10]
            seen[oid] = seen.get(oid, 0) + 1
            assert per_lane_last.get(pid_field, -1) < seq, "orders of one producer arrive in order"
            per_lane_last[pid_field] = seq
        reports = [out.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
    assert len(seen) == producers * per_producer
    assert set(seen.values()) == {1}
    assert len({lane for _, lane, _ in reports}) == producers, "each producer owns its own lane"
    assert c.full_count() == sum(refused for _, _, refused in reports)
    assert c.poll() is None
