"""Books to parquet written by the engine itself: chDB reads, names, sorts and encodes the rows in one query
(``INTO OUTFILE ... FORMAT Parquet``), with no Arrow batch crossing into Python.

The file holds what caerus.data.export.write_parquet writes from the same selection, row for row and column for
column (sql.books_named makes the names and ``*_ts`` timestamps in SQL; read it back with
``read_dictionary=["session", "venue", "symbol"]`` for the same dictionary columns). Measured on 10^7 book rows
(benchmarks/data_export.py, p50 of 3 interleaved rounds): 1.40 M rows/s against the streamed path's 1.65 and
10.0 against 9.3 CPU-s, chDB's parquet encoder costing what the copy out of chDB, the Python-side shaping and
pyarrow's encoder cost together, so ``caerus data`` uses it only when asked (``--engine-parquet``); at 10^6
rows it was ahead (1.17 against 0.63 M rows/s). ClickHouse writes a bloom filter, dictionary
and page index for every column by default (more CPU than the read and the sort), so they are off;
session/venue/symbol are then plain strings in the file (snappy makes them small), categorical again
with ``read_dictionary``. Only chDB, one session at a time: Debian's 18.16 server has no Parquet output, so a
server source, like a request over several sessions, keeps the streamed path (:func:`possible`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from rich.console import Console

from caerus.capture.rows import VENUE_NAMES

from . import frames, sql
from .engines import ChdbEngine
from .read import Selection, cut
from .source import Source

ROW_GROUP_ROWS = 1 << 20
SORT_SPILL_BYTES = 1 << 30  # the whole selection is sorted in one query: beyond this it spills to disk
SETTINGS: dict[str, str | int] = {
    "output_format_parquet_compression_method": "snappy",  # as the stream path (export.PARQUET_COMPRESSION)
    # ClickHouse's defaults write a bloom filter, a dictionary attempt and a page index for every column: on 10^7
    # book rows they cost more CPU than reading and sorting the rows; the stream path writes none of them either.
    "output_format_parquet_write_bloom_filter": 0,
    "output_format_parquet_max_dictionary_size": 0,
    "output_format_parquet_write_page_index": 0,
    "output_format_parquet_row_group_size": ROW_GROUP_ROWS,
    "max_bytes_before_external_sort": SORT_SPILL_BYTES,
}
DICTIONARY_COLUMNS = ["session", "venue", "symbol"]


def possible(src: Source, sel: Selection) -> bool:
    """The engine can write this selection's books: a chDB store and one session (several stream instead)."""
    return isinstance(src.engine, ChdbEngine) and len(sel.sessions) == 1


def books_parquet(src: Source, sel: Selection, path: Path, show_progress: bool = False) -> int:
    """caerus.data.books' rows of ``sel`` to ``path`` as parquet, written by chDB; the rows written."""
    if not isinstance(src.engine, ChdbEngine):
        raise TypeError("books_parquet needs a chDB source (outfile.possible)")
    slices, top = cut(src, sel, sel.venues, 1 << 62)  # one slice per session: its row count and top symbol id
    rows = sum(s.rows for s in slices)
    venue_names = [VENUE_NAMES.get(i, f"#{i}") for i in range(max(VENUE_NAMES) + 1)]
    symbol_names = frames.symbol_names(src.instruments, top).to_pylist()
    q = sql.books_named(sel.sessions[0], sel.venues, sel.symbol_ids, sel.start, sel.end, venue_names, symbol_names)
    settings = {**sql.BOOKS_NAMED_SETTINGS, **SETTINGS}  # the query's own and the output's, one clause
    console = Console(stderr=True)
    if show_progress:
        with console.status(f"chDB writing {rows:,} rows to {path}"):
            src.engine.write_file(q, path.resolve(), "Parquet", settings)
    else:
        src.engine.write_file(q, path.resolve(), "Parquet", settings)
    return int(pq.ParquetFile(path).metadata.num_rows)
