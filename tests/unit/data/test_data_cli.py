"""`caerus data`: parquet and CSV files that read back equal to the API's frames, the table view, and errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from caerus import data
from caerus.cli import main
from caerus.data import export, outfile, read
from caerus.data.source import open_source
from tests.fixtures.data_books import HAND, T, write_session


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_session(tmp_path_factory.mktemp("cli") / "S")


@pytest.mark.parametrize("kind", ["books", "aligned"])
def test_parquet_reads_back_equal(folder: Path, tmp_path: Path, kind: str) -> None:
    out = tmp_path / f"{kind}.parquet"
    assert main(["data", kind, str(folder), "-o", str(out), "--slice-rows", "3", "--no-progress"]) == 0
    got = pq.read_table(out)
    want = (data.books if kind == "books" else data.aligned)(folder, frame="arrow")
    assert got.num_rows == want.num_rows == (len(HAND) if kind == "books" else 8)
    _assert_same_rows(got, want)


def _read_back(path: Path) -> pa.Table:
    return pq.read_table(path, read_dictionary=outfile.DICTIONARY_COLUMNS)


def _values(tab: pa.Table) -> pa.Table:
    """``tab`` with categorical columns as plain strings and every field nullable: the rows, not the encoding."""
    plain = pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                       for f in tab.schema])
    return tab.cast(plain).combine_chunks()


def _assert_same_rows(got: pa.Table, want: pa.Table) -> None:
    """Equal column names, order, types (categoricals as strings) and values, NaN equal to NaN."""
    pd.testing.assert_frame_equal(_values(got).to_pandas(), _values(want).to_pandas())


@pytest.mark.parametrize("request_", [
    {},
    {"symbols": "ETH,SOL"},
    {"venues": ("hyperliquid",)},
    {"symbols": "BTC", "start": T + 100, "end": T + 700},
])
def test_engine_written_parquet_equals_the_streamed_file(folder: Path, tmp_path: Path,
                                                         request_: dict[str, object]) -> None:
    """chDB's own parquet (outfile) holds the rows and columns that export.write_parquet writes from the
    DataFrame path's batches: same values, order, names, dictionaries, timestamps and null t_wire_ts."""
    with open_source(folder) as src:
        sel = read.select(src, None, request_.get("symbols"), request_.get("start"), request_.get("end"),
                          request_.get("venues"))  # type: ignore[arg-type]
        assert outfile.possible(src, sel)
        n_engine = outfile.books_parquet(src, sel, tmp_path / "engine.parquet")
        n_stream = export.write_parquet(read.plan_books(src, sel, 2), tmp_path / "stream.parquet")
    engine, stream = _read_back(tmp_path / "engine.parquet"), _read_back(tmp_path / "stream.parquet")
    assert n_engine == n_stream == engine.num_rows > 0
    assert engine.column_names == stream.column_names
    _assert_same_rows(engine, stream)
    assert engine.schema.field("symbol").type == stream.schema.field("symbol").type  # categorical both
    assert engine.column("t_wire_ts").null_count == stream.column("t_wire_ts").null_count > 0


def test_cli_books_parquet_is_engine_written(folder: Path, tmp_path: Path) -> None:
    """`caerus data books -o x.parquet --engine-parquet` on a chDB store takes the engine path (ClickHouse's
    writer names itself in the file's created_by; without the flag pyarrow's), and its rows equal data.books'."""
    out, plain = tmp_path / "b.parquet", tmp_path / "plain.parquet"
    assert main(["data", "books", str(folder), "--symbols", "BTC,ETH", "-o", str(out), "--no-progress",
                 "--engine-parquet"]) == 0
    assert main(["data", "books", str(folder), "--symbols", "BTC,ETH", "-o", str(plain), "--no-progress"]) == 0
    assert "ClickHouse" in pq.ParquetFile(out).metadata.created_by
    assert "ClickHouse" not in pq.ParquetFile(plain).metadata.created_by
    want = data.books(folder, ["BTC", "ETH"], frame="arrow")
    _assert_same_rows(_read_back(out), want)


@pytest.mark.parametrize("session", ["x SETTINGS y", "a' SETTINGS b\\ SETTINGS c"])
def test_a_session_named_with_settings_exports_through_the_engine(tmp_path: Path, session: str) -> None:
    """Issue 44: write_file cut the query at its first " SETTINGS ", which a session name (a string literal in
    the query) may hold: the output path then landed in bare SQL and the export failed. The statement is now
    composed from its parts."""
    folder = write_session(tmp_path / "S", session=session)
    out = tmp_path / "b.parquet"
    assert main(["data", "books", str(folder), "-o", str(out), "--no-progress", "--engine-parquet"]) == 0
    assert "ClickHouse" in pq.ParquetFile(out).metadata.created_by  # the engine wrote it
    got = _read_back(out)
    assert set(got.column("session").to_pylist()) == {session}
    _assert_same_rows(got, data.books(folder, frame="arrow"))


def test_csv_reads_back_equal(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "books.csv"
    assert main(["data", "books", str(folder), "--symbols", "BTC,ETH", "-o", str(out), "--no-progress"]) == 0
    got = pd.read_csv(out)
    want = data.books(folder, ["BTC", "ETH"])
    assert list(got.columns) == list(want.columns)
    for col in ("seq", "t_recv", "t_wire", "flags", "bid_px", "ask_px"):
        pd.testing.assert_series_equal(got[col], want[col], check_names=False, check_dtype=False)  # NaN too
    assert got["symbol"].tolist() == want["symbol"].astype(str).tolist()
    assert (pd.to_datetime(got["t_recv_ts"]) == want["t_recv_ts"]).all()


def test_sessions_and_table_view(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "sessions", str(folder)]) == 0
    assert "hyperliquid" in capsys.readouterr().out
    out = tmp_path / "s.parquet"
    assert main(["data", "sessions", str(folder), "-o", str(out)]) == 0
    assert pq.read_table(out).num_rows == 5
    capsys.readouterr()
    assert main(["data", "aligned", str(folder), "--limit", "2"]) == 0
    shown = capsys.readouterr()
    assert "hyperliquid" in shown.out and "BTC" in shown.out and "ETH" not in shown.out  # the first 2 rows only


def test_bad_input_is_one_line_and_exit_2(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "books", str(folder), "--symbols", "DOGE"]) == 2
    assert capsys.readouterr().err.strip() == "caerus data: symbol 'DOGE' not in session S (has BTC, ETH, SOL)"
    assert main(["data", "books", str(folder), "--format", "parquet"]) == 2
    assert "needs -o FILE" in capsys.readouterr().err
    assert main(["data", "books", str(tmp_path / "none"), "-o", str(tmp_path / "x.parquet")]) == 2
    assert "no such session folder" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()
