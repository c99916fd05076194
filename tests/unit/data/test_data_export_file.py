"""The export's cheap paths change nothing in the file: chDB's chunks read without a copy give the batches the
copying read gave (values and order, on a real chDB store of several engine blocks, read after the stream closed
and chDB ran other queries), the parquet file's statistics still prune a ``t_recv`` filter to the right rows, and
the ``*_ts`` columns hold the ns times (``t_wire_ts`` null for 0)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from benchmarks.data_export import make_store
from caerus.data import export, frames, read, sql
from caerus.data.engines import ChdbEngine, _cast, _chunk_buffer
from caerus.data.source import open_source
from tests.fixtures.data_books import HAND, write_session

ROWS = 300_000  # several engine blocks (chunks) per query, in three inserts (three parts)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("chunks") / "bench", ROWS, chunk=100_000)


def _copied_batches(engine: ChdbEngine, q: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The read before zero-copy: every chunk's bytes copied out of chDB, then read as an Arrow IPC file."""
    stream = engine._session.send_query(q, "Arrow")
    try:
        while (chunk := stream.fetch()) is not None:
            data = chunk.bytes()
            if data:
                reader = pa.ipc.open_file(pa.py_buffer(data))
                for i in range(reader.num_record_batches):
                    yield _cast(reader.get_batch(i), schema)
    finally:
        stream.close()


@pytest.mark.slow
def test_zero_copy_chunks_equal_the_copied_read(store: Path) -> None:
    with open_source(store) as src:
        engine = src.engine
        assert isinstance(engine, ChdbEngine)
        q = sql.books("bench", None, None, None, None)
        held = list(engine.batches(q, frames.BOOKS_RAW))  # the stream is closed once this returns
        assert len(held) > 1  # several chunks, each its own buffer
        gc.collect()
        want = pa.Table.from_batches(list(_copied_batches(engine, q, frames.BOOKS_RAW)), frames.BOOKS_RAW)
        for _ in range(3):  # results as big as the chunks': chDB reuses any chunk memory that was freed
            engine._session.query("SELECT number + 7, toString(number) FROM numbers(3000000)", "Arrow")
    got = pa.Table.from_batches(held, frames.BOOKS_RAW)
    assert got.num_rows == ROWS
    assert got.equals(want)  # values and order
    t = got.column("t_recv").to_numpy()
    assert (np.diff(t) >= 0).all()  # receive order


def test_batches_point_into_the_chunk(store: Path) -> None:
    """No copy at all: chDB's Arrow chunks come uncompressed (ChdbEngine sets it for its session), so every
    buffer of a batch, after the cast to the caller's schema, lies inside the chunk's own memory."""
    with open_source(store) as src:
        assert isinstance(src.engine, ChdbEngine)
        stream = src.engine._session.send_query(sql.books("bench", None, None, None, None), "Arrow")
        try:
            buf = _chunk_buffer(stream.fetch())
            batch = _cast(pa.ipc.open_file(buf).get_batch(0), frames.BOOKS_RAW)
        finally:
            stream.close()
    assert batch.num_rows > 0 and batch.schema.equals(frames.BOOKS_RAW)
    inside = [buf.address <= b.address < buf.address + buf.size
              for col in batch.columns for b in col.buffers() if b is not None]
    assert len(inside) == len(frames.BOOKS_RAW) and all(inside)


def test_exported_file_equals_the_api_table_and_prunes_on_t_recv(store: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "ROW_GROUP_ROWS", 50_000)  # several row groups from 3 * 10^5 rows
    out = tmp_path / "books.parquet"
    with open_source(store) as src:
        n = export.write_parquet(read.plan_books(src, read.select(src)), out)
        want = pa.Table.from_batches(list(read.plan_books(src, read.select(src)).batches()))
    assert n == ROWS
    got = pq.read_table(out)
    assert got.schema.names == want.schema.names
    assert got.cast(want.schema).equals(want.combine_chunks().unify_dictionaries().cast(want.schema))

    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups > 1
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    with_stats = {names[i] for i in range(meta.num_columns) if meta.row_group(0).column(i).is_stats_set}
    assert with_stats == set(export.STATISTICS_COLUMNS)
    # a filter on t_recv inside the last row group: the reader skips the others by their statistics, and the
    # rows it returns are exactly the rows in the range
    last = meta.row_group(meta.num_row_groups - 1).column(names.index("t_recv")).statistics
    lo, hi = last.min + 10_000, last.min + 50_000_000
    fragment = next(iter(pads.dataset(out).get_fragments()))
    kept = fragment.split_by_row_group(filter=(pc.field("t_recv") >= lo) & (pc.field("t_recv") < hi))
    assert [rg.id for f in kept for rg in f.row_groups] == [meta.num_row_groups - 1]
    filtered = pq.read_table(out, filters=[("t_recv", ">=", lo), ("t_recv", "<", hi)])
    t = got.column("t_recv")
    mask = pc.and_(pc.greater_equal(t, lo), pc.less(t, hi))
    assert 0 < filtered.num_rows == pc.sum(mask).as_py()
    assert filtered.column("seq").equals(got.filter(mask).column("seq"))


def test_timestamps_are_the_ns_times(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "S")
    out = tmp_path / "books.parquet"
    with open_source(folder) as src:
        export.write_parquet(read.plan_books(src, read.select(src)), out)
    got = pq.read_table(out)
    assert got.num_rows == len(HAND)
    for c in sql.TIME_COLUMNS:
        ts = got.column(f"{c}_ts")
        assert ts.type == frames.TS
        ns = got.column(c).to_pylist()
        want = [None if c == "t_wire" and v == 0 else v for v in ns]
        assert ts.cast(pa.int64()).to_pylist() == want
    wire = got.column("t_wire").to_pylist()
    assert 0 in wire and any(v != 0 for v in wire)  # both cases present: null and a time
