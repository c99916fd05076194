"""Writing a plan's batches as they stream in: parquet (row groups of ~1M rows), CSV, or a terminal table.

Nothing holds the whole result: each slice's batches are written before the next slice is queried. Progress
(rows written of the rows planned) goes to stderr with rich, so stdout stays the data when writing CSV there.
"""

from __future__ import annotations

import sys
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
PARQUET_COMPRESSION = "zstd"  # as fast to write as snappy here and smaller


def _progress(plan: Plan, show: bool) -> Iterator[pa.RecordBatch]:
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=not show, transient=False) as bar:
        task = bar.add_task(f"{len(plan.slices)} slice(s)", total=max(plan.rows, 1))
        for batch in plan.batches():
            bar.advance(task, batch.num_rows)
            yield batch


def write_parquet(plan: Plan, path: Path, show_progress: bool = False) -> int:
    """All rows of ``plan`` to ``path`` (one parquet file, row groups of about ROW_GROUP_ROWS)."""
    n = 0
    pending: list[pa.RecordBatch] = []
    held = 0
    with pq.ParquetWriter(path, plan.schema, compression=PARQUET_COMPRESSION) as writer:
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
    console = console or Console()
    view = Table(show_lines=False, header_style="bold")
    for name in tab.column_names:
        view.add_column(name, overflow="fold")
    for row in tab.slice(0, limit).to_pylist():
        view.add_row(*("" if v is None else str(v) for v in row.values()))
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
