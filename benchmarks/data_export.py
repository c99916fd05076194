"""caerus.data exports: rows/s of ``books`` and ``aligned`` from a chDB store to parquet, for pandas and polars.

A synthetic store with the real capture schema and insert path (BOOK records -> caerus.capture.rows ->
ChdbStore.insert, one insert per 1M rows as capture's flushes leave several parts) holds N book rows of two venues
and four instruments (10^7, quick 10^6). Each export is then timed from the query to the parquet file, in the same
run for:

* ``engine`` (books): what ``caerus data books ... -o x.parquet`` does on a chDB store: chDB reads, sorts, names
  and encodes the file itself in one query (caerus.data.outfile);
* ``stream``: slices read as Arrow batches and written by pyarrow as they come, no DataFrame (``caerus data
  aligned -o``, and books from a ClickHouse server);
* ``pandas`` / ``polars``: the Python API (``caerus.data.books(..., frame=...)``) into one DataFrame, then that
  library's own parquet writer (``DataFrame.to_parquet`` / ``write_parquet``).

In-run references (books): ``read`` and ``read+sort`` are chDB's query alone (FINAL, the same columns, without
and with the receive-order sort) into FORMAT Null: the floor under any export, and, beside ``engine``, where its
time goes. Rounds interleave every way (load that comes and goes hits all alike); the p50 over rounds is printed
with its ratio to ``read+sort``.

Rows/s count output rows (``aligned`` has one row per base-venue book: about half the store). Wall and process
CPU seconds are both printed: the machine is shared, and CPU time shows the work when another process holds a core.

    python -m benchmarks.data_export [--quick] [--rows N] [--repeat K] [--books-only] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import add_common_args, at_least, emit
from caerus import instruments as inst_mod
from caerus.capture import rows
from caerus.capture.store import ChdbStore
from caerus.data import api, export, outfile, read, sql
from caerus.data.engines import ChdbEngine
from caerus.data.source import open_source
from caerus.wire import BOOK, BookFlags

T0 = 1_796_000_000_000_000_000
SYMBOLS = ("BTC", "ETH", "SOL", "XRP")
GOAL_ROWS_PER_S = 2_000_000


def make_store(folder: Path, n: int, seed: int = 1, chunk: int = 1_000_000) -> Path:
    """A session folder with ``n`` synthetic book rows in capture's chDB store (and its instruments.json)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    insts = inst_mod.InstrumentSet([
        inst_mod.Instrument(id=i, name=s, binance_symbol=f"{s}USDT", hl_coin=s, tick_size=0.1, lot_size=0.001,
                            min_qty=0.001, min_notional=5.0, hl_asset=i, sz_decimals=3)
        for i, s in enumerate(SYMBOLS)])
    inst_mod.save(insts, folder / inst_mod.FILE_NAME)
    store = ChdbStore(folder / "capture")
    try:
        for off in range(0, n, chunk):
            m = min(chunk, n - off)
            a = np.zeros(m, dtype=BOOK.dtype)
            a["venue"] = rng.integers(1, 3, m)
            a["flags"] = int(BookFlags.VALID)
            a["symbol"] = rng.integers(0, len(SYMBOLS), m)
            a["conn"] = 1
            a["seq"] = np.arange(off, off + m)
            a["t_recv"] = T0 + a["seq"] * 1_000 + rng.integers(0, 1_000, m)  # ~1M books/s, receive order jittered
            a["t_exchange"] = a["t_recv"] - rng.integers(1_000_000, 20_000_000, m)
            a["t_publish"] = a["t_recv"] + 3_000
            mid = 100.0 + np.cumsum(rng.normal(0, 0.01, m))
            a["bid_px"], a["ask_px"] = mid - 0.05, mid + 0.05
            a["bid_qty"], a["ask_qty"] = rng.random(m), rng.random(m)
            store.insert("books", rows.tables_from("book", a)["books"], "bench")
    finally:
        store.close()
    return folder


