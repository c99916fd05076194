"""`caerus data import` throughput: frames/s reading real captures into a capture store, against the raw
decompress-and-split rate of the same files in the same run.

Input: the shared real captures (hftbacktest's recordings: ``--data``, default ``../shared/data/real`` beside the
repository; the test fixtures cut from them when that folder is absent, said in the output), each written
``--copies`` times with its receive stamps shifted by a day per copy (frames unchanged; distinct files, as a month
of daily files is): the real files are minutes long, and a store's fixed costs (reader processes starting, chDB
opening) would otherwise be most of what is timed. Each round measures, on the same files:

* ``gunzip+split`` (reference): inflate (the import's own inflater) and split into lines, nothing else: the floor
  under any reader of these files in this process;
* ``read+check``: one process running the import's worker over every file (live decoders, live checks, staging
  rows): frames per second of wall and of CPU;
* ``import``: the whole ``caerus data import`` command into a fresh store with ``--jobs`` reader processes (default:
  one per CPU), run as a user runs it, a new process each time (``python -m caerus data import``): the interpreter
  starting, the command's imports, chDB loading and opening, the reader processes starting, the reading and the
  commits into chDB: frames/s of wall time, the number the 1M frames/s goal is about. Beside it, where its CPU went
  (the readers' CPU per frame, chDB's INSERT per stored row, from the command's ``--json`` records ``read_cpu_s`` and
  ``commit_cpu_s``), the rate that CPU allows on ``--jobs`` free cores, and ``startup``: the same command on two
  small fixture files, the fixed part of every import;
* ``import, steady``: per round, (import frames - startup frames) / (import wall - startup wall): the rate of the
  part of an import that grows with its size, start-up costs taken out. A month of one symbol (~700M frames) is
  this rate: its fixed ~1 s is nothing beside it. Both imports are new commands, so both pay the same one-time costs
  (run inside this benchmark's process, only the first round's import paid for loading chDB, and that round's steady
  rate came out 0.1-0.15 M/s low).

Wall and CPU are both printed, each with its frames and the number of rounds: the machine is shared, and CPU seconds
show the work when another process holds a core. The goal (>= 1M frames/s) is reported met or missed for the whole
import (cold start included) and for the steady rate, with the same-run reference (gunzip+split on one core) beside
them as ratios.

    python -m benchmarks.data_import [--quick] [--data DIR] [--copies C] [--rounds K] [--jobs N] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import at_least, benchmark_parser, emit
from caerus.data.imports import compressed
from caerus.data.imports.formats import ReadOptions
from caerus.data.imports.worker import read_file, remove_stages

REPO = Path(__file__).resolve().parent.parent
# the shared folder sits beside the repository (a worktree one level further down finds it too)
SHARED = next((d / "shared" / "data" / "real" for d in REPO.parents if (d / "shared" / "data" / "real").is_dir()),
              REPO.parent / "shared" / "data" / "real")
FIXTURES = REPO / "tests" / "fixtures" / "data" / "real"
GOAL_FRAMES_PER_S = 1_000_000
#: the measures that run ``caerus data import`` as a command (a child process): this process's CPU means nothing there
COMMANDS = ("import", "startup")
QUICK_FILES = ("usdm/btcusdt_20240808.gz", "cm/btcusd_perp_20240808.gz", "spot/btcusdt_20240808.gz")


def inputs(data: Path | None, quick: bool) -> tuple[list[Path], str]:
    root = data or SHARED
    if root.is_dir():
        files = sorted(root.glob("*/*.gz"))
        if quick:
            files = [root / q for q in QUICK_FILES if (root / q).is_file()] or files[:3]
        return files, f"real captures in {root}"
    files = sorted(FIXTURES.glob("*_head.gz")) + sorted(FIXTURES.glob("hyperliquid_btcusd_*.gz"))
    return files, f"test fixtures in {FIXTURES} ({root} not found: small, numbers mostly overhead)"


DAY_NS = 86_400 * 10 ** 9


def make_copies(files: list[Path], copies: int, tmp: Path) -> list[Path]:
    """Each file ``copies`` times, receive stamps shifted by k days (gzip level 1: setup, not timed)."""
    import gzip

    out = []
    for f in files:
        lines = gzip.decompress(f.read_bytes()).split(b"\n")
        for k in range(copies):
            shifted = b"\n".join(b"%d %s" % (int(ts) + k * DAY_NS, rest) for ts, _, rest in
                                 (ln.partition(b" ") for ln in lines if ln)) + b"\n"
            dst = tmp / f"{f.parent.name}_{f.stem}_copy{k}.gz"
            dst.write_bytes(gzip.compress(shifted, compresslevel=1))
            out.append(dst)
    return out


def _timed(fn: object) -> tuple[int, float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    n = fn()  # type: ignore[operator]
    return int(n), time.perf_counter() - t0, time.process_time() - c0


def gunzip_split(files: list[Path]) -> int:
    n = 0
    for f in files:
        for text in compressed.text_chunks(f):
            n += len(text.split(b"\n")) - (1 if text.endswith(b"\n") else 0)
    return n


def read_check(files: list[Path], tmp: Path) -> int:
    n = 0
    for i, f in enumerate(files):
        r = read_file(str(f), "hftbacktest", ReadOptions(), str(tmp / f"bench{i}.arrows"), None)
        remove_stages(r.stages)
        n += r.frames
    return n


def whole_import(files: list[Path], tmp: Path, jobs: int, k: int, cost: dict[str, float] | None = None) -> int:
    """One ``caerus data import`` command of ``files`` into a fresh store, a new process as a user runs it (wall
    timed by the caller); its ``--json`` records give the frames and, into ``cost``, where the CPU went."""
    store, records = tmp / f"store{k}", tmp / f"import{k}.json"
    cmd = [sys.executable, "-m", "caerus", "data", "import", str(store), *map(str, files), "--jobs", str(jobs),
           "--json", str(records)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's caerus, whatever the venv has installed
    done = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"import failed (exit {done.returncode}): {done.stderr[-2000:]}")
    entries = json.loads(records.read_text())["files"]
    if cost is not None:
        cost["read_cpu_s"] = sum(float(e["read_cpu_s"]) for e in entries)
        cost["commit_cpu_s"] = sum(float(e["commit_cpu_s"]) for e in entries)
        cost["commit_s"] = sum(float(e["commit_s"]) for e in entries)
        cost["rows"] = sum(int(e["stored"]["valid"]) + int(e["stored"]["rejected"]) for e in entries)
    return sum(int(e["frames"]) for e in entries)


def main(argv: list[str] | None = None) -> None:
    p = benchmark_parser(__doc__)
    p.add_argument("--data", type=Path, help="folder of hftbacktest-format captures (default: ../shared/data/real)")
    p.add_argument("--copies", type=int, default=0, help="copies of each file (default 4, quick 3)")
    p.add_argument("--rounds", type=int, default=0, help="rounds (default 3, quick 3: a round is seconds)")
    p.add_argument("--jobs", type=int, default=0, help="reader processes for the whole import (default: CPUs)")
    a = p.parse_args(argv)
    originals, what = inputs(a.data, a.quick)
    rounds = a.rounds or 3
    copies = a.copies or (3 if a.quick else 4)
    jobs = a.jobs or (os.cpu_count() or 1)
    samples: dict[str, list[tuple[int, float, float]]] = {"gunzip+split": [], "read+check": [], "import": [],
                                                          "startup": []}
    costs: list[dict[str, float]] = []
    small = sorted(FIXTURES.glob("*_head.gz"))[:2]  # two small files: what every import pays whatever its size
    with tempfile.TemporaryDirectory(prefix="caerus-import-bench-") as d:
        tmp = Path(d)
        files = make_copies(originals, copies, tmp)
        print(f"input: {len(originals)} files x {copies} copies, {what}; gzip inflater: {compressed.GZIP_LIBRARY}; "
              f"rounds {rounds}; import --jobs {jobs}; load average {os.getloadavg()[0]:.1f}", flush=True)
        for k in range(rounds):  # interleaved: load that comes and goes hits every way alike
            samples["gunzip+split"].append(_timed(lambda: gunzip_split(files)))
            samples["read+check"].append(_timed(lambda: read_check(files, tmp)))
            cost: dict[str, float] = {}
            samples["import"].append(_timed(lambda k=k, cost=cost: whole_import(files, tmp, jobs, k, cost)))
            costs.append(cost)
            samples["startup"].append(_timed(lambda k=k: whole_import(small, tmp, jobs, 1000 + k)))
            for name, runs in samples.items():
                n, w, c = runs[-1]
                cpu_text = "cpu: the command's, below" if name in COMMANDS else f"cpu(this process) {c:6.2f} s"
                print(f"  round {k + 1}: {name:13} {n:>9,} frames  wall {w:6.2f} s  {cpu_text}",
                      flush=True)
    results: dict[str, dict[str, float]] = {}
    for name, runs in samples.items():
        n = runs[0][0]
        wall = statistics.median(w for _, w, _ in runs)
        results[name] = {"frames": n, "rounds": len(runs), "wall_s": wall, "frames_per_s": n / wall}
        if name in COMMANDS:  # this process only waited: the command's CPU is in ``cost`` (its --json records)
            cpu_note = "(a new `caerus data import` process: its CPU is not this process's)"
        else:
            cpu = statistics.median(c for _, _, c in runs)
            results[name] |= {"cpu_s": cpu, "frames_per_cpu_s": n / cpu if cpu else float("nan")}
            cpu_note = f"{n / cpu / 1e6:5.2f} M/cpu-s"
        print(f"{name:15} {n:>9,} frames x {len(runs)} rounds  wall {wall:6.2f} s (median)  "
              f"{n / wall / 1e6:5.2f} M frames/s  {cpu_note}")
    steady = statistics.median((ni - ns) / max(wi - ws, 1e-9) for (ni, wi, _), (ns, ws, _) in
                               zip(samples["import"], samples["startup"], strict=True))
    results["import, steady"] = {"frames": results["import"]["frames"] - results["startup"]["frames"],
                                 "rounds": rounds, "frames_per_s": steady}
    print(f"{'import, steady':15} {results['import, steady']['frames']:>9,} frames x {rounds} rounds  "
          f"{steady / 1e6:5.2f} M frames/s  ((import - startup) frames / (import - startup) wall, median of rounds)")
    n_imp = results["import"]["frames"]
    cost = {k: statistics.median(c[k] for c in costs) for k in costs[0]}
    read_us = cost["read_cpu_s"] / n_imp * 1e6
    commit_us_row = cost["commit_cpu_s"] / max(cost["rows"], 1) * 1e6
    total_us = (cost["read_cpu_s"] + cost["commit_cpu_s"]) / n_imp * 1e6
    results["import"] |= {"read_cpu_us_per_frame": read_us, "commit_cpu_us_per_row": commit_us_row,
                          "commit_wall_s": cost["commit_s"], "rows": cost["rows"],
                          "cpu_us_per_frame": total_us, "cpu_bound_frames_per_s": jobs / total_us * 1e6,
                          "startup_wall_s": results["startup"]["wall_s"]}
    print(f"import CPU: readers {read_us:.2f} us/frame, chDB INSERT {commit_us_row:.2f} us/stored row "
          f"({cost['rows']:,.0f} rows, {cost['commit_s']:.2f} s wall), together {total_us:.2f} us/frame: "
          f"{jobs / total_us:.2f} M frames/s on {jobs} free cores; startup (a small file) "
          f"{results['startup']['wall_s']:.2f} s wall", flush=True)
    ref = results["gunzip+split"]["frames_per_s"]
    ratios = {"read+check / gunzip+split frames/s": results["read+check"]["frames_per_s"] / ref,
              "import / gunzip+split frames/s": results["import"]["frames_per_s"] / ref,
              "import, steady / gunzip+split frames/s": steady / ref,
              "import / read+check frames/s": results["import"]["frames_per_s"] / results["read+check"]["frames_per_s"]}
    goals = [at_least("caerus data import frames/s (wall, whole import, cold start included)",
                      results["import"]["frames_per_s"], GOAL_FRAMES_PER_S, "frames/s"),
             at_least("caerus data import frames/s (wall, steady: start-up taken out)", steady, GOAL_FRAMES_PER_S,
                      "frames/s")]
    emit("data_import", {}, ratios=ratios, goals=goals, quick=a.quick, json_path=a.json,
         extra={"input": what, "files": [str(f) for f in originals], "copies": copies, "jobs": jobs, "rounds": rounds,
                "gzip": compressed.GZIP_LIBRARY, "results": results})


if __name__ == "__main__":
    main()
