"""The sink loop: Kafka topic -> ClickHouse server, offsets committed only after the rows are in.

Each pass consumes up to ``batch_max`` messages, groups them by their ``table`` header, inserts one JSONEachRow
request per table, and commits the consumer's positions only when every insert of the pass succeeded. While the
server is unreachable the pass retries with the fleet's one back-off (caerus.net.pacing: capped, jittered) and
commits nothing, so a crash or stop during an outage re-reads the same messages next time. Re-inserting rows that
did make it is harmless: the tables are ReplacingMergeTree keyed on (venue, sequence, time), and readers use FINAL.

A message holds one or more JSONEachRow lines of one table (named in its ``table`` header). A message without a
known table header, and each line that is not a JSON object, is malformed: counted (``malformed``), logged once
per kind, skipped (its offset is committed with the pass). A batch the server answers with an error three times is
retried row by row so one bad row cannot stall the topic: the rows it refuses are counted as rejected.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

import msgspec
from confluent_kafka import Consumer, KafkaError, KafkaException

from caerus.net.pacing import Backoff

from . import rows
from .clickhouse import ClickHouseError, ClickHouseHttp

log = logging.getLogger(__name__)


def counter_names() -> list[str]:
    return ["consumed", *[f"rows.{t}" for t in rows.TABLES], "malformed", "rejected", "insert_retries",
            "inserts", "commits", "kafka.errors", "clickhouse.down"]


@dataclass
class SinkStats:
    consumed: int = 0
    malformed: int = 0
    rejected: int = 0
    insert_retries: int = 0
    inserts: int = 0
    commits: int = 0
    kafka_errors: int = 0
    clickhouse_down: int = 0  # 1 while the server is unreachable

    def __post_init__(self) -> None:
        self.rows = dict.fromkeys(rows.TABLES, 0)


class Sink:
    def __init__(self, brokers: str, topic: str, clickhouse: ClickHouseHttp, *, group: str = "caerus-sink",
                 batch_max: int = 50_000, batch_wait_s: float = 0.5, backoff_max_s: float = 5.0,
                 counters=None) -> None:
        self.topic = topic
        self.ch = clickhouse
        self.batch_max = batch_max
        self.batch_wait_s = batch_wait_s
        self.backoff_max_s = backoff_max_s
        self.counters = counters
        self.stats = SinkStats()
        self.stop_event = threading.Event()
        self._decoder = msgspec.json.Decoder(dict)
        self._logged: set[str] = set()
        self.consumer = Consumer({
            "bootstrap.servers": brokers,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": True,
            "auto.offset.reset": "earliest",
            # The sink may sit in an insert retry loop for a long ClickHouse outage without consuming: do not let
            # the group evict it for that (one sink per topic is the deployment this is written for).
            "max.poll.interval.ms": 3_600_000,
            "logger": log,
        })

    def check_reachable(self, timeout_s: float) -> None:
        try:
            self.consumer.list_topics(self.topic, timeout=timeout_s)
        except KafkaException as e:
            raise ConnectionError(f"no metadata for topic {self.topic!r} within {timeout_s:g} s "
                                  f"({e.args[0].str() if e.args else e})") from None

    def run(self, idle_exit_s: float | None = None) -> None:
        """Consume until stopped (or, for tests and drains, until nothing arrived for ``idle_exit_s``)."""
        assigned: list[float] = []  # when the group gave us partitions (the idle clock starts there, not at join)

        def on_assign(consumer: Consumer, partitions: list) -> None:
            assigned.append(time.monotonic())

        self.consumer.subscribe([self.topic], on_assign=on_assign)
        last_data = 0.0
        try:
            while not self.stop_event.is_set():
                msgs = self.consumer.consume(num_messages=self.batch_max, timeout=self.batch_wait_s)
                if msgs:
                    last_data = time.monotonic()
                    if not self.handle(msgs):
                        break  # stopped during an outage: nothing committed, the messages will be re-read
                elif idle_exit_s is not None and assigned and \
                        time.monotonic() - max(last_data, assigned[0]) >= idle_exit_s:
                    break
                self.publish_counters()
        finally:
            self.publish_counters()
            self.consumer.close()

    def handle(self, msgs: list) -> bool:
        """Insert one consumed batch and commit it; False when stopped before the inserts succeeded."""
        by_table: dict[str, list[bytes]] = defaultdict(list)
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    self.stats.kafka_errors += 1
                    self._log_once("kafka", "kafka consumer error: %s", err.str())
                continue
            self.stats.consumed += 1
            table = _table_of(m.headers())
            value = m.value()
            if table not in self.stats.rows or not value:
                self.stats.malformed += 1
                self._log_once("table", "malformed message (no known table header) at %s[%d]@%d", m.topic(),
                               m.partition(), m.offset())
                continue
            good = by_table[table]
            for line in value.split(b"\n"):  # a message holds one or more JSONEachRow lines
                try:
                    self._decoder.decode(line)
                except msgspec.DecodeError:
                    self.stats.malformed += 1
                    self._log_once("json", "malformed row (not a JSON object) in %s[%d]@%d", m.topic(),
                                   m.partition(), m.offset())
                    continue
                good.append(line)
        for table, lines in by_table.items():
            if lines and not self._insert(table, lines):
                return False
        try:
            self.consumer.commit(asynchronous=False)
            self.stats.commits += 1
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if err is None or err.code() != KafkaError._NO_OFFSET:
                # Not committed: these messages will be consumed and inserted again later, which the
                # ReplacingMergeTree key absorbs. Counted and logged, never silent.
                self.stats.kafka_errors += 1
                self._log_once("commit", "offset commit failed (rows will be re-read, dedup absorbs them): %s", e)
        return True

    def _insert(self, table: str, lines: list[bytes]) -> bool:
        backoff = Backoff(base_s=0.05, cap_s=max(0.05, self.backoff_max_s))  # the fleet's one back-off (jittered)
        answered_errors = 0
        while True:
            try:
                self.ch.insert_json(table, lines)
            except ClickHouseError as e:
                self.stats.insert_retries += 1
                if e.answered:
                    answered_errors += 1
                    if answered_errors >= 3:
                        return self._insert_rows(table, lines, e)
                else:
                    self.stats.clickhouse_down = 1
                    self._log_once("down", "%s; retrying (offsets not committed)", e)
                self.publish_counters()
                if self.stop_event.wait(backoff.next_delay()):
                    return False
                continue
            if self.stats.clickhouse_down:
                log.info("ClickHouse at %s is back", self.ch.url)
                self._logged.discard("down")
            self.stats.clickhouse_down = 0
            self.stats.inserts += 1
            self.stats.rows[table] += len(lines)
            return True

    def _insert_rows(self, table: str, lines: list[bytes], first: ClickHouseError) -> bool:
        log.error("ClickHouse refused a %d-row batch for %s three times (%s); inserting row by row", len(lines),
                  table, first)
        for line in lines:
            try:
                self.ch.insert_json(table, [line])
            except ClickHouseError as e:
                if not e.answered:
                    return self._insert(table, [line])  # went down meanwhile: back to retrying
                self.stats.rejected += 1
                self._log_once(f"reject.{table}", "row rejected by ClickHouse for %s: %s", table, e)
                continue
            self.stats.rows[table] += 1
        self.stats.inserts += 1
        return True

    def _log_once(self, key: str, fmt: str, *args: object) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.warning(fmt, *args)

    def publish_counters(self) -> None:
        b = self.counters
        if b is None:
            return
        s = self.stats
        b.set("consumed", s.consumed)
        for t, n in s.rows.items():
            b.set(f"rows.{t}", n)
        for name in ("malformed", "rejected", "insert_retries", "inserts", "commits"):
            b.set(name, getattr(s, name))
        b.set("kafka.errors", s.kafka_errors)
        b.set("clickhouse.down", s.clickhouse_down)
        b.beat()

    def summary(self) -> dict:
        s = self.stats
        return {"consumed": s.consumed, "rows": dict(s.rows), "malformed": s.malformed, "rejected": s.rejected,
                "insert_retries": s.insert_retries, "inserts": s.inserts, "commits": s.commits,
                "kafka_errors": s.kafka_errors}


def _table_of(headers: list | None) -> str:
    for k, v in headers or ():
        if k == "table" and v is not None:
            return v.decode(errors="replace")
    return ""
