"""The distributed output: capture rows as JSONEachRow Kafka messages keyed by venue.

A message value is one or more JSONEachRow lines (``rows_per_message``, default 100; 1 gives one row per
message) of one table and one venue, so a venue's rows stay in order in one partition. Several rows per message
is what lets a Python producer reach >= 200k rows/s (each ``produce`` + delivery report costs ~3 us here);
ClickHouse's own Kafka engine and our sink both read multi-row JSONEachRow messages. Each message carries its
table in a ``table`` header so the sink routes it without parsing.

Rows become JSON in bulk through chDB (``SELECT ... FROM Python(table) FORMAT JSONEachRow``, :func:`json_rows`):
the same engine and type rules as the server, and ~2x faster than pandas' writer. NaN is not a JSON number: a NaN
price (a withdrawn side) is written as the string ``"nan"`` (``output_format_json_quote_denormals``, infinities
likewise), which stays valid JSON for the sink and which ClickHouse reads back into a Float64 as NaN, both 18.16 and
current servers. (JSON ``null`` would not do: 18.16 reads it as NaN but current servers store the column default
0.0.) The input is an Arrow table (rows.arrow_table) so that chDB sees the NaN at all, not a NULL.

confluent-kafka (librdkafka) does the batching (``linger.ms``), retries and delivery reports; ``message.timeout.ms
= 0`` keeps messages queued for as long as the broker is away instead of failing them. The local buffer is
bounded in rows (``buffer_bound``): rows handed over but not yet acknowledged. A row that does not fit is
dropped and counted (``dropped``), never silently. Every row ends in exactly one of: delivered, failed (a delivery
report with an error), dropped (never queued), or still queued at exit (``undelivered``).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from confluent_kafka import KafkaError, KafkaException, Producer

from . import rows

log = logging.getLogger(__name__)


class BrokerUnreachable(RuntimeError):
    """No broker answered a metadata request at start-up."""


class KafkaOutput:
    def __init__(self, brokers: str, topic: str, *, buffer_bound: int = 1_000_000, linger_ms: float = 20.0,
                 rows_per_message: int = 100, extra: dict[str, object] | None = None) -> None:
        if buffer_bound < 1 or rows_per_message < 1:
            raise ValueError("buffer_bound and rows_per_message must be >= 1")
        self.brokers = brokers
        self.topic = topic
        self.buffer_bound = buffer_bound
        self.rows_per_message = rows_per_message
        self.produced = 0  # rows queued (handed to produce() successfully)
        self.delivered = 0  # rows acknowledged by the broker
        self.failed = 0  # rows whose delivery report carried an error
        self.dropped = 0  # rows refused because the bounded buffer was full
        self.last_error = ""
        conf: dict[str, object] = {
            "bootstrap.servers": brokers,
            "linger.ms": linger_ms,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": min(buffer_bound, 2_147_483_647),  # never below our row bound
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
        self._headers: dict[str, list[tuple[str, str | bytes | None]]] = {
            t: [("table", t.encode())] for t in rows.TABLES}
        self._keys = rows.venue_names(np.arange(256))

    def check_reachable(self, timeout_s: float = 5.0) -> None:
        """Ask a broker for the topic's metadata; BrokerUnreachable naming the brokers when none answers."""
        try:
            self.producer.list_topics(self.topic, timeout=timeout_s)
        except KafkaException as e:
            raise BrokerUnreachable(f"broker {self.brokers} unreachable: no metadata for topic {self.topic!r} "
                                    f"within {timeout_s:g} s ({e.args[0].str() if e.args else e})") from None

    def _on_delivery(self, err: KafkaError | None, msg) -> None:
        n = msg.value().count(b"\n") + 1
        if err is None:
            self.delivered += n
        else:
            self.failed += n
            self.last_error = err.str()

    def _on_error(self, err: KafkaError) -> None:
        self.last_error = err.str()
        log.warning("kafka: %s", err.str())

    def encode(self, table: str, df: pd.DataFrame, session: str) -> list[bytes]:
        return json_rows(table, df, session)

    def write(self, table: str, df: pd.DataFrame, session: str) -> int:
        """Queue ``df``'s rows (messages of up to rows_per_message rows of one venue); returns rows queued.

        Rows beyond the buffer bound are dropped and counted in ``dropped``."""
        if df.empty:
            return 0
        lines = self.encode(table, df, session)
        codes = df["venue"].to_numpy()
        if (codes == codes[0]).all():
            groups = [(codes[0], lines)]
        else:  # rows of several venues (orders of both legs): one group per venue, each in its original order
            groups = [(v, [lines[i] for i in np.flatnonzero(codes == v)]) for v in np.unique(codes)]
        headers = self._headers[table]
        produce, topic, per = self._produce, self.topic, self.rows_per_message
        queued = 0
        for code, group in groups:
            key = self._keys[int(code)]
            for start in range(0, len(group), per):
                chunk = group[start : start + per]
                room = self.buffer_bound - self.buffered
                if room < len(chunk):
                    self.dropped += len(chunk) - max(room, 0)
                    if room <= 0:
                        continue
                    chunk = chunk[:room]
                try:
                    produce(topic, b"\n".join(chunk), key, headers=headers)
                except BufferError:
                    self.dropped += len(chunk)
                    continue
                queued += len(chunk)
                self.produced += len(chunk)
            self.producer.poll(0)
        return queued

    @property
    def buffered(self) -> int:
        """Rows handed over and not yet acknowledged (delivered or failed)."""
        return self.produced - self.delivered - self.failed

    def poll(self) -> None:
        self.producer.poll(0)

    def counters(self) -> dict[str, int]:
        return {"kafka.queued": self.produced, "kafka.buffered": self.buffered, "kafka.delivered": self.delivered,
                "kafka.dropped": self.dropped, "kafka.errors": self.failed}

    def close(self, timeout_s: float = 10.0) -> int:
        """Flush for up to ``timeout_s``; returns how many rows were still undelivered."""
        self.producer.flush(timeout_s)
        return self.buffered


def json_rows(table: str, df: pd.DataFrame, session: str) -> list[bytes]:
    """One JSONEachRow line per row of ``df`` (bytes, no newline), enums by name, ``session`` first, NaN and
    infinities as the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    import chdb  # stateless in-memory engine; lazy: importing chDB costs hundreds of ms

    capture_rows = rows.arrow_table(df)  # noqa: F841 - found by name by chDB's Python() table function
    sql = (f"SELECT {_quote(session)} AS session, {rows.select_list(table)} FROM Python(capture_rows) "
           "SETTINGS output_format_json_quote_64bit_integers = 0, output_format_json_quote_denormals = 1")
    body = chdb.query(sql, "JSONEachRow").bytes()
    lines = body.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if len(lines) != len(df):
        raise RuntimeError(f"JSON encoding of {len(df)} {table} rows gave {len(lines)} lines")
    return lines


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
