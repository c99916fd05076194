"""`caerus data`: parquet and CSV files that read back equal to the API's frames, the table view, and errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from caerus import data
from caerus.cli import main
from tests.fixtures.data_books import HAND, write_session


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
    pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas())


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
