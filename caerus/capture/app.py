"""`caerus capture`: the off-path process that keeps every record the fleet's rings carried.

Validates its whole configuration (segment names, output choice, broker list and reachability, store folder)
before it starts reading, exits 2 with one clear line when something is wrong, exits 0 on SIGTERM/SIGINT after
draining the rings and flushing, and writes ``<store>/capture.json`` with totals and exact loss counts.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from caerus.config import ConfigError, convert
from caerus.ipc.wait import POLICIES, WaitPolicy
from caerus.plan import parse_cpu_list
from caerus.runtime.args import EXIT_CONFIG
from caerus.runtime.gcpolicy import freeze_startup
from caerus.runtime.memwatch import MemWatch
from caerus.runtime.pinning import pin, pin_all_threads

if TYPE_CHECKING:
    from .kafka import KafkaOutput

from .pipeline import Capture, CaptureConfig, ChdbOutput, Output, counter_names, write_summary

log = logging.getLogger("caerus.capture")

_BROKER = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--segment", action="append", default=[], metavar="NAME", required=True,
                   help="SWMR ring to capture (repeat); layout is read from the segment header")
    p.add_argument("--store", type=Path, metavar="DIR",
                   help="session folder: chDB store (embedded mode) and capture.json")
    p.add_argument("--brokers", metavar="HOST:PORT[,HOST:PORT]", help="produce to Kafka instead of chDB")
    p.add_argument("--topic", default="caerus_states", help="Kafka topic (default caerus_states)")
    p.add_argument("--session", default="", help="session id stored in each row (default: segment name prefix)")
    p.add_argument("--batch-rows", type=int, default=65536, help="flush when this many records are pending")
    p.add_argument("--flush-interval", type=float, default=2.0, metavar="S",
                   help="flush at least this often (each flush is one insert per table: chDB merges parts later)")
    p.add_argument("--missing-after", type=float, default=10.0, metavar="S",
                   help="report a segment that has not appeared after S seconds (capture keeps waiting for it)")
    p.add_argument("--kafka-buffer", type=int, default=1_000_000, metavar="N",
                   help="rows the producer may hold while the broker is away; beyond it rows are counted dropped")
    p.add_argument("--kafka-linger-ms", type=float, default=20.0)
    p.add_argument("--kafka-rows-per-message", type=int, default=100, metavar="N",
                   help="JSONEachRow rows per Kafka message (one table and venue per message; 1 = one row each)")
    p.add_argument("--kafka-exit-flush", type=float, default=10.0, metavar="S",
                   help="at exit, wait this long for outstanding deliveries (the rest is reported undelivered)")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="S",
                   help="start-up broker metadata timeout")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until signalled)")
    p.add_argument("--stats-segment", metavar="NAME", help="counter block to publish live counters in")
    p.add_argument("--metrics-dir", type=Path, metavar="DIR", help="accepted for fleet uniformity (no histograms)")
    p.add_argument("--wait-policy", default=WaitPolicy.SLEEP,
                   help=f"{'|'.join(POLICIES)} (default sleep: capture is off-path)")
    p.add_argument("--idle-sleep-ms", type=float, default=5.0, metavar="MS",
                   help="sleep policy: how long an idle pass sleeps (rings buffer meanwhile; default 5 ms)")
    p.add_argument("--cpus", default="", metavar="LIST", help="pin to these CPUs (kernel list syntax)")


def validate(args: argparse.Namespace) -> CaptureConfig:
    """Check the whole command line; the capture config on success, ConfigError naming the flag otherwise."""
    if not args.segment:
        raise ConfigError("at least one --segment is required")
    for name in args.segment:
        if not name or "/" in name or any(c.isspace() for c in name):
            raise ConfigError(f"--segment {name!r}: a segment name is non-empty, without '/' or spaces")
    if len(set(args.segment)) != len(args.segment):
        raise ConfigError(f"--segment given twice: {sorted({s for s in args.segment if args.segment.count(s) > 1})}")
    for name in counter_names(args.segment):
        if len(name.encode()) > 47:
            raise ConfigError(f"segment name too long for its counter {name!r} (47 bytes at most)")
    if args.brokers is not None:
        brokers = [b.strip() for b in args.brokers.split(",")]
        bad = [b for b in brokers if not _BROKER.match(b) or not 0 < int(b.rsplit(":", 1)[1]) < 65536]
        if bad or not brokers:
            raise ConfigError(f"--brokers {args.brokers!r}: expected HOST:PORT[,HOST:PORT...], bad: {bad}")
        if not args.topic or not re.match(r"^[A-Za-z0-9._\-]{1,249}$", args.topic):
            raise ConfigError(f"--topic {args.topic!r}: Kafka topic names are 1-249 of [A-Za-z0-9._-]")
        if args.kafka_buffer < 1:
            raise ConfigError(f"--kafka-buffer {args.kafka_buffer}: must be >= 1")
        if args.kafka_rows_per_message < 1:
            raise ConfigError(f"--kafka-rows-per-message {args.kafka_rows_per_message}: must be >= 1")
    elif args.store is None:
        raise ConfigError("give --store DIR (embedded chDB store) or --brokers HOST:PORT (Kafka)")
    if args.store is not None and args.store.exists() and not args.store.is_dir():
        raise ConfigError(f"--store {args.store}: exists and is not a directory")
    if args.idle_sleep_ms < 0:
        raise ConfigError(f"--idle-sleep-ms {args.idle_sleep_ms}: must be >= 0")
    if args.batch_rows < 1 or args.flush_interval <= 0:
        raise ConfigError("--batch-rows must be >= 1 and --flush-interval > 0")
    if args.wait_policy not in POLICIES:
        raise ConfigError(f"--wait-policy {args.wait_policy!r} is not one of {', '.join(POLICIES)}")
    try:
        args.cpu_list = parse_cpu_list(args.cpus)
    except ValueError:
        raise ConfigError(f"--cpus {args.cpus!r}: expected a CPU list like 0 or 0-1,3") from None
    return convert({"segments": list(args.segment), "session": args.session, "batch_rows": args.batch_rows,
                    "flush_interval_s": args.flush_interval, "missing_after_s": args.missing_after,
                    "wait_policy": str(args.wait_policy), "idle_sleep_s": args.idle_sleep_ms / 1000},
                   CaptureConfig, "capture options")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s capture %(levelname)s %(message)s")
    # Signals first: a SIGTERM that arrives while chDB is still importing must still end in a clean exit
    # (drain, flush, capture.json), not a default kill.
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cfg = validate(args)
        # Pin before chDB / librdkafka start their thread pools, so every thread they create stays off the hot CPUs.
        pin(args.cpu_list)
    except (ConfigError, ValueError) as e:
        print(f"caerus capture: {e}", file=sys.stderr)
        return EXIT_CONFIG
    from caerus.ipc.segment import SegmentError

    from .reader import UnsupportedSegment, layout_of

    # a segment that already exists with the wrong kind/layout, or that is not a file capture may trust (a symlink,
    # a FIFO, another user's), is a config error, caught before starting
    try:
        for name in args.segment:
            layout_of(name)
    except (UnsupportedSegment, SegmentError) as e:
        print(f"caerus capture: {e}", file=sys.stderr)
        return EXIT_CONFIG

    # Exactly one of the two outputs (typed apart: what each needs at exit differs).
    kafka: KafkaOutput | None = None
    chdb: ChdbOutput | None = None
    if args.brokers is not None:
        from .kafka import BrokerUnreachable, KafkaOutput

        try:
            kafka = KafkaOutput(args.brokers, args.topic, buffer_bound=args.kafka_buffer,
                                linger_ms=args.kafka_linger_ms, rows_per_message=args.kafka_rows_per_message)
            kafka.check_reachable(args.connect_timeout)
        except (ValueError, BrokerUnreachable) as e:
            print(f"caerus capture: {e}", file=sys.stderr)
            return EXIT_CONFIG
        output: Output = kafka
    else:
        from .store import ChdbStore, StoreError

        try:
            chdb = ChdbOutput(ChdbStore(args.store))
        except StoreError as e:
            print(f"caerus capture: {e}", file=sys.stderr)
            return EXIT_CONFIG
        output = chdb

    pin_all_threads(args.cpu_list)  # threads started before the pin (allocator, BLAS) follow too
    counters = None
    if args.stats_segment:
        from caerus.ipc.counter_block import CounterBlock

        counters = CounterBlock.create(args.stats_segment, ints=counter_names(args.segment))
    cap = Capture(cfg, output, counters)
    freeze_startup()  # the start-up heap (chDB, pandas) is never rescanned; the collector stays on for the rest
    cap.stop_event = stop
    cap.memwatch = MemWatch("capture")
    cap.memwatch.start()
    rc = 0
    try:
        cap.run(args.duration)
    except (UnsupportedSegment, SegmentError) as e:  # a segment appeared later with the wrong kind/layout, or untrusted
        log.error("%s", e)
        rc = 2
    cap.memwatch.report()
    summary = cap.summary()
    summary["mode"] = "kafka" if args.brokers else "chdb"
    if kafka is not None:
        undelivered = kafka.close(args.kafka_exit_flush)
        cap.publish_counters()
        if undelivered or kafka.dropped or kafka.failed:
            log.warning("kafka: %d rows undelivered at exit (after a %g s flush), %d dropped at the buffer bound, "
                        "%d failed delivery; last error: %s", undelivered, args.kafka_exit_flush, kafka.dropped,
                        kafka.failed, kafka.last_error or "none")
        summary["kafka"] = {"brokers": args.brokers, "topic": args.topic, "buffer_bound": args.kafka_buffer,
                            "queued": kafka.produced, "delivered": kafka.delivered, "failed": kafka.failed,
                            "dropped": kafka.dropped, "undelivered_at_exit": undelivered,
                            "last_error": kafka.last_error}
    elif chdb is not None:
        chdb.store.close()
        summary["store"] = str(args.store / "chdb")
    if args.store is not None:
        write_summary(args.store / "capture.json", summary)
    log.info("capture done: %s rows, %d records, %d lost, missing %s", summary["rows"], summary["records"],
             summary["lost"], summary["missing"] or "none")
    if counters is not None:
        counters.close()
    return rc
