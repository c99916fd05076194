"""``caerus exporter``: one process per host serving a session's counters and latencies to Prometheus on loopback.

It follows either one session folder (``caerus exporter DIR``, as a local session starts it) or the newest session
under a folder (``--latest-in DIR``, as the host's systemd unit starts it, switching when a new session starts).
It binds loopback only; a ready file (JSON with the port) says when it is listening.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import sys
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from caerus.ipc.segment import pid_alive
from caerus.metrics.env import chrony_tracking
from caerus.monitoring.collector import FleetCollector, HostCollector
from caerus.monitoring.http_server import serve
from caerus.monitoring.session_files import SessionFolderError, read_fleet

DEFAULT_PORT = 9465
POLL_S = 0.5
REFRESH_S = 1.0  # the latency families are rebuilt at the processes' .hlog interval, not faster
CHRONY_EVERY_S = 10.0
LINGER_S = 3.0
NICE = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("session_dir", nargs="?", type=Path, help="the session folder to export")
    src.add_argument("--latest-in", type=Path, metavar="DIR", help="export the newest session folder under DIR")
    parser.add_argument("--bind", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument("--ready-file", type=Path, help="write {\"port\": P, \"pid\": PID} here once listening")
    parser.add_argument("--until-pid", type=int, help="exit when this process (the session runner) has exited")
    parser.add_argument("--wait", type=float, default=30.0,
                        help="seconds to wait for the session's config.toml (default 30)")
    parser.add_argument("--host-expiry-file", type=Path, metavar="FILE",
                        help="file holding the epoch second the host's time-to-live runs out (/etc/caerus/expiry on "
                             "a provisioned host; read at every scrape, as invoke extend moves it)")
    parser.add_argument("--chrony", action="store_true", help="serve chronyd's offset (chronyc every 10 s)")
    parser.add_argument("--linger", type=float, default=LINGER_S,
                        help=f"on SIGTERM, wait up to this many seconds for one more scrape, so the session's final "
                             f"counts reach Prometheus (default {LINGER_S})")


class ChronyOffset:
    """chronyd's last offset, refreshed at most every CHRONY_EVERY_S (chronyc is a subprocess)."""

    def __init__(self) -> None:
        self.taken = -1e9
        self.value: float | None = None

    def __call__(self) -> float | None:
        now = time.monotonic()
        if now - self.taken >= CHRONY_EVERY_S:
            self.taken = now
            t = chrony_tracking(timeout=2.0)
            off = t.get("last_offset_s")
            self.value = float(off) if isinstance(off, (int, float)) else None
        return self.value


def newest_session(root: Path) -> Path | None:
    dirs = [d for d in root.glob("*/config.toml")] if root.is_dir() else []
    return max(dirs, key=lambda p: p.stat().st_mtime).parent if dirs else None


def run(args: argparse.Namespace) -> int:
    try:
        if not ipaddress.ip_address(args.bind).is_loopback:
            print(f"caerus exporter: --bind {args.bind} is not a loopback address (the exporter stays on loopback)",
                  file=sys.stderr)
            return 2
    except ValueError:
        print(f"caerus exporter: --bind {args.bind!r} is not an IP address", file=sys.stderr)
        return 2
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    # off the hot path in CPU too: on a machine whose housekeeping core also runs the feeds (2 cores), scrapes
    # yield to the fleet
    os.nice(NICE)
    signal.signal(signal.SIGINT, on_term)
    chrony = ChronyOffset() if args.chrony else (lambda: None)
    registry = CollectorRegistry()
    registry.register(HostCollector(clock_offset=chrony, host_expiry=args.host_expiry_file))
    collector: FleetCollector | None = None
    current: Path | None = None
    started = refreshed = time.monotonic()
    deadline = started + args.wait
    try:
        server, thread, responses = serve(registry, args.bind, args.port)
    except OSError as exc:
        print(f"caerus exporter: cannot listen on {args.bind}:{args.port}: {exc}", file=sys.stderr)
        return 1
    port = server.server_port
    if args.ready_file is not None:
        tmp = args.ready_file.with_name(args.ready_file.name + ".tmp")
        tmp.write_text(json.dumps({"port": port, "pid": os.getpid(), "bind": args.bind}))
        os.replace(tmp, args.ready_file)
    print(f"caerus exporter: http://{args.bind}:{port}/metrics", file=sys.stderr, flush=True)
    try:
        while not stop:
            if args.until_pid is not None and not pid_alive(args.until_pid):
                break
            target = args.session_dir if args.session_dir is not None else newest_session(args.latest_in)
            if target is not None and target != current:
                try:
                    fleet = read_fleet(target)
                except SessionFolderError as exc:
                    if args.session_dir is not None and time.monotonic() > deadline:
                        print(f"caerus exporter: {exc}", file=sys.stderr)
                        return 2
                    fleet = []
                if fleet:
                    if collector is not None:
                        registry.unregister(collector)
                    collector = FleetCollector(target.name, target, fleet)
                    collector.refresh()
                    refreshed = time.monotonic()
                    registry.register(collector)
                    current = target
            if collector is not None and time.monotonic() - refreshed >= REFRESH_S:
                collector.refresh()
                refreshed = time.monotonic()
            time.sleep(POLL_S)
        if collector is not None:  # the fleet has stopped: let a scrape read its final counts first
            served = collector.refresh()
            linger_until = time.monotonic() + args.linger
            # a scrape collected after the final refresh, and written out (a collected response is only in
            # Prometheus once the last byte is written)
            while ((collector.scrapes == served or responses.open) and time.monotonic() < linger_until):
                time.sleep(0.05)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5.0)
        if collector is not None:  # its own cost, beside the on/off benchmark (logs/exporter.log in a session)
            t = os.times()
            print(f"caerus exporter: {collector.scrapes} scrapes, cpu {t.user + t.system:.2f} s "
                  f"over {time.monotonic() - started:.1f} s; connections refused (pool busy) {server.refused}, "
                  f"timed out {server.timed_out}", file=sys.stderr, flush=True)
    return 0
