"""`caerus report [SESSION ...]`: render reports for session folders (default: the newest under --sessions-dir)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from caerus.report.render import SessionNotFound, newest_session, render_sessions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="*", type=Path, help="session folder(s); default: the newest")
    parser.add_argument("--sessions-dir", "--sessions", dest="sessions_dir", type=Path, default=Path("sessions"),
                        help="where the newest session is looked for (default ./sessions); --sessions is the old "
                             "name")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="reports folder (index.html lives here)")


def run(args: argparse.Namespace) -> int:
    try:
        paths = list(args.session) or [newest_session(args.sessions_dir)]
        result = render_sessions(paths, out_dir=args.out)
    except SessionNotFound as exc:
        print(f"caerus report: {exc}", file=sys.stderr)
        return 2
    for p in result["sessions"]:
        print(f"report: {p}")
    if "comparison" in result:
        print(f"comparison: {result['comparison']}")
    print(f"index: {result['index']}")
    return 0
