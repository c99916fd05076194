"""`caerus data import` stages a big file in pieces and commits each by an INSERT of its own (chDB's memory for an
INSERT grows with the rows it reads): the pieces hold every row once, in order; the store and import.json are what
one piece per file gives; no INSERT reads more than a piece; a commit that fails part way deletes what it stored, so
a file's number never tags rows import.json does not name; a file that fails while being read leaves no piece."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from caerus.capture.store import ChdbStore
from caerus.data.imports import ImportOptions, ImportRefused, hftbacktest, load_meta, run_import, worker
from caerus.data.imports.formats import ReadOptions
from caerus.data.imports.worker import read_file

from .test_data_import_commit import USDM, books, files, steady

PIECE = 150  # rows: the fixtures' files hold a few hundred books each


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(worker, "STAGE_PIECE_ROWS", PIECE)
    return PIECE


def staged(paths: list[str]) -> pa.Table:
    return pa.concat_tables([pa.ipc.open_stream(pa.OSFile(p)).read_all() for p in paths])


def test_the_pieces_hold_every_row_once_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = read_file(str(USDM), "hftbacktest", ReadOptions(), str(tmp_path / "whole.arrows"), None)
    monkeypatch.setattr(worker, "STAGE_PIECE_ROWS", PIECE)
    cut = read_file(str(USDM), "hftbacktest", ReadOptions(), str(tmp_path / "cut.arrows"), None)
    rows = whole.stored_valid + whole.stored_rejected
    assert whole.stage_rows == [rows] and whole.stages == [str(tmp_path / "whole.0.arrows")]
    assert len(cut.stages) == -(-rows // PIECE) > 1
    assert cut.stage_rows == [PIECE] * (len(cut.stages) - 1) + [rows - PIECE * (len(cut.stages) - 1)]
    assert cut.stages == [str(tmp_path / f"cut.{k}.arrows") for k in range(len(cut.stages))]
    assert staged(cut.stages).equals(staged(whole.stages))


def test_files_in_pieces_store_what_one_piece_each_stores(tmp_path: Path, small_pieces: int) -> None:
    fs = files(tmp_path)
    cut = run_import(tmp_path / "cut", fs, ImportOptions(jobs=1), out=None)
    assert cut.ok, cut.errors
    assert max(e["commit_inserts"] for e in cut.entries) > 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(worker, "STAGE_PIECE_ROWS", 1 << 20)
        whole = run_import(tmp_path / "whole", fs, ImportOptions(jobs=1), out=None)
    assert whole.ok, whole.errors
    assert {e["commit_inserts"] for e in whole.entries if e["stored"]["valid"] + e["stored"]["rejected"]} == {1}
    volatile = ("commit_inserts",)
    assert [{k: v for k, v in e.items() if k not in volatile} for e in steady(cut.entries)] == \
        [{k: v for k, v in e.items() if k not in volatile} for e in steady(whole.entries)]
    a, b = books(tmp_path / "cut"), books(tmp_path / "whole")
    assert len(a) == sum(e["stored"]["valid"] + e["stored"]["rejected"] for e in cut.entries) > 0
    pd.testing.assert_frame_equal(a, b)
    assert not list((tmp_path / "cut" / ".import-stage").glob("*"))


def test_no_insert_reads_more_than_a_piece(tmp_path: Path, small_pieces: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    stored: list[int] = []
    query = ChdbStore.query

    def counting(self: ChdbStore, sql: str, fmt: str = "CSV") -> str:
        if not sql.startswith("INSERT INTO caerus.books"):
            return query(self, sql, fmt)
        before = int(query(self, "SELECT count() FROM caerus.books"))
        out = query(self, sql, fmt)
        stored.append(int(query(self, "SELECT count() FROM caerus.books")) - before)
        return out

    monkeypatch.setattr(ChdbStore, "query", counting)
    out = run_import(tmp_path / "s", files(tmp_path), ImportOptions(jobs=1), out=None)
    assert out.ok, out.errors
    total = sum(e["stored"]["valid"] + e["stored"]["rejected"] for e in out.entries)
    assert sum(stored) == total and max(stored) <= small_pieces and len(stored) >= -(-total // small_pieces)


def test_a_commit_failing_part_way_deletes_what_it_stored(tmp_path: Path, small_pieces: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s"
    first = run_import(store, [files(tmp_path)[1]], ImportOptions(jobs=1), out=None)  # Hyperliquid: file 1
    assert first.ok, first.errors
    before = books(store)
    inserts = 0
    query = ChdbStore.query

    def failing(self: ChdbStore, sql: str, fmt: str = "CSV") -> str:
        nonlocal inserts
        if sql.startswith("INSERT INTO caerus.books"):
            inserts += 1
            if inserts == 2:
                raise RuntimeError("disk full (planted)")
        return query(self, sql, fmt)

    monkeypatch.setattr(ChdbStore, "query", failing)
    with pytest.raises(RuntimeError, match="planted"):
        run_import(store, [USDM], ImportOptions(jobs=1), out=None)  # its pieces: the first stored, then a failure
    assert inserts == 2
    monkeypatch.setattr(ChdbStore, "query", query)
    assert [f["n"] for f in load_meta(store)["files"]] == [1]
    # the first piece's rows deleted again (the instrument the file named stays listed, with no rows)
    pd.testing.assert_frame_equal(books(store), before, check_categorical=False)
    assert not list((store / ".import-stage").glob("*"))
    again = run_import(store, [USDM], ImportOptions(jobs=1), out=None)  # file 2 again: only its own rows
    assert again.ok and [e["n"] for e in again.entries] == [2]
    b = books(store)
    assert (b["conn"] == 2).sum() == again.entries[0]["stored"]["valid"] + again.entries[0]["stored"]["rejected"]


def test_a_file_failing_while_read_leaves_no_piece(tmp_path: Path, small_pieces: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hftbacktest, "CHUNK_BYTES", 8 << 10)  # small chunks: pieces are written before the end
    monkeypatch.setattr(hftbacktest, "READ_BYTES", 1 << 10)
    written: list[str] = []
    opened = worker.Staging._next

    def spy(self: worker.Staging) -> None:
        opened(self)
        written.append(self.paths[-1])

    monkeypatch.setattr(worker.Staging, "_next", spy)
    text = gzip.decompress(USDM.read_bytes())
    cut = tmp_path / "truncated.gz"
    cut.write_bytes(gzip.compress(text)[:-40])  # its books read and staged, then the stream ends early
    stage = tmp_path / "stage"
    stage.mkdir()
    with pytest.raises(ImportRefused, match="truncated"):
        read_file(str(cut), "hftbacktest", ReadOptions(), str(stage / "1.arrows"), None)
    assert len(written) > 1  # pieces were on disk when the reading failed
    assert list(stage.iterdir()) == []
