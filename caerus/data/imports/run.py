"""``caerus data import``: files -> readers (one process per file, up to ``jobs`` at once) -> the store, in order.

Files are read in parallel (worker.py; chDB is never opened there) and committed in the order given, several small
files to an INSERT (target.COMMIT_ROWS), so file numbers (``conn``) and import.json do not depend on which worker
finished first. A file that cannot be imported (unknown format, no clock, already imported, a slot clash) is
reported with its reason and the others go on; the command then exits 2. A file is reported imported only once its
rows are in the store. Every file's summary names its true market and where it went.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .formats import FORMATS, ReadOptions, detect, module
from .records import ImportRefused
from .target import COMMIT_ROWS, DEFAULT_SESSION, SLOTS, ImportTarget
from .worker import FileResult, read_file


@dataclass(frozen=True)
class ImportOptions:
    session: str = DEFAULT_SESSION
    slot: str | None = None  # --as: binance|hyperliquid|leader|follower
    instrument: str | None = None
    fmt: str | None = None  # None: detect per file
    product: str | None = None
    symbol: str | None = None
    clock_offset_ms: float | None = None
    provenance: str | None = None
    jobs: int = 0  # 0: one per CPU, at most one per file


@dataclass
class Outcome:
    entries: list[dict[str, Any]]
    errors: list[str]

    @property
    def ok(self) -> bool:
        return not self.errors


def _read_all(args: list[tuple[Any, ...]], jobs: int, target: ImportTarget,
              reader: Callable[..., FileResult]) -> Generator[FileResult | Exception, None, None]:
    """Each file's reading (or why it failed), in the order given, each as soon as it is done: the caller commits
    file k while the reader processes read the files after it."""
    if jobs <= 1 or len(args) <= 1:
        for a in args:
            try:
                yield reader(*a)
            except (ImportRefused, OSError) as exc:
                yield exc
        return
    ctx = _worker_context()
    # the store opens (chDB: ~0.5 s) while the fork server starts and the readers read; its first use waits for it
    opening = threading.Thread(target=target.open, name="import-open-store", daemon=True)
    opening.start()
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures: list[Future[FileResult]] = [pool.submit(reader, *a) for a in args]
            try:
                for f in futures:
                    try:
                        result = f.result()
                    except (ImportRefused, OSError) as exc:
                        yield exc
                    else:
                        opening.join()
                        yield result
            finally:
                pool.shutdown(cancel_futures=True)  # only if stopped early (an error): nothing is left to cancel else
    finally:
        opening.join()


def _worker_context() -> multiprocessing.context.BaseContext:
    """Reader processes forked from a fork server that has imported the readers once (its own clean process: no
    chDB session or threads of the caller's are inherited, as with spawn), instead of each spawned reader importing
    them again. The server starts here, at once: it imports while the caller goes on (opening the store)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["caerus.data.imports.worker", *FORMATS.values()])
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return ctx


def _check(opts: ImportOptions) -> str | None:
    if opts.slot is not None and opts.slot not in SLOTS:
        raise ImportRefused(f"--as {opts.slot!r}: one of {', '.join(SLOTS)}")
    if not opts.session or len(opts.session) > 100:
        raise ImportRefused("--session: give a name of 1-100 characters")
    if opts.instrument is not None and not (opts.instrument.isalnum() and len(opts.instrument) <= 20):
        raise ImportRefused(f"--instrument {opts.instrument!r}: 1-20 letters and digits")
    if opts.fmt is not None:
        module(opts.fmt)
    return SLOTS[opts.slot] if opts.slot is not None else None


