"""Writing a plan's batches as they stream in: parquet (row groups of ~1M rows), CSV, or a terminal table.

Nothing holds the whole result: each slice's batches are written before the next slice is queried. Progress
(rows written of the rows planned) goes to stderr with rich, so stdout stays the data when writing CSV there.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .read import Plan

FORMATS = ("parquet", "csv", "table")
ROW_GROUP_ROWS = 1 << 20
# Measured on 10^7 book rows (benchmarks/data_export.py): snappy, with parquet's dictionary encoding only for the
# categorical columns (trying it on prices and times cost more CPU than the engine's read), writes ~4x faster
# than zstd with dictionaries everywhere.
PARQUET_COMPRESSION = "snappy"
# Parquet min/max statistics only where a reader prunes row groups by them: the receive time (the file's order, so
# each row group covers its own span of it; the timestamp too, for a reader filtering on that), seq and the
# instrument id. Statistics on every column cost ~0.4 CPU-s per 10^7 book rows (measured) for nothing: prices,
# sizes and the other times are unordered within a row group.
STATISTICS_COLUMNS = ("t_recv", "t_recv_ts", "seq", "symbol_id")
PREFETCH_BATCHES = 4  # batches read ahead while the previous ones are written (the engine and the writer overlap)
_DONE = object()


def prefetched(plan: Plan, depth: int = PREFETCH_BATCHES, stall_s: float = 600.0) -> Iterator[pa.RecordBatch]:
    """``plan.batches()`` read by a thread ``depth`` batches ahead: the engine's query and the writer's encoding
    both release the GIL, so on two cores they overlap. A batch that takes longer than ``stall_s`` to come is an
    error (every wait bounded); an error in the reader is raised here."""
    q: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in plan.batches():
                if not put(batch):
                    return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    reader = threading.Thread(target=produce, name="caerus-data-reader", daemon=True)
    reader.start()
    try:
        while True:
            try:
                item = q.get(timeout=stall_s)
            except queue.Empty:
                raise TimeoutError(f"no rows from the source for {stall_s:.0f} s") from None
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, pa.RecordBatch)
            yield item
    finally:
        stop.set()
        reader.join(timeout=stall_s)


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if pa.types.is_dictionary(f.type)]


def _progress(plan: Plan, show: bool) -> Iterator[pa.RecordBatch]:
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=not show, transient=False) as bar:
        task = bar.add_task(f"{len(plan.slices)} slice(s)", total=max(plan.rows, 1))
        for batch in prefetched(plan):
            bar.advance(task, batch.num_rows)
            yield batch


def write_parquet(plan: Plan, path: Path, show_progress: bool = False) -> int:
    """All rows of ``plan`` to ``path`` (one parquet file, row groups of about ROW_GROUP_ROWS)."""
    n = 0
    pending: list[pa.RecordBatch] = []
    held = 0
    with pq.ParquetWriter(path, plan.schema, compression=PARQUET_COMPRESSION,
                          use_dictionary=_dictionary_columns(plan.schema),
                          write_statistics=[c for c in STATISTICS_COLUMNS if c in plan.schema.names]) as writer:
        for batch in _progress(plan, show_progress):
            pending.append(batch)
            held += batch.num_rows
            if held >= ROW_GROUP_ROWS:
                writer.write_table(pa.Table.from_batches(pending, plan.schema), row_group_size=held)
                n, pending, held = n + held, [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending, plan.schema), row_group_size=held)
            n += held
    return n


def _plain(schema: pa.Schema) -> pa.Schema:
    """Dictionary columns as plain strings (what a CSV reader expects)."""
    return pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema])


def write_csv(plan: Plan, out: BinaryIO | Path, show_progress: bool = False) -> int:
    """All rows of ``plan`` as CSV with a header line; times as ISO 8601, nulls as empty fields."""
    schema = _plain(plan.schema)
    n = 0
    sink = pa.OSFile(str(out), "wb") if isinstance(out, Path) else out
    try:
        with pacsv.CSVWriter(sink, schema) as writer:
            for batch in _progress(plan, show_progress):
                writer.write_batch(batch.cast(schema))
                n += batch.num_rows
    finally:
        if isinstance(out, Path):
            sink.close()
    return n


def print_table(tab: pa.Table, limit: int, console: Console | None = None) -> None:
    """The first ``limit`` rows of ``tab`` as a terminal table, and how many rows were left out."""
    # Wide and unwrapped: a book row has 20-37 columns; a pager or a wide terminal shows them, wrapping would not.
    rows = [["" if v is None else str(v) for v in row.values()] for row in tab.slice(0, limit).to_pylist()]
    need = sum(max([len(name), *(len(r[i]) for r in rows)]) + 3 for i, name in enumerate(tab.column_names))
    console = console or Console(width=max(Console().width, need + 1))
    view = Table(show_lines=False, header_style="bold")
    for name in tab.column_names:
        view.add_column(name, no_wrap=True)
    for r in rows:
        view.add_row(*r)
    console.print(view)
    if tab.num_rows > limit:
        console.print(f"... {tab.num_rows - limit} more rows (of {tab.num_rows}); write them with -o FILE")


def head(plan: Plan, limit: int) -> tuple[pa.Table, int]:
    """The first ``limit`` rows and the planned total (stops reading once it has them)."""
    got: list[pa.RecordBatch] = []
    held = 0
    for batch in plan.batches():
        got.append(batch)
        held += batch.num_rows
        if held >= limit:
            break
    tab = pa.Table.from_batches(got, plan.schema) if got else plan.schema.empty_table()
    return tab.slice(0, limit), plan.rows


def stdout_binary() -> BinaryIO:
    return sys.stdout.buffer
