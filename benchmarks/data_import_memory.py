"""`caerus data import` of one day-sized file: peak memory with the file staged in pieces (an INSERT each) against
the same import committed in one INSERT, in the same run.

Input: one USD-M capture (``--data``/usdm/btcusdt_20240808.gz, the shared real recording; the 12-second test
fixture when that is absent, said in the output) written ``--copies`` times in a row into one gzip file, each copy's
receive stamps, event and transaction times (``E``, ``T``) and order-book update ids (``u``, ``U``, ``pu``) moved on
past the copy before, so the live checks take the file as one long recording (nothing more is refused than in the
copies themselves). The moves are whole powers of ten larger than the recording's span, so only a number's leading
digits change and a copy is made with ``bytes.replace`` (seconds for millions of frames, not a decode per frame).

Each way imports the file into a fresh store in a fresh process (peak RSS is a process's own), reading it in that
process (one file: no reader processes), so its peak RSS is the reader's and chDB's INSERT together:

* ``pieces``: the import as it is (worker.STAGE_PIECE_ROWS rows per staging file and per INSERT, or
  ``--piece-rows``);
* ``one INSERT``: a piece as big as the file, so its rows go in one INSERT (what the import did before pieces).

Printed per way: frames, stored rows, INSERTs, wall, frames/s, peak RSS; then the ratios pieces / one INSERT of
peak RSS and of wall (the same run, alternating: ``--rounds``).

    python -m benchmarks.data_import_memory [--quick] [--data DIR] [--copies C] [--rounds K] [--piece-rows N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from benchmarks.common import benchmark_parser, emit
from benchmarks.data_import import FIXTURES, SHARED

SOURCE = Path("usdm") / "btcusdt_20240808.gz"
FIXTURE = FIXTURES / "usdm_btcusdt_20240808_12s.gz"
#: JSON keys moved per copy and how many trailing digits of each stay as they are (the move is one unit of the
#: rest): times in ms by 10^6 ms (16.7 min, more than the shared recording's 6 minutes), update ids by 10^10
_KEYS = {b'"E":': 6, b'"T":': 6, b'"u":': 10, b'"U":': 10, b'"pu":': 10}
_STAMP_LOW = 12  # receive stamps (ns, at each line's start) by 10^12 ns: the same 10^6 ms as E and T


def _moved(text: bytes, prefixes: dict[bytes, list[tuple[int, int]]], k: int) -> bytes:
    """``text`` with every number under each key moved by ``k`` units: each distinct leading part (highest first,
    so no number moves twice) replaced by itself plus ``k``."""
    for key, heads in prefixes.items():
        for head, width in sorted(heads, reverse=True):
            text = text.replace(key + str(head).encode(), key + str(head + k).zfill(width).encode())
    return text


def long_recording(src: Path, copies: int, dst: Path) -> int:
    """``src`` written ``copies`` times into ``dst`` (gzip, ISA-L level 1 when installed), each copy moved on past
    the one before; returns the frames written."""
    import gzip

    text = b"\n" + gzip.decompress(src.read_bytes()).rstrip(b"\n") + b"\n"
    prefixes: dict[bytes, list[tuple[int, int]]] = {}
    for key, low in [*_KEYS.items(), (b"\n", _STAMP_LOW)]:
        values = re.findall(re.escape(key) + rb"(\d+)", text)
        widths = {len(v) for v in values}
        if len(widths) > 1 or (widths and min(widths) <= low):
            raise SystemExit(f"{src}: {key!r} values of {sorted(widths)} digits: cannot move them by their head")
        heads = {int(v[:-low]) for v in values}
        prefixes[key] = [(h, len(values[0]) - low) for h in heads] if values else []
    compressor: ModuleType = gzip
    try:
        from isal import igzip

        compressor = igzip
    except ImportError:  # the [research] extra absent: the standard library's (slower, the same format)
        pass
    with open(dst, "wb") as f:
        for k in range(copies):
            f.write(compressor.compress(_moved(text, prefixes, k)[1:], compresslevel=1))
    return copies * text.count(b"\n") - copies


def child(file: Path, store: Path, piece_rows: int) -> dict[str, float]:
    """One import of ``file`` into a new ``store`` in this process: what it stored and its peak RSS."""
    import resource
    import time

    from caerus.data.imports import ImportOptions, run_import, worker

    worker.STAGE_PIECE_ROWS = piece_rows  # this process only (the target groups INSERTs by the same number)
    t0 = time.perf_counter()
    out = run_import(store, [file], ImportOptions(jobs=1), out=None)
    wall = time.perf_counter() - t0
    if not out.ok:
        raise SystemExit(f"import failed: {out.errors}")
    e = out.entries[0]
    return {"frames": e["frames"], "rows": e["stored"]["valid"] + e["stored"]["rejected"],
            "refused": sum(e["refused"].values()), "inserts": e["commit_inserts"], "wall_s": wall,
            "commit_s": e["commit_s"], "commit_cpu_s": e["commit_cpu_s"], "read_cpu_s": e["read_cpu_s"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(file: Path, store: Path, piece_rows: int) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.data_import_memory", "--child", str(file), str(store),
                           str(piece_rows)], capture_output=True, text=True, timeout=3600,
                          cwd=Path(__file__).resolve().parent.parent)
    if proc.returncode != 0:
        raise SystemExit(f"import of {file} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from caerus.data.imports.worker import STAGE_PIECE_ROWS

    p = benchmark_parser(__doc__)
    p.add_argument("--data", type=Path, help="folder of the shared captures (default: ../shared/data/real)")
    p.add_argument("--copies", type=int, default=0, help="copies in the file (default 60: 6 hours; quick 4)")
    p.add_argument("--rounds", type=int, default=0, help="imports of each way, alternating (default 2, quick 1)")
    p.add_argument("--piece-rows", type=int, default=STAGE_PIECE_ROWS, help="rows per piece for the pieces way")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(Path(a.child[0]), Path(a.child[1]), int(a.child[2]))))
        return
    root = a.data or SHARED
    src, what = ((root / SOURCE, f"the real recording {root / SOURCE}") if (root / SOURCE).is_file() else
                 (FIXTURE, f"the test fixture {FIXTURE} ({root / SOURCE} not found: small)"))
    copies = a.copies or (4 if a.quick else 60)
    rounds = a.rounds or (1 if a.quick else 2)
    ways = {"pieces": a.piece_rows, "one INSERT": 1 << 62}
    runs: dict[str, list[dict[str, float]]] = {w: [] for w in ways}
    with tempfile.TemporaryDirectory(prefix="caerus-import-memory-") as d:
        tmp = Path(d)
        big = tmp / "long.gz"
        frames = long_recording(src, copies, big)
        print(f"input: {what} x {copies} copies in a row, {frames:,} frames, {big.stat().st_size / 2**20:,.0f} MiB "
              f"gzip; pieces of {a.piece_rows:,} rows; rounds {rounds}", flush=True)
        for k in range(rounds):
            for way, piece in ways.items():
                r = run_child(big, tmp / f"store-{k}-{len(runs[way])}-{piece}", piece)
                runs[way].append(r)
                print(f"  round {k + 1}: {way:10} {r['frames']:>11,.0f} frames  {r['rows']:>11,.0f} rows stored  "
                      f"{r['refused']:,.0f} refused  {r['inserts']:>3.0f} INSERTs  wall {r['wall_s']:6.2f} s  "
                      f"{r['frames'] / r['wall_s'] / 1e6:5.2f} M frames/s "
                      f"(INSERTs {r['commit_s']:5.2f} s, CPU {r['commit_cpu_s']:5.2f} s)  "
                      f"peak RSS {r['peak_rss_mb']:7,.0f} MB",
                      flush=True)
    results = {way: {"frames": rs[0]["frames"], "rows": rs[0]["rows"], "refused": rs[0]["refused"],
                     "inserts": rs[0]["inserts"], "rounds": len(rs),
                     "wall_s": statistics.median(r["wall_s"] for r in rs),
                     "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs)} for way, rs in runs.items()}
    for way, r in results.items():
        print(f"{way:10} {r['frames']:>11,.0f} frames  {r['rows']:>11,.0f} rows  {r['inserts']:.0f} INSERTs  "
              f"x {r['rounds']} rounds (median): wall {r['wall_s']:6.2f} s, peak RSS {r['peak_rss_mb']:,.0f} MB")
    one, cut = results["one INSERT"], results["pieces"]
    ratios = {"peak RSS pieces / one INSERT": cut["peak_rss_mb"] / one["peak_rss_mb"],
              "wall pieces / one INSERT": cut["wall_s"] / one["wall_s"]}
    emit("data_import_memory", {}, ratios=ratios, quick=a.quick, json_path=a.json,
         extra={"input": what, "copies": copies, "frames": frames, "piece_rows": a.piece_rows, "results": results})


if __name__ == "__main__":
    main()
