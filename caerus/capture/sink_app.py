"""`caerus sink`: consume the capture topic and insert it into a ClickHouse server over HTTP.

Checks its configuration and both ends (ClickHouse /ping and schema, broker metadata) before consuming; exit 2
with one clear line when something is wrong; exit 0 on SIGTERM/SIGINT. ``--summary PATH`` writes the totals.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from pathlib import Path

from .app import _BROKER

log = logging.getLogger("caerus.sink")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--brokers", required=True, metavar="HOST:PORT[,HOST:PORT]")
    p.add_argument("--topic", default="caerus_states")
    p.add_argument("--clickhouse", required=True, metavar="URL", help="ClickHouse HTTP interface, http://HOST:PORT")
    p.add_argument("--clickhouse-user", metavar="NAME", help="ClickHouse user (default: the server's default user)")
    p.add_argument("--clickhouse-password-file", type=Path, metavar="FILE",
                   help="file (mode 0600) whose first line is the ClickHouse password")
    p.add_argument("--group", default="caerus-sink", help="Kafka consumer group (offsets are committed here)")
    p.add_argument("--batch-max", type=int, default=50_000, help="messages per insert pass")
    p.add_argument("--batch-wait", type=float, default=0.5, metavar="S", help="wait this long to fill a pass")
    p.add_argument("--idle-exit", type=float, metavar="S", help="exit after S seconds without messages (drains)")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="S")
    p.add_argument("--summary", type=Path, metavar="PATH", help="write totals as JSON here at exit")
    p.add_argument("--stats-segment", metavar="NAME", help="counter block to publish live counters in")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s sink %(levelname)s %(message)s")
    from .clickhouse import ClickHouseError, ClickHouseHttp, read_password_file

    def fail(msg: str) -> int:
        print(f"caerus sink: {msg}", file=sys.stderr)
        return 2

    brokers = [b.strip() for b in args.brokers.split(",")]
    if not all(_BROKER.match(b) for b in brokers):
        return fail(f"--brokers {args.brokers!r}: expected HOST:PORT[,HOST:PORT...]")
    if args.batch_max < 1 or args.batch_wait <= 0:
        return fail("--batch-max must be >= 1 and --batch-wait > 0")
    try:
        password = ""
        if args.clickhouse_password_file is not None:
            if args.clickhouse_user is None:
                return fail("--clickhouse-password-file needs --clickhouse-user")
            password = read_password_file(args.clickhouse_password_file)
        ch = ClickHouseHttp(args.clickhouse, user=args.clickhouse_user, password=password)
    except (ValueError, OSError) as e:
        return fail(str(e))
    if not ch.ping():
        return fail(f"ClickHouse at {ch.url} unreachable (no 'Ok.' from /ping)")
    try:
        ch.ensure_schema()
    except ClickHouseError as e:
        return fail(f"could not create the capture tables (check the user and password): {e}")

    from .sink import Sink, counter_names

    counters = None
    if args.stats_segment:
        from caerus.ipc.counter_block import CounterBlock

        counters = CounterBlock.create(args.stats_segment, ints=counter_names())
    sink = Sink(args.brokers, args.topic, ch, group=args.group, batch_max=args.batch_max,
                batch_wait_s=args.batch_wait, counters=counters)
    try:
        sink.check_reachable(args.connect_timeout)
    except ConnectionError as e:
        sink.consumer.close()
        return fail(f"broker {args.brokers} unreachable: {e}")

    def on_signal(signum: int, frame: object) -> None:
        sink.stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sink.run(idle_exit_s=args.idle_exit)
    summary = sink.summary()
    log.info("sink done: %s", summary)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(summary, indent=2, sort_keys=True))
    if counters is not None:
        counters.close()
    return 0
