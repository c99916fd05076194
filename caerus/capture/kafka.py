"""The distributed output: capture rows as JSONEachRow Kafka messages, one row per message, keyed by venue.

confluent-kafka (librdkafka) does the batching (``linger.ms``), retries and delivery reports. The local buffer is
librdkafka's producer queue, bounded by ``queue.buffering.max.messages`` = ``buffer_bound``; ``message.timeout.ms
= 0`` keeps a message queued for as long as the broker is away instead of failing it, so a broker outage costs
nothing while the queue has room. When the queue is full, ``produce`` raises BufferError: that row is dropped and
counted (``dropped``), never silently. Every produced row ends in exactly one of: delivered, failed (a delivery
report with an error), dropped (never queued), or still queued at exit (``undelivered``).

Each message carries its table in a ``table`` header so the sink can route it without parsing the row.
"""

from __future__ import annotations

import logging

import pandas as pd
from confluent_kafka import KafkaError, KafkaException, Producer

from . import rows

log = logging.getLogger(__name__)


class BrokerUnreachable(RuntimeError):
    """No broker answered a metadata request at start-up."""


class KafkaOutput:
    def __init__(self, brokers: str, topic: str, *, buffer_bound: int = 1_000_000, linger_ms: float = 20.0,
                 extra: dict[str, object] | None = None) -> None:
        self.brokers = brokers
        self.topic = topic
        self.buffer_bound = buffer_bound
        self.produced = 0  # rows handed to produce() and queued
        self.delivered = 0
        self.failed = 0
        self.dropped = 0  # rows refused because the bounded queue was full
        self.last_error = ""
        conf: dict[str, object] = {
            "bootstrap.servers": brokers,
            "linger.ms": linger_ms,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": buffer_bound,
            "queue.buffering.max.kbytes": 2_097_151,  # the message-count bound is the one that applies
            "message.timeout.ms": 0,  # keep retrying while the broker is down (bounded by the queue, not time)
            "acks": "all",
            "on_delivery": self._on_delivery,
            "error_cb": self._on_error,
            "logger": log,
            "log.connection.close": False,
        }
        conf.update(extra or {})
        try:
            self.producer = Producer(conf)
        except KafkaException as e:
            raise ValueError(f"bad Kafka producer configuration: {e}") from e
        self._produce = self.producer.produce
        self._headers = {t: [("table", t.encode())] for t in rows.TABLES}

    def check_reachable(self, timeout_s: float = 5.0) -> None:
        """Ask a broker for the topic's metadata; BrokerUnreachable naming the brokers when none answers."""
        try:
            self.producer.list_topics(self.topic, timeout=timeout_s)
        except KafkaException as e:
            raise BrokerUnreachable(f"broker {self.brokers} unreachable: no metadata for topic {self.topic!r} "
                                    f"within {timeout_s:g} s ({e.args[0].str() if e.args else e})") from None

    def _on_delivery(self, err: KafkaError | None, msg: object) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            self.last_error = err.str()

    def _on_error(self, err: KafkaError) -> None:
        self.last_error = err.str()
        log.warning("kafka: %s", err.str())

    def write(self, table: str, df: pd.DataFrame, session: str) -> int:
        """Queue one message per row; returns rows queued (the rest were dropped and counted)."""
        if df.empty:
            return 0
        lines = rows.json_lines(table, df, session)
        keys = rows.venue_keys(df)
        headers = self._headers[table]
        produce, topic = self._produce, self.topic
        queued = 0
        for value, key in zip(lines, keys, strict=True):
            try:
                produce(topic, value, key, headers=headers)
            except BufferError:
                self.dropped += 1
                continue
            queued += 1
        self.produced += queued
        self.producer.poll(0)
        return queued

    @property
    def buffered(self) -> int:
        """Messages waiting in the producer queue (not yet acknowledged)."""
        return len(self.producer)

    def poll(self) -> None:
        self.producer.poll(0)

    def close(self, timeout_s: float = 10.0) -> int:
        """Flush for up to ``timeout_s``; returns how many messages were still undelivered."""
        return self.producer.flush(timeout_s)