def _timed(fn: Callable[[], int]) -> tuple[int, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    n = fn()
    return n, time.perf_counter() - w0, time.process_time() - c0


def export_stream(folder: Path, kind: str, out: Path) -> int:
    """The streamed path: Arrow batches out of chDB, shaped and written by pyarrow (aligned's CLI path, and books'
    from a server or over several sessions)."""
    with open_source(folder) as src:
        sel = read.select(src)
        plan = read.plan_books(src, sel) if kind == "books" else read.plan_aligned(src, sel)
        return export.write_parquet(plan, out)


def export_engine(folder: Path, out: Path) -> int:
    """The engine-written path: chDB reads, sorts, names and encodes the parquet file (books' CLI path on chDB)."""
    with open_source(folder) as src:
        return outfile.books_parquet(src, read.select(src), out)


def engine_reference(folder: Path, ordered: bool) -> int:
    """In-run reference: chDB reading the books' rows (FINAL, the export's columns), ``ordered`` also sorting them
    in receive order, output discarded (FORMAT Null): the floor under any export of these rows from this store."""
    with open_source(folder) as src:
        sel = read.select(src)
        q = sql.books(sel.sessions[0], None, None, None, None)
        if not ordered:
            q = q.split(" ORDER BY ")[0]
        assert isinstance(src.engine, ChdbEngine)
        src.engine.run(q + " FORMAT Null")
        return sum(s.rows for s in read.cut(src, sel, None, 1 << 62)[0])


def export_frame(folder: Path, kind: str, frame: str, out: Path) -> int:
    df = (api.books if kind == "books" else api.aligned)(folder, frame=frame)
    if frame == "pandas":
        df.to_parquet(out, compression=export.PARQUET_COMPRESSION, index=False,
                      use_dictionary=["session", "venue", "symbol", "other_venue"])
    else:
        df.write_parquet(out, compression=export.PARQUET_COMPRESSION)
    return len(df)


REFERENCES = ("read", "read+sort")  # books.<ref>: the engine alone, no file


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--rows", type=int, help="book rows in the store (default 10^7, quick 10^6)")
    p.add_argument("--repeat", type=int, help="rounds (default 3, quick 1); every export once per round, "
                   "interleaved; p50 over rounds reported")
    p.add_argument("--books-only", action="store_true", help="skip the aligned exports")
    a = p.parse_args()
    n = a.rows or (1_000_000 if a.quick else 10_000_000)
    repeat = a.repeat or (1 if a.quick else 3)
    try:
        import polars  # noqa: F401
        libs = ["pandas", "polars"]
    except ModuleNotFoundError:
        libs = ["pandas"]
        print("polars is not installed (pip install 'caerus[research]'): measuring pandas only")
    ways = [("books", w) for w in (*REFERENCES, "engine", "stream", *libs)]
    if not a.books_only:
        ways += [("aligned", w) for w in ("stream", *libs)]
    samples: dict[str, list[tuple[int, float, float]]] = {f"{k}.{w}": [] for k, w in ways}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        t = time.perf_counter()
        folder = make_store(root / "bench", n)
        print(f"store: {n:,} rows written in {time.perf_counter() - t:.1f} s")
        for r in range(repeat):  # rounds interleave the ways: load that comes and goes hits all of them alike
            for kind, way in ways:
                out = root / f"{kind}.{way}.parquet"
                fn: Callable[[], int]
                if way in REFERENCES:
                    fn = lambda o=way == "read+sort": engine_reference(folder, o)  # noqa: E731
                elif way == "engine":
                    fn = lambda o=out: export_engine(folder, o)  # noqa: E731
                elif way == "stream":
                    fn = lambda k=kind, o=out: export_stream(folder, k, o)  # noqa: E731
                else:
                    fn = lambda k=kind, w=way, o=out: export_frame(folder, k, w, o)  # noqa: E731
                got = _timed(fn)
                samples[f"{kind}.{way}"].append(got)
                out.unlink(missing_ok=True)
                print(f"  round {r + 1}: {kind:8} {way:9} wall {got[1]:6.2f} s  cpu {got[2]:6.2f} s", flush=True)
    results: dict[str, dict[str, float]] = {}
    ref_wall = statistics.median(w for _, w, _ in samples["books.read+sort"])
    print(f"p50 over {repeat} round(s); ref = books.read+sort (chDB reading and sorting the rows, no output)")
    for key, runs in samples.items():
        out_rows = runs[0][0]
        wall, cpu = statistics.median(w for _, w, _ in runs), statistics.median(c for _, _, c in runs)
        results[key] = {"rows": out_rows, "wall_s": wall, "cpu_s": cpu, "rows_per_s": out_rows / wall,
                        "rows_per_cpu_s": out_rows / cpu, "wall_vs_ref": wall / ref_wall}
        kind, way = key.split(".", 1)
        print(f"{kind:8} {way:9} {out_rows:>11,} rows  wall {wall:6.2f} s  {out_rows / wall / 1e6:5.2f} M rows/s  "
              f"cpu {cpu:6.2f} s  {out_rows / cpu / 1e6:5.2f} M rows/cpu-s  wall/ref {wall / ref_wall:5.2f}")
    ratios = {f"{k} wall / books.read+sort": v["wall_vs_ref"] for k, v in results.items()}
    for kind in ("books", "aligned"):
        if f"{kind}.polars" in results:
            ratios[f"{kind} polars/pandas rows/s"] = (results[f"{kind}.polars"]["rows_per_s"]
                                                      / results[f"{kind}.pandas"]["rows_per_s"])
    best_books = max(results["books.engine"]["rows_per_s"], results["books.stream"]["rows_per_s"])
    goals = [at_least("books to parquet (caerus data, best path) rows/s", best_books, GOAL_ROWS_PER_S, "rows/s")]
    if "aligned.stream" in results:
        goals.append(at_least("aligned to parquet (stream) rows/s", results["aligned.stream"]["rows_per_s"],
                              GOAL_ROWS_PER_S, "rows/s"))
    emit("data_export", {}, ratios=ratios, goals=goals, quick=a.quick, json_path=a.json,
         extra={"store_rows": n, "repeat": repeat, "results": results})


if __name__ == "__main__":
    main()
