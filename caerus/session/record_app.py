"""`caerus record`: record the venues for hours through the capture path (the feeds + capture into chDB), no orders.

    caerus record [--duration 4h] [--out recordings] [--symbols BTC,ETH] [--emulator | --market NAME|replay:DATASET]
                  [--report] [--progress auto|rich|lines|none] [--stop-grace S]

It is a local session in record mode (``caerus session --record --live``): the same plan, supervision (a feed that
dies is restarted), stop order and session folder, with no strategy and no execution. The store is
``<session>/capture/`` (``caerus data books``, ``caerus calibrate``, ``caerus backtest --store`` read it). Live
venues by default; ``--emulator`` (or ``--market``) records the venue emulator instead, for a dry run. At the end
it prints the store's size and what that is per hour at the rate recorded (docs/sessions.md, Recording).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from caerus.durations import duration_arg
from caerus.session.local import SessionConfigError, SessionOptions, run_local_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=duration_arg, default=3600.0,
                        help="how long to record: 90s, 15m, 4h or 1h30m (default 1h)")
    parser.add_argument("--out", type=Path, default=Path("recordings"), help="sessions folder (default ./recordings)")
    parser.add_argument("--symbols", default="BTC", help="instruments, comma-separated (default BTC)")
    parser.add_argument("--emulator", action="store_true",
                        help="record the venue emulator (its default market) instead of the live venues")
    parser.add_argument("--market", default=None, metavar="NAME|FILE|replay:DATASET",
                        help="record the venue emulator playing this market (implies --emulator)")
    parser.add_argument("--seed", type=int, default=1, help="the emulator's market seed")
    parser.add_argument("--report", action="store_true", help="render the session report at the end (needs the "
                                                              "[report] extra)")
    parser.add_argument("--progress", choices=("auto", "rich", "lines", "none"), default="auto")
    parser.add_argument("--stop-grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL")


def run(args: argparse.Namespace) -> int:
    if args.report and importlib.util.find_spec("matplotlib") is None:
        print("caerus record: --report needs matplotlib, from the [report] extra (pip install 'caerus[report]')",
              file=sys.stderr)
        return 2
    emulated = args.emulator or args.market is not None
    opts = SessionOptions(duration_s=args.duration, out=args.out, seed=args.seed, live=not emulated,
                          market=args.market or "default", symbols=args.symbols, progress=args.progress,
                          stop_grace_s=args.stop_grace, record=True)
    try:
        session_dir = run_local_session(opts)
    except SessionConfigError as exc:
        print(f"caerus record: {exc}", file=sys.stderr)
        return 2
    summary = json.loads((session_dir / "summary.json").read_text())
    store = summary.get("capture_store") or {}
    if store:
        print(f"capture store: {session_dir / 'capture'}: {store['bytes'] / 1e6:,.1f} MB for {store['seconds']} s "
              f"recorded ({store['mb_per_hour']:,.1f} MB per hour at this rate; {store['peak_bytes'] / 1e6:,.1f} MB at "
              f"its peak while recording: chDB keeps merged-away parts for minutes)")
    if args.report:
        from caerus.report.render import render_sessions

        result = render_sessions([session_dir], out_dir=Path(args.out) / "reports")
        print(f"report: {result['sessions'][0]}")
    if summary.get("failure"):
        print(f"caerus record: failed: {summary['failure'].splitlines()[0]}", file=sys.stderr)
        return 1
    return 0
