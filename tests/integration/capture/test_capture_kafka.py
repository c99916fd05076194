"""Capture into Kafka (librdkafka mock cluster in a kcat process): delivery, broker outage, bounded buffer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from caerus.records.book import (
    BOOK_ASK_PX,
    BOOK_ASK_QTY,
    BOOK_BID_PX,
    BOOK_BID_QTY,
    BOOK_FLAGS,
    BOOK_T_EXCHANGE,
    BOOK_T_PUBLISH,
    BOOK_T_RECV,
    BOOK_T_WIRE,
)
from tests.fixtures.capture_kafka import MockKafka, consume_rows
from tests.fixtures.capture_rings import (
    CaptureProcess,
    SessionRings,
    book,
    event,
    exec_record,
    read_summary,
    wait_counters,
)
from tests.fixtures.common import free_port

TOPIC = "caerus_states"  # the tests that own a cluster (outages) keep the default topic


def _start(rings: SessionRings, names: list[str], kafka: MockKafka, tmp_path: Path, *extra: str,
           topic: str = TOPIC) -> CaptureProcess:
    args = [a for n in names for a in ("--segment", n)]
    return CaptureProcess([*args, "--brokers", kafka.bootstrap, "--topic", topic, "--store", str(tmp_path / "s"),
                           "--stats-segment", f"{rings.sid}.stats.capture", "--kafka-linger-ms", "5", *extra],
                          tmp_path / "capture.log")


def _one_book_ring(sid: str, kafka: MockKafka, tmp_path: Path,
                   *extra: str) -> tuple[SessionRings, Any, CaptureProcess]:
    """Session ``sid`` with one Binance book ring, and a capture of it to ``kafka``: the rings, the book ring's
    writer and the capture process."""
    rings = SessionRings(sid=sid)
    rings.create(f"{sid}.book.binance")
    cap = _start(rings, [f"{sid}.book.binance"], kafka, tmp_path, *extra)
    return rings, rings.writers[f"{sid}.book.binance"], cap


def _delivered_then_paused(w: Any, kafka: MockKafka, cap: CaptureProcess, sid: str, delivered: int,
                           total: int) -> None:
    """Books 0..delivered-1 published and delivered; then the broker stops answering (SIGSTOP) and books up to
    ``total`` are published into the outage."""
    for i in range(delivered):
        w.publish(*book(1, i))
    wait_counters(f"{sid}.stats.capture", lambda s: s["kafka.delivered"] == delivered, proc=cap)
    kafka.pause()
    for i in range(delivered, total):
        w.publish(*book(1, i))


def _after_outage(kafka: MockKafka, cap: CaptureProcess, rings: SessionRings) -> int:
    """The broker answering again (if still paused), capture stopped (its exit status) and the rings closed."""
    if kafka.paused:
        kafka.resume()
    rc = cap.stop()
    rings.close()
    return rc


def test_capture_produces_keyed_jsoneachrow_rows(session_rings: SessionRings, mock_kafka: MockKafka, kafka_topic: str,
                                                 tmp_path: Path) -> None:
    rings = session_rings
    rings.create()
    sid = rings.sid
    rings.publish_books(500)
    for i in range(9):
        rings.writers[f"{sid}.events.binance"].publish(*event(1, i))
    for i in range(10):
        rings.writers[f"{sid}.exec"].publish(*exec_record(i))
    expected = 1000 + 9 + 10 + 5
    cap = _start(rings, rings.names(), mock_kafka, tmp_path, topic=kafka_topic)
    try:
        snap = wait_counters(f"{sid}.stats.capture", lambda s: s["kafka.delivered"] == expected, proc=cap)
    finally:
        rc = cap.stop()
    assert rc == 0, cap.output()
    assert snap["kafka.dropped"] == 0 and snap["kafka.errors"] == 0
    summary = read_summary(tmp_path / "s")
    assert summary["kafka"]["delivered"] == expected and summary["kafka"]["undelivered_at_exit"] == 0
    got = consume_rows(mock_kafka.bootstrap, kafka_topic, expected)
    assert len(got) == expected
    by_table: dict[str, list[dict]] = {}
    for key, table, line in got:
        row = json.loads(line)
        assert key.decode() == row["venue"]  # keyed by venue
        by_table.setdefault(table, []).append(row)
    assert {t: len(v) for t, v in by_table.items()} == {"books": 1000, "feed_events": 9, "orders": 10, "fills": 5}
    hl = next(r for r in by_table["books"] if r["venue"] == "hyperliquid" and r["seq"] == 1042)
    b = book(2, 42)
    assert hl == {"session": sid, "venue": "hyperliquid", "flags": b[BOOK_FLAGS], "symbol": 0, "conn": 1,
                  "reason": 0, "seq": 1042, "t_exchange": b[BOOK_T_EXCHANGE], "t_recv": b[BOOK_T_RECV],
                  "t_publish": b[BOOK_T_PUBLISH], "bid_px": b[BOOK_BID_PX], "bid_qty": b[BOOK_BID_QTY],
                  "ask_px": b[BOOK_ASK_PX], "ask_qty": b[BOOK_ASK_QTY], "t_wire": b[BOOK_T_WIRE]}
    assert {r["kind"] for r in by_table["feed_events"]} == {"CONNECTING", "CONNECTED", "DISCONNECTED"}
    assert {r["venue"] for r in by_table["orders"]} == {"binance", "hyperliquid"}  # one batch, two keys
    # One venue's rows keep their order (one partition per key).
    seqs = [r["seq"] for r in by_table["books"] if r["venue"] == "binance"]
    assert seqs == sorted(seqs)


def test_broker_outage_within_bound_loses_nothing(shm_dir: Path, own_mock_kafka: MockKafka, tmp_path: Path) -> None:
    # this test stops the broker (SIGSTOP): it owns a cluster, the shared one serves every other test
    rings, w, cap = _one_book_ring("out", own_mock_kafka, tmp_path, "--kafka-buffer", "5000")
    try:
        _delivered_then_paused(w, own_mock_kafka, cap, "out", 1000, 4000)
        during = wait_counters("out.stats.capture", lambda s: s["kafka.queued"] == 4000, proc=cap)
        own_mock_kafka.resume()
        after = wait_counters("out.stats.capture", lambda s: s["kafka.delivered"] == 4000, proc=cap)
    finally:
        rc = _after_outage(own_mock_kafka, cap, rings)
    assert rc == 0, cap.output()
    assert during["kafka.delivered"] == 1000 and during["kafka.buffered"] == 3000 and during["kafka.dropped"] == 0
    assert after["kafka.dropped"] == 0 and after["kafka.errors"] == 0
    seqs = sorted(json.loads(line)["seq"] for _, _, line in consume_rows(own_mock_kafka.bootstrap, TOPIC, 4000))
    assert seqs == list(range(1000, 5000))


def test_broker_outage_beyond_bound_counts_drops_exactly(shm_dir: Path, own_mock_kafka: MockKafka,
                                                         tmp_path: Path) -> None:
    # this test stops the broker (SIGSTOP): it owns a cluster, the shared one serves every other test
    bound = 1000
    rings, w, cap = _one_book_ring("drop", own_mock_kafka, tmp_path, "--kafka-buffer", str(bound))
    try:
        _delivered_then_paused(w, own_mock_kafka, cap, "drop", 100, 3100)
        during = wait_counters("drop.stats.capture", lambda s: s["records.book.binance"] == 3100
                               and s["kafka.queued"] + s["kafka.dropped"] == 3100, proc=cap)
        own_mock_kafka.resume()
        after = wait_counters("drop.stats.capture", lambda s: s["kafka.delivered"] == 100 + bound, proc=cap)
    finally:
        rc = _after_outage(own_mock_kafka, cap, rings)
    assert rc == 0, cap.output()
    assert during["kafka.buffered"] == bound and during["kafka.dropped"] == 3000 - bound
    assert after["kafka.dropped"] == 3000 - bound and after["lost.book.binance"] == 0
    summary = read_summary(tmp_path / "s")["kafka"]
    assert summary["delivered"] + summary["dropped"] == 3100 and summary["undelivered_at_exit"] == 0
    # What arrived is exactly the rows queued before the buffer filled: nothing extra, nothing missing.
    seqs = sorted(json.loads(line)["seq"] for _, _, line in consume_rows(own_mock_kafka.bootstrap, TOPIC, 100 + bound))
    assert seqs == list(range(1000, 1000 + 100 + bound))


def test_unreachable_broker_at_start_is_a_clear_error(shm_dir: Path, tmp_path: Path) -> None:
    port = free_port()  # nothing listens here
    cap = CaptureProcess(["--segment", "u.book.binance", "--brokers", f"127.0.0.1:{port}", "--connect-timeout", "2"],
                         tmp_path / "capture.log")
    assert cap.wait() == 2
    assert f"broker 127.0.0.1:{port} unreachable" in cap.output()


def test_broker_gone_at_exit_counts_undelivered_rows(shm_dir: Path, own_mock_kafka: MockKafka, tmp_path: Path) -> None:
    # this test stops the broker (SIGSTOP): it owns a cluster, the shared one serves every other test
    rings, w, cap = _one_book_ring("gone", own_mock_kafka, tmp_path, "--kafka-exit-flush", "3")
    try:
        _delivered_then_paused(w, own_mock_kafka, cap, "gone", 200, 700)
        wait_counters("gone.stats.capture", lambda s: s["kafka.queued"] == 700, proc=cap)
        rc = cap.stop()  # the broker never comes back: capture gives up after its 10 s flush and says so
    finally:
        rings.close()
    assert rc == 0, cap.output()
    k = read_summary(tmp_path / "s")["kafka"]
    assert (k["delivered"], k["dropped"], k["failed"], k["undelivered_at_exit"]) == (200, 0, 0, 500)
    assert "kafka: 500 rows undelivered at exit" in cap.output()