def run_import(store: Path, files: Sequence[Path], opts: ImportOptions, out: TextIO | None = None,
               reader: Callable[..., FileResult] = read_file) -> Outcome:
    """Import ``files`` into the capture store at ``store``; prints a summary per file to ``out`` (None: quiet)."""
    slot = _check(opts)
    paths = [Path(f) for f in files]
    errors: list[str] = []
    plan: list[tuple[Path, str]] = []
    for p in paths:
        try:
            if not p.is_file():
                raise ImportRefused(f"{p}: no such file")
            plan.append((p, opts.fmt or detect(p)))
        except (ImportRefused, OSError) as exc:
            errors.append(str(exc))
    target = ImportTarget(store)
    entries: list[dict[str, Any]] = []
    read_opts = ReadOptions(product=opts.product, symbol=opts.symbol)
    results: Generator[FileResult | Exception, None, None] | None = None
    try:
        n0 = target.next_number()
        jobs = opts.jobs or min(len(plan), os.cpu_count() or 1)
        stages = [str(target.stage_path(n0 + k)) for k in range(len(plan))]
        args = [(str(p), fmt, read_opts, stages[k], opts.clock_offset_ms) for k, (p, fmt) in enumerate(plan)]
        results = _read_all(args, jobs, target, reader)
        n = n0
        added: list[dict[str, Any]] = []
        for res in results:
            if isinstance(res, Exception):
                errors.append(str(res))
                continue
            try:
                added.append(target.add(n, res, opts.session, slot, opts.instrument, opts.provenance))
            except ImportRefused as exc:
                errors.append(str(exc))
                continue
            n += 1
            if target.pending_rows >= COMMIT_ROWS:
                _flush(target, added, entries, out)
        _flush(target, added, entries, out)
    finally:
        if results is not None:
            results.close()  # a generator: stops the readers if a commit raised
        target.close()
    if out is not None:
        for e in errors:
            print(f"refused: {e}", file=out)
    return Outcome(entries, errors)


def _flush(target: ImportTarget, added: list[dict[str, Any]], entries: list[dict[str, Any]],
           out: TextIO | None) -> None:
    """Commit the files added (one INSERT), then report each."""
    target.flush()
    entries.extend(added)
    if out is not None:
        for entry in added:
            print(summary(entry), file=out)
    added.clear()


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in d.items()) if d else "none"


def summary(e: dict[str, Any]) -> str:
    """A file's import in a few lines: the true market and where it went, counts, the clock."""
    lines = [f"{e['path']}  [{e['format']}]  file {e['n']}"]
    for m in e["markets"]:
        lines.append(f"  market {m['venue']} {m['product']} {m['symbol']} -> session {e['session']}, slot {m['slot']} "
                     f"({m['role']}), instrument {m['instrument']} (id {m['instrument_id']})")
    lines.append(f"  frames read {e['frames']:,}: {_counts(e['read'])}")
    st = e["stored"]
    lines.append(f"  stored {st['valid'] + st['rejected']:,} book rows (valid {st['valid']:,}, rejected "
                 f"{st['rejected']:,})")
    refused = {k: v for k, v in e["refused"].items() if v}
    lines.append(f"  refused by reason: {_counts(refused)}; dropped (not data): {_counts(e['dropped'])}")
    lines.append(f"  read, not stored by design: {_counts(e['not_stored'])}")
    c = e["clock"]
    if c is None:
        lines.append("  clock: none")
    elif c["source"] == "given":
        lines.append(f"  clock: offset {c['clock_offset_ns'] / 1e6:+,.3f} ms given by --clock-offset-ms")
    else:
        lines.append(f"  clock: t_recv - t_venue median {c['clock_offset_ns'] / 1e6:+,.3f} ms (p5 "
                     f"{c['p5_ns'] / 1e6:+,.3f}, p95 {c['p95_ns'] / 1e6:+,.3f} ms, {c['samples']:,} frames) -> "
                     f"clock_offset_ns {c['clock_offset_ns']}")
    d = {k: v for k, v in e["derived"].items() if v}
    if d:
        lines.append(f"  derived times: {_counts(d)} rows (from the other clock and the offset)")
    return "\n".join(lines)
