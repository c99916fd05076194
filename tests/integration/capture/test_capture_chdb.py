"""Capture into the embedded chDB store: every record kept, loss counted exactly, late and restarted writers."""

from __future__ import annotations

from pathlib import Path

from caerus.capture.store import ChdbStore
from caerus.ipc.mpsc import MpscConsumer
from caerus.records.book import (
    BOOK_ASK_PX,
    BOOK_ASK_QTY,
    BOOK_BID_PX,
    BOOK_BID_QTY,
    BOOK_CONN,
    BOOK_FLAGS,
    BOOK_T_EXCHANGE,
    BOOK_T_PUBLISH,
    BOOK_T_RECV,
)
from caerus.wire import ORDER, Venue
from tests.fixtures.capture_rings import (
    CaptureProcess,
    SessionRings,
    book,
    event,
    exec_record,
    read_summary,
    wait_counters,
)


def _query(store: Path, sql: str) -> list[list[str]]:
    s = ChdbStore(store)
    try:
        text = s.query(sql, "TSV")
    finally:
        s.close()
    return [line.split("\t") for line in text.strip().splitlines()]


def test_capture_keeps_every_record_of_every_ring(session_rings: SessionRings, tmp_path: Path) -> None:
    rings = session_rings
    rings.create()
    sid = rings.sid
    n_books, n_events, n_exec = 3000, 30, 40
    for i in range(n_books):
        rings.writers[f"{sid}.book.binance"].publish(*book(int(Venue.BINANCE), i))
        rings.writers[f"{sid}.book.hyperliquid"].publish(*book(int(Venue.HYPERLIQUID), i))
    for i in range(n_events):
        rings.writers[f"{sid}.events.binance"].publish(*event(int(Venue.BINANCE), i))
        rings.writers[f"{sid}.events.hyperliquid"].publish(*event(int(Venue.HYPERLIQUID), i))
    for i in range(n_exec):
        rings.writers[f"{sid}.exec"].publish(*exec_record(i))
    store = tmp_path / "session"
    args = [a for n in rings.names() for a in ("--segment", n)]
    cap = CaptureProcess([*args, "--store", str(store), "--stats-segment", f"{sid}.stats.capture"],
                         tmp_path / "capture.log")
    try:
        # More books after capture attached: both the backlog and live records must arrive.
        wait_counters(f"{sid}.stats.capture", lambda s: s["segments.attached"] == 5, proc=cap)
        for i in range(n_books, n_books + 500):
            rings.writers[f"{sid}.book.binance"].publish(*book(int(Venue.BINANCE), i))
        snap = wait_counters(f"{sid}.stats.capture", lambda s: s["rows.books"] == 2 * n_books + 500
                             and s["rows.feed_events"] == 2 * n_events and s["rows.orders"] == n_exec, proc=cap)
    finally:
        rc = cap.stop()
    assert rc == 0, cap.output()
    assert snap["lost.book.binance"] == 0 and snap["records.book.binance"] == n_books + 500
    summary = read_summary(store)
    assert summary["lost"] == 0
    assert summary["missing"] == []
    assert summary["rows"] == {"books": 2 * n_books + 500, "feed_events": 2 * n_events, "orders": n_exec,
                               "fills": n_exec // 2}
    assert summary["segments"][f"{sid}.exec"]["layout"] == "exec"

    got = _query(store, "SELECT venue, count(), uniqExact(seq), min(seq), max(seq) FROM caerus.books "
                        "GROUP BY venue ORDER BY venue")
    assert got == [["binance", str(n_books + 500), str(n_books + 500), "1000", str(1000 + n_books + 499)],
                   ["hyperliquid", str(n_books), str(n_books), "1000", str(1000 + n_books - 1)]]
    # Values survive the round trip exactly (floats, ns timestamps, session tag from the segment prefix).
    row = _query(store, "SELECT session, flags, conn, t_exchange, t_recv, t_publish, bid_px, bid_qty, ask_px, ask_qty "
                        "FROM caerus.books WHERE venue = 'hyperliquid' AND seq = 1007")
    b = book(int(Venue.HYPERLIQUID), 7)
    assert row == [[sid, str(b[BOOK_FLAGS]), str(b[BOOK_CONN]), str(b[BOOK_T_EXCHANGE]), str(b[BOOK_T_RECV]),
                    str(b[BOOK_T_PUBLISH]), repr(b[BOOK_BID_PX]), repr(b[BOOK_BID_QTY]), repr(b[BOOK_ASK_PX]),
                    repr(b[BOOK_ASK_QTY])]]
    kinds = _query(store, "SELECT kind, count() FROM caerus.feed_events WHERE venue = 'binance' "
                          "GROUP BY kind ORDER BY kind")
    assert kinds == [["CONNECTING", "10"], ["CONNECTED", "10"], ["DISCONNECTED", "10"]]
    fills = _query(store, "SELECT count(), min(order_id) % 2, sum(qty) > 0 FROM caerus.fills")
    assert fills == [[str(n_exec // 2), "1", "1"]]  # fills of records 0, 2, 4... carry order ids 1, 3, 5...
    orders = _query(store, "SELECT count(), uniqExact(order_id), any(trigger_venue) FROM caerus.orders")
    assert orders == [[str(n_exec), str(n_exec), "binance"]]


def test_lapped_reader_counts_loss_exactly(shm_dir: Path, tmp_path: Path) -> None:
    rings = SessionRings(sid="lap", capacity=64)
    rings.create("lap.book.binance")
    published = 10_000
    for i in range(published):  # before capture starts: the ring holds only the newest 64
        rings.writers["lap.book.binance"].publish(*book(int(Venue.BINANCE), i))
    store = tmp_path / "s"
    cap = CaptureProcess(["--segment", "lap.book.binance", "--store", str(store), "--stats-segment",
                          "lap.stats.capture"], tmp_path / "capture.log")
    try:
        snap = wait_counters("lap.stats.capture",
                             lambda s: s["records.book.binance"] + s["lost.book.binance"] == published
                             and s["rows.books"] == s["records.book.binance"], proc=cap)
    finally:
        rc = cap.stop()
        rings.close()
    assert rc == 0, cap.output()
    summary = read_summary(store)
    seg = summary["segments"]["lap.book.binance"]
    assert seg["records"] + seg["lost"] == published
    assert 0 < seg["records"] <= 64 and seg["lost"] >= published - 64
    assert snap["rows.books"] == seg["records"]
    # The rows kept are exactly the newest records: consecutive seqs ending at the last one published.
    got = _query(store, "SELECT count(), min(seq), max(seq) FROM caerus.books")
    assert got == [[str(seg["records"]), str(1000 + published - seg["records"]), str(1000 + published - 1)]]


def test_late_segment_and_writer_restart(shm_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "s"
    name = "late.book.hyperliquid"
    cap = CaptureProcess(["--segment", name, "--segment", "late.exec", "--store", str(store),
                          "--stats-segment", "late.stats.capture", "--missing-after", "0.5"],
                         tmp_path / "capture.log")
    rings = SessionRings(sid="late")
    try:
        wait_counters("late.stats.capture", lambda s: s["segments.missing"] == 2, proc=cap)
        rings.create(name)  # appears after capture started
        for i in range(100):
            rings.writers[name].publish(*book(int(Venue.HYPERLIQUID), i))
        wait_counters("late.stats.capture", lambda s: s["rows.books"] == 100 and s["segments.missing"] == 1,
                      proc=cap)
        # The writer restarts: a new generation of the segment under the same name, numbering from 1 again.
        for i in range(100, 120):
            rings.writers[name].publish(*book(int(Venue.HYPERLIQUID), i))
        rings.writers[name].close()
        rings.writers.pop(name)
        rings.create(name)
        for i in range(120, 200):
            rings.writers[name].publish(*book(int(Venue.HYPERLIQUID), i))
        snap = wait_counters("late.stats.capture", lambda s: s["rows.books"] == 200, proc=cap)
    finally:
        rc = cap.stop()
        rings.close()
    assert rc == 0, cap.output()
    assert snap["writer_restarts"] == 1 and snap["lost.book.hyperliquid"] == 0
    summary = read_summary(store)
    assert summary["missing"] == ["late.exec"]  # never appeared: reported, not an error
    assert summary["segments"]["late.exec"]["attached"] is False
    assert _query(store, "SELECT count(), uniqExact(seq) FROM caerus.books") == [["200", "200"]]


def test_bad_config_stops_before_starting(shm_dir: Path, tmp_path: Path) -> None:
    # No output chosen.
    cap = CaptureProcess(["--segment", "x.book.binance"], tmp_path / "a.log")
    assert cap.wait() == 2 and "--store DIR" in cap.output()
    # Malformed broker list.
    cap = CaptureProcess(["--segment", "x.book.binance", "--brokers", "localhost"], tmp_path / "b.log")
    assert cap.wait() == 2 and "--brokers 'localhost'" in cap.output()
    # The order ring is MPSC: capture reads orders from S.exec instead, and says so.
    c = MpscConsumer.create("x.orders", ORDER, 64)
    try:
        cap = CaptureProcess(["--segment", "x.orders", "--store", str(tmp_path / "s")], tmp_path / "c.log")
        assert cap.wait() == 2 and "mpsc ring" in cap.output() and "S.exec" in cap.output()
    finally:
        c.close(unlink=True)
    assert not (tmp_path / "s").exists()  # nothing was started
    # A store folder that cannot be created.
    cap = CaptureProcess(["--segment", "x.book.binance", "--store", "/proc/caerus-capture"], tmp_path / "d.log")
    assert cap.wait() == 2 and "cannot open chDB store at /proc/caerus-capture/chdb" in cap.output()
