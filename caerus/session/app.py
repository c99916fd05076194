"""`caerus session`: run a local session (venue emulator + whole fleet), then render its report."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from caerus.durations import duration_arg
from caerus.plan import EMULATOR_PLACES, EXECUTION_PLACES, FEED_CLIENTS, FEED_WARM_EVERY_US, WAIT_POLICIES
from caerus.session.local import EMULATOR_YIELD, TRANSPORTS, SessionConfigError, SessionOptions, run_local_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=duration_arg, default=30.0,
                        help="session length: 30, 90s, 15m, 4h or 1h30m (default 30 s)")
    parser.add_argument("--out", type=Path, default=Path("sessions"), help="sessions folder (default ./sessions)")
    parser.add_argument("--seed", type=int, default=1, help="market model seed")
    parser.add_argument("--scenario", default=None, help="emulator fault scenario name, or replay:PATH")
    parser.add_argument("--market", default="default", metavar="NAME|FILE|replay:DATASET",
                        help="emulated market: a preset (default, fixed-lag) or a market TOML file, passed to "
                             "venue-sim --market (default: default; docs/emulator.md, The emulator's market); or "
                             "replay:DATASET, a real capture (an imported store or an hftbacktest file): its Binance "
                             "frames at their real pace, Hyperliquid modelled by the default market's follower "
                             "(docs/sessions.md, Replaying a real market)")
    parser.add_argument("--jumps-per-min", type=float, default=None,
                        help="emulated market: information jumps per minute (default: the market's own)")
    parser.add_argument("--wait-policy", choices=WAIT_POLICIES, default=None,
                        help="force a wait policy on every hot process (default: from the fleet plan)")
    parser.add_argument("--live", action="store_true",
                        help="feeds read the live venues (no emulator); orders still go to --transport (paper)")
    parser.add_argument("--no-capture", action="store_true", help="do not run the capture process")
    parser.add_argument("--record", action="store_true",
                        help="record mode: the feeds and capture only (no strategy, no execution, no orders); what "
                             "`caerus record` runs (docs/sessions.md, Recording)")
    parser.add_argument("--transport", choices=TRANSPORTS, default="paper",
                        help="execution transport: paper (simulated fills), null (decision-only reference), emulator "
                             "(real signed Hyperliquid order entry to the venue emulator over TLS)")
    parser.add_argument("--stop-grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--progress", choices=("auto", "rich", "lines", "none"), default="auto",
                        help="live display: rich on a terminal, a line every 5 s otherwise")
    parser.add_argument("--strategy-config", type=Path,
                        help='strategy TOML (e.g. mode = "bench": an order on every Binance book)')
    parser.add_argument("--execution-config", type=Path, help="execution TOML")
    parser.add_argument("--chaos", type=float, default=0.0, metavar="EVERY",
                        help="SIGKILL a random hot process (feed, strategy, execution) every EVERY seconds; the "
                             "supervisor restarts it and the report shows each death and restart (default off)")
    parser.add_argument("--feed-client", choices=FEED_CLIENTS, default=None,
                        help="force the feeds' WebSocket client: asyncio (websockets) or busy (our read path with "
                             "kernel receive stamps); default: the plan's choice (busy only on a core of its own)")
    parser.add_argument("--feed-warm-every-us", type=float, default=FEED_WARM_EVERY_US, metavar="US",
                        help="keep each busy-client feed's receive path warm: a shadow connection in the feed reads a "
                             "synthetic frame this often while the feed publishes nothing (caerus feed "
                             "--warm-every-us; feeds on the asyncio client or a sleeping loop run without). 0 = off; "
                             f"default {FEED_WARM_EVERY_US:g}")
    parser.add_argument("--emulator-yield", choices=EMULATOR_YIELD, default="auto",
                        help="the venue emulator gives its CPU up after each top-of-book frame it sends, so the fleet "
                             "process that reads it runs first: auto (default) when the plan puts the emulator on a "
                             "hot process's CPU (no core for every hot process, as on 2 vCPUs), on, off")
    parser.add_argument("--emulator-cpu", choices=EMULATOR_PLACES, default="auto",
                        help="where the venue emulator runs: auto (default: the plan's choice), housekeeping (the "
                             "feeds' CPU on 2 vCPUs) or strategy (the strategy's CPU), to compare placements")
    parser.add_argument("--execution-cpu", choices=EXECUTION_PLACES, default="auto",
                        help="where the execution engine runs when it has no CPU of its own (3 CPUs or fewer): auto "
                             "(default: the plan's choice; on 2 vCPUs the strategy's CPU), housekeeping (the feeds' "
                             "CPU) or strategy (the strategy's CPU), to compare placements")
    parser.add_argument("--symbols", default="BTC",
                        help="instruments to trade, comma-separated (BTC,ETH,SOL; NAME=BINANCESYMBOL/HLCOIN where the "
                             "venues' names differ); each must be listed by both venues (default BTC)")
    parser.add_argument("--feed-connections", type=int, default=None, metavar="K",
                        help="connections per feed, the instruments split evenly among them (default: as few as the "
                             "venue's per-connection limit allows, one for 64 instruments)")
    parser.add_argument("--symbol-rate", type=float, default=None, metavar="HZ",
                        help="emulated Binance bookTicker rate per instrument (default: the emulator's)")
    parser.add_argument("--max-books-per-feed-process", type=float, default=None, metavar="R",
                        help="books/s one feed process is planned to carry; a venue whose estimated rate (instruments "
                             "x rate per instrument) is above it is split across feed processes, each with its own "
                             "ring (default: caerus.plan.MAX_FEED_BOOKS_PER_S, from benchmarks/symbols_scaling)")
    parser.add_argument("--exporter-port", type=int, default=None, metavar="PORT",
                        help="run caerus exporter for this session on 127.0.0.1:PORT (0: any free port)")
    parser.add_argument("--no-report", action="store_true", help="skip rendering the report")
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder (index.html)")


def run(args: argparse.Namespace) -> int:
    if not args.no_report and importlib.util.find_spec("matplotlib") is None:
        # Said before anything starts: a host carries the fleet's runtime only, and a session that ran for hours
        # must not end in an ImportError.
        print("caerus session: the report needs matplotlib, from the [report] extra "
              "(pip install 'caerus[report]'); or pass --no-report", file=sys.stderr)
        return 2
    opts = SessionOptions(
        duration_s=args.duration, out=args.out, seed=args.seed, scenario=args.scenario,
        wait_policy=args.wait_policy, capture=not args.no_capture, transport=args.transport,
        stop_grace_s=args.stop_grace, progress=args.progress, strategy_config=args.strategy_config,
        execution_config=args.execution_config, live=args.live,
        market=args.market, jumps_per_min=args.jumps_per_min, chaos_every_s=args.chaos, feed_client=args.feed_client,
        feed_warm_every_us=args.feed_warm_every_us,
        emulator_yield=args.emulator_yield, emulator_cpu=args.emulator_cpu,
        execution_cpu=args.execution_cpu,
        symbols=args.symbols, symbol_rate_hz=args.symbol_rate, feed_connections=args.feed_connections,
        exporter_port=args.exporter_port, max_feed_books_per_s=args.max_books_per_feed_process,
        record=getattr(args, "record", False),
    )
    try:
        session_dir = run_local_session(opts, price=not args.no_report)
    except SessionConfigError as exc:
        print(f"caerus session: {exc}", file=sys.stderr)
        return 2
    if not args.no_report:
        from caerus.report.render import render_sessions

        result = render_sessions([session_dir], out_dir=args.reports)
        print(f"report: {result['sessions'][0]}")
        print(f"index: {result['index']}")
    summary = json.loads((session_dir / "summary.json").read_text())
    if summary.get("failure"):  # e.g. the emulator never became ready: what ran is still collected above
        print(f"caerus session: failed: {summary['failure'].splitlines()[0]}", file=sys.stderr)
        return 1
    return 0
