"""python -m benchmarks.peers: Caerus side by side with the Python tools users would pick instead (issue 30).

    .venv-peers/bin/python -m benchmarks.peers [--quick] [--json PATH] [--docs docs/peers.md] [--frames FILE]

Runs in .venv-peers (Python 3.13, locks/peers.txt; cryptofeed 3 requires 3.13; benchmarks/peers_venv finds it, in
this checkout or the main worktree it is a git worktree of): started from another interpreter, it re-runs itself
there when that venv exists. Sections (each its own module): feed decode (feed_decode), process hop (process_hop),
WebSocket receive (ws_receive), backtest throughput (backtest: read from backtest_speed's JSON). Every section times
its contenders under one protocol (benchmarks/protocol: warmed, the same interleaved repetitions, the same
statistic), printed under the table. Prints the table (p50/p99 and every contender's ratio to Caerus from the same
run) and rewrites docs/peers.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import peers_venv

ROOT = Path(__file__).resolve().parents[2]
PEERS_PYTHON = peers_venv.python()


def _in_peers_venv() -> bool:
    try:
        import cryptofeed  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    from benchmarks.common import benchmark_parser

    p = benchmark_parser(__doc__)
    p.add_argument("--frames", type=Path, help="a recorded frames file to read instead of recording a fresh one")
    p.add_argument("--docs", type=Path, default=ROOT / "docs" / "peers.md", help="Markdown page to rewrite")
    p.add_argument("--no-docs", action="store_true", help="do not rewrite the docs page")
    p.add_argument("--only", action="append", choices=("feed", "hop", "ws", "backtest"), help="sections to run")
    p.add_argument("--backtest-json", type=Path, help="backtest_speed --json output to list (hftbacktest row)")
    args = p.parse_args(argv)
    if not _in_peers_venv() and PEERS_PYTHON.exists() and Path(sys.executable).resolve() != PEERS_PYTHON.resolve():
        # the peers live in their own venv: run there (same arguments), so the command works from the dev venv
        argv = sys.argv[1:] if argv is None else argv
        return subprocess.call([str(PEERS_PYTHON), "-m", "benchmarks.peers", *argv], cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    if not _in_peers_venv():
        print(f"peers: the peers are not installed here and {PEERS_PYTHON} does not exist: {peers_venv.HOW}",
              file=sys.stderr)
        return 2
    sections = args.only or ["feed", "hop", "ws", "backtest"]
    shm = tempfile.mkdtemp(prefix="caerus-peers-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.environ["CAERUS_SHM_DIR"] = shm
    try:
        return _run(args, sections)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _run(args: argparse.Namespace, sections: list[str]) -> int:
    from benchmarks.common import raise_priority
    from benchmarks.peers import frames as frames_mod
    from benchmarks.peers import table

    started = time.time()
    rows: list[table.Row] = []
    # as benchmarks.ipc_hop: a lower nice value (root only) for every section and child alike, so the shared
    # machine's other work disturbs all contenders less
    settings: dict[str, object] = {"quick": args.quick, "nice": raise_priority(-10)}
    if "feed" in sections:
        from benchmarks.peers import feed_decode

        n = 300 if args.quick else 2000
        with tempfile.TemporaryDirectory(prefix="caerus-peers-frames-") as tmp:
            # depth5 comes 10 a second: fewer of them, so a recording stays ~10-30 s
            fr = frames_mod.load(args.frames) if args.frames else frames_mod.record(
                Path(tmp) / "frames.jsonl", n, seed=args.seed, n_depth=n // 10 if args.quick else n // 8)
        rounds = 5 if args.quick else 20
        settings["feed"] = {"binance_frames": len(fr.binance_combined), "hyperliquid_frames": len(fr.hyperliquid),
                            "binance_depth5_frames": len(fr.binance_depth_combined),
                            "rounds": rounds, "source": str(args.frames) if args.frames else "caerus venue-sim"}
        rows += feed_decode.compare(fr, rounds, settings)
    if "hop" in sections:
        from benchmarks.peers import process_hop

        rows += process_hop.compare(quick=args.quick, settings=settings)
    if "ws" in sections:
        from benchmarks.peers import ws_receive

        rows += ws_receive.compare(quick=args.quick, settings=settings)
    if "backtest" in sections:
        from benchmarks.peers import backtest

        recorded = settings.setdefault("protocol", {})
        rows += backtest.rows(args.backtest_json, recorded)  # type: ignore[arg-type]
    gs = table.goals(rows)
    md = (table.markdown(rows) + "\n\n" + table.goals_text(gs) + "\n\nTiming protocol (benchmarks/protocol), as "
          "recorded:\n\n" + table.protocol_text(settings.get("protocol", {})))  # type: ignore[arg-type]
    print(md)
    doc = {"benchmark": "peers", "quick": args.quick, "started": started, "machine": table.machine(),
           "settings": settings, "rows": table.as_json(rows), "goals": gs}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    if not args.no_docs:
        from benchmarks.peers import docs

        docs.write(args.docs, md, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
