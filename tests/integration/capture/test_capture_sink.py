"""Kafka -> ClickHouse server sink (kcat mock cluster + clickhouse-server 18.16): commit after insert, retries
while the server is down, no duplicates when batches are inserted again, malformed messages counted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from confluent_kafka import Producer

from caerus.capture import rows
from caerus.capture.kafka import KafkaOutput
from caerus.records.book import BOOK_ASK_PX, BOOK_ASK_QTY, BOOK_BID_PX, BOOK_T_EXCHANGE, BOOK_T_RECV
from caerus.wire import BOOK
from tests.fixtures.capture_clickhouse import ClickHouseServer
from tests.fixtures.capture_kafka import MockKafka
from tests.fixtures.capture_rings import CaptureProcess, SessionRings, book, event, exec_record, wait_counters
from tests.fixtures.common import free_port


class SinkProcess(CaptureProcess):
    def __init__(self, args: list[str], log: Path) -> None:
        super().__init__(args, log, command="sink")


def _produce_books(kafka: MockKafka, topic: str, first: int, n: int, venue: int = 1, per_message: int = 100) -> None:
    out = KafkaOutput(kafka.bootstrap, topic, linger_ms=5, rows_per_message=per_message)
    a = np.array([book(venue, i) for i in range(first, first + n)], dtype=BOOK.dtype)
    for table, df in rows.tables_from("book", a).items():
        assert out.write(table, df, "sk") == n
    assert out.close(30) == 0 and out.delivered == n


def _sink(kafka: MockKafka, topic: str, ch: ClickHouseServer, tmp_path: Path, name: str, *extra: str) -> SinkProcess:
    # a consumer group of the test's own too: a member another test's sink left in a shared group would hold the
    # next join for the group's session timeout (45 s)
    return SinkProcess(["--brokers", kafka.bootstrap, "--topic", topic, "--group", f"{topic}.sink", "--clickhouse",
                        ch.url, "--batch-wait", "0.2", "--summary", str(tmp_path / f"{name}.json"), *extra],
                       tmp_path / f"{name}.log")


def _count(ch: ClickHouseServer, table: str, key: str) -> tuple[int, int]:
    """(rows seen through FINAL, distinct keys): equal when there are no duplicates."""
    got = ch.query(f"SELECT count(), uniqExact({key}) FROM caerus.{table} FINAL FORMAT TSV").split()
    return int(got[0]), int(got[1])


def test_capture_to_kafka_to_clickhouse_end_to_end(session_rings: SessionRings, mock_kafka: MockKafka,
                                                   kafka_topic: str, clickhouse_server: ClickHouseServer,
                                                   tmp_path: Path) -> None:
    rings = session_rings
    rings.create()
    sid = rings.sid
    rings.publish_books(2000)
    withdrawn = list(book(2, 2000))
    withdrawn[BOOK_BID_PX] = float("nan")  # an empty side, as the feeds publish it
    rings.writers[f"{sid}.book.hyperliquid"].publish(*withdrawn)
    for i in range(12):
        rings.writers[f"{sid}.events.hyperliquid"].publish(*event(2, i))
    for i in range(20):
        rings.writers[f"{sid}.exec"].publish(*exec_record(i))
    total = 4001 + 12 + 20 + 10
    args = [a for n in rings.names() for a in ("--segment", n)]
    cap = CaptureProcess([*args, "--brokers", mock_kafka.bootstrap, "--topic", kafka_topic, "--stats-segment",
                          f"{sid}.stats.capture"], tmp_path / "capture.log")
    sink = _sink(mock_kafka, kafka_topic, clickhouse_server, tmp_path, "sink", "--stats-segment",
                 f"{sid}.stats.sink")
    try:
        wait_counters(f"{sid}.stats.capture", lambda s: s["kafka.delivered"] == total, proc=cap)
        snap = wait_counters(f"{sid}.stats.sink", lambda s: sum(s[f"rows.{t}"] for t in rows.TABLES) == total,
                             proc=sink)
    finally:
        assert cap.stop() == 0, cap.output()
        assert sink.stop() == 0, sink.output()
    assert snap["malformed"] == 0 and snap["rejected"] == 0 and snap["commits"] >= 1
    ch = clickhouse_server
    assert _count(ch, "books", "(venue, seq, t_recv)") == (4001, 4001)
    assert _count(ch, "feed_events", "(venue, conn, t_ns, kind, code)") == (12, 12)
    assert _count(ch, "orders", "order_id") == (20, 20)
    assert _count(ch, "fills", "order_id") == (10, 10)
    b = book(2, 77)
    row = ch.query("SELECT session, t_exchange, t_recv, bid_px, ask_qty FROM caerus.books FINAL "
                   "WHERE venue = 'hyperliquid' AND seq = 1077 FORMAT TSV").split()
    assert row == [sid, str(b[BOOK_T_EXCHANGE]), str(b[BOOK_T_RECV]), repr(b[BOOK_BID_PX]),
                   repr(b[BOOK_ASK_QTY])]
    # NaN crosses Kafka as "nan" (valid JSON) and 18.16 stores it as NaN, not the column default 0.0
    nan_row = ch.query("SELECT isNaN(bid_px), ask_px FROM caerus.books FINAL "
                       "WHERE venue = 'hyperliquid' AND seq = 3000 FORMAT TSV").split()
    assert nan_row == ["1", repr(withdrawn[BOOK_ASK_PX])]


def test_replayed_batches_do_not_duplicate(mock_kafka: MockKafka, kafka_topic: str,
                                           clickhouse_server: ClickHouseServer, tmp_path: Path) -> None:
    _produce_books(mock_kafka, kafka_topic, 0, 3000)
    first = _sink(mock_kafka, kafka_topic, clickhouse_server, tmp_path, "first", "--idle-exit", "3")
    assert first.wait() == 0, first.output()
    # A second consumer group reads the whole topic again: every row is inserted a second time.
    again = _sink(mock_kafka, kafka_topic, clickhouse_server, tmp_path, "again", "--idle-exit", "3", "--group",
                  f"{kafka_topic}.replay")
    assert again.wait() == 0, again.output()
    assert json.loads((tmp_path / "first.json").read_text())["rows"]["books"] == 3000
    assert json.loads((tmp_path / "again.json").read_text())["rows"]["books"] == 3000
    assert _count(clickhouse_server, "books", "(venue, seq, t_recv)") == (3000, 3000)
    clickhouse_server.query("OPTIMIZE TABLE caerus.books FINAL")
    assert int(clickhouse_server.query("SELECT count() FROM caerus.books")) == 3000  # merged away for good


def test_clickhouse_down_then_up_retries_without_duplicates(mock_kafka: MockKafka, kafka_topic: str,
                                                            own_clickhouse_server: ClickHouseServer,
                                                            shm_dir: Path, tmp_path: Path) -> None:
    ch = own_clickhouse_server  # this test stops and starts the server: it owns one
    sink = _sink(mock_kafka, kafka_topic, ch, tmp_path, "sink", "--stats-segment", "ck.stats.sink")
    try:
        _produce_books(mock_kafka, kafka_topic, 0, 1000)
        wait_counters("ck.stats.sink", lambda s: s["rows.books"] == 1000, proc=sink)
        ch.stop()
        _produce_books(mock_kafka, kafka_topic, 1000, 2000)
        down = wait_counters("ck.stats.sink", lambda s: s["clickhouse.down"] == 1 and s["insert_retries"] >= 2,
                             proc=sink)
        ch.start()
        up = wait_counters("ck.stats.sink", lambda s: s["rows.books"] == 3000 and s["clickhouse.down"] == 0,
                           proc=sink)
    finally:
        assert sink.stop() == 0, sink.output()
    assert down["rows.books"] == 1000  # nothing counted as inserted while the server was away
    assert up["rejected"] == 0 and up["malformed"] == 0
    assert _count(ch, "books", "(venue, seq, t_recv)") == (3000, 3000)
    # Offsets were committed only for inserted batches: a new sink in the same group finds nothing left to do.
    rest = _sink(mock_kafka, kafka_topic, ch, tmp_path, "rest", "--idle-exit", "3")
    assert rest.wait() == 0, rest.output()
    assert json.loads((tmp_path / "rest.json").read_text())["consumed"] == 0


def test_malformed_messages_are_counted_and_skipped(mock_kafka: MockKafka, kafka_topic: str,
                                                    clickhouse_server: ClickHouseServer, tmp_path: Path) -> None:
    p = Producer({"bootstrap.servers": mock_kafka.bootstrap})
    p.produce(kafka_topic, b'{"venue":"binance"}', b"binance")  # no table header
    p.produce(kafka_topic, b"not json", b"binance", headers=[("table", b"books")])
    good = json.dumps({"session": "sk", "venue": "binance", "seq": 1}).encode()
    p.produce(kafka_topic, good + b"\n[1, 2]", b"binance", headers=[("table", b"books")])  # one good row, one bad
    p.produce(kafka_topic, b"{}", b"binance", headers=[("table", b"nosuchtable")])
    assert p.flush(30) == 0
    _produce_books(mock_kafka, kafka_topic, 0, 50, per_message=1)
    sink = _sink(mock_kafka, kafka_topic, clickhouse_server, tmp_path, "sink", "--idle-exit", "3")
    assert sink.wait() == 0, sink.output()
    summary = json.loads((tmp_path / "sink.json").read_text())
    assert summary["consumed"] == 54 and summary["malformed"] == 4 and summary["rows"]["books"] == 51
    assert "malformed message" in sink.output()


def test_sink_bad_config_is_a_clear_error(mock_kafka: MockKafka, tmp_path: Path) -> None:
    port = free_port()
    s = SinkProcess(["--brokers", mock_kafka.bootstrap, "--clickhouse", f"http://127.0.0.1:{port}"],
                    tmp_path / "a.log")
    assert s.wait() == 2 and f"ClickHouse at http://127.0.0.1:{port} unreachable" in s.output()
    s = SinkProcess(["--brokers", mock_kafka.bootstrap, "--clickhouse", "127.0.0.1:8123"], tmp_path / "b.log")
    assert s.wait() == 2 and "expected http://HOST:PORT" in s.output()
    s = SinkProcess(["--brokers", "nohostport", "--clickhouse", "http://127.0.0.1:1"], tmp_path / "c.log")
    assert s.wait() == 2 and "--brokers 'nohostport'" in s.output()


def test_sink_authenticates_with_a_password_file(mock_kafka: MockKafka, kafka_topic: str,
                                                 clickhouse_server: ClickHouseServer, tmp_path: Path) -> None:
    ch = clickhouse_server
    secret = tmp_path / "ch.password"
    secret.write_text(ch.writer_password + "\n")
    secret.chmod(0o644)
    auth = ["--clickhouse-user", ch.writer_user, "--clickhouse-password-file", str(secret)]
    s = _sink(mock_kafka, kafka_topic, ch, tmp_path, "open", *auth)
    assert s.wait() == 2 and f"{secret} is owned by uid {os.geteuid()} with mode 0644" in s.output()
    assert "with mode 0600" in s.output()
    secret.chmod(0o600)
    # the password in the URL instead: refused before anything connects, and never echoed
    url = ch.url.replace("://", f"://{ch.writer_user}:{ch.writer_password}@")
    s = SinkProcess(["--brokers", mock_kafka.bootstrap, "--clickhouse", url], tmp_path / "url.log")
    assert s.wait() == 2 and "--clickhouse-password-file" in s.output(), s.output()
    assert ch.writer_password not in s.output()
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-the-password\n")
    wrong.chmod(0o600)
    s = _sink(mock_kafka, kafka_topic, ch, tmp_path, "wrong", "--clickhouse-user", ch.writer_user,
              "--clickhouse-password-file", str(wrong))
    assert s.wait() == 2 and "check the user and password" in s.output()
    _produce_books(mock_kafka, kafka_topic, 0, 200)
    s = _sink(mock_kafka, kafka_topic, ch, tmp_path, "auth", "--idle-exit", "3", *auth)
    assert s.wait() == 0, s.output()
    assert json.loads((tmp_path / "auth.json").read_text())["rows"]["books"] == 200
    assert _count(ch, "books", "(venue, seq, t_recv)") == (200, 200)
    assert ch.writer_password not in s.output()  # the secret never reaches the log
