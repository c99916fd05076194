"""caerus.data on both engines: the same session in a chDB store (written by capture's store code) and in Debian's
clickhouse-server 18.16 (rows inserted the way the sink does, JSONEachRow over HTTP) give equal books, aligned and
sessions frames, and the aligned frame equals the brute-force reference on both."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from caerus import data
from caerus.capture.clickhouse import ClickHouseHttp
from caerus.cli import main
from tests.fixtures.capture_clickhouse import ClickHouseServer
from tests.fixtures.data_books import BN, HAND, HL, INSTRUMENTS, REPEATED, json_lines, reference_aligned, write_session


def _load_server(server: ClickHouseServer) -> None:
    ch = ClickHouseHttp(server.url)
    ch.ensure_schema()
    lines = json_lines()
    ch.insert_json("books", lines)
    ch.insert_json("books", lines[:REPEATED])  # a batch delivered twice: FINAL collapses it


@pytest.fixture
def both(tmp_path: Path, clickhouse_server: ClickHouseServer) -> tuple[Path, str]:
    folder = write_session(tmp_path / "S")
    _load_server(clickhouse_server)
    return folder, clickhouse_server.url


@pytest.mark.parametrize("base", ["binance", "hyperliquid"])
def test_aligned_equal_on_chdb_and_clickhouse_18(both: tuple[Path, str], base: str) -> None:
    folder, url = both
    local = data.aligned(folder, base=base)
    remote = data.aligned(url, base=base, instruments=INSTRUMENTS)
    pd.testing.assert_frame_equal(local, remote)
    want = reference_aligned(HAND, BN if base == "binance" else HL)
    assert remote["seq"].tolist() == [w["seq"] for w in want]
    assert [None if v is pd.NA else v for v in remote["other_seq"]] == [w["other_seq"] for w in want]
    # in slices (the as-of book carried over each slice's start) the server gives the same frame
    pd.testing.assert_frame_equal(data.aligned(url, base=base, instruments=INSTRUMENTS, slice_rows=2), remote)


def test_books_and_sessions_equal_on_both_engines(both: tuple[Path, str]) -> None:
    folder, url = both
    local, remote = data.books(folder), data.books(url, instruments=INSTRUMENTS)
    pd.testing.assert_frame_equal(local, remote)
    for frame in (local, remote):  # the withdrawn bid (NaN, sent to the server as "nan") is NaN on both
        withdrawn = frame[(frame["venue"] == "hyperliquid") & (frame["seq"] == 4)]
        assert len(withdrawn) == 1 and math.isnan(withdrawn["bid_px"].iloc[0])
    pd.testing.assert_frame_equal(data.books(folder, "ETH", end=1_796_000_000_000_000_200),
                                  data.books(url, "ETH", end=1_796_000_000_000_000_200, instruments=INSTRUMENTS))
    pd.testing.assert_frame_equal(data.sessions(folder), data.sessions(url, instruments=INSTRUMENTS))
    with pytest.raises(data.DataError, match=r"symbol 'DOGE' not in session S \(has BTC, ETH, SOL\)"):
        data.aligned(url, "DOGE", instruments=INSTRUMENTS)
    with pytest.raises(data.DataError, match=r"session 'X' not in http://127.0.0.1:\d+ \(has S\)"):
        data.books(url, session="X")


def test_clickhouse_password_from_a_0600_file_only(both: tuple[Path, str], clickhouse_server: ClickHouseServer,
                                                   tmp_path: Path) -> None:
    _folder, url = both
    secret = tmp_path / "ch.pass"
    secret.write_text(clickhouse_server.writer_password + "\n")
    os.chmod(secret, 0o600)
    got = data.books(url, user=clickhouse_server.writer_user, password_file=secret, instruments=INSTRUMENTS)
    assert len(got) == len(HAND)
    os.chmod(secret, 0o644)
    with pytest.raises(data.DataError, match=r"mode 0644.*0600"):
        data.books(url, user=clickhouse_server.writer_user, password_file=secret)
    wrong = tmp_path / "wrong.pass"
    wrong.write_text("not-the-password\n")
    os.chmod(wrong, 0o600)
    with pytest.raises(data.DataError, match=r"answered 401: .*Wrong password"):
        data.books(url, user=clickhouse_server.writer_user, password_file=wrong)


def test_unreachable_server_is_named(tmp_path: Path) -> None:
    from tests.fixtures.common import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(data.DataError, match=f"ClickHouse at {url} unreachable"):
        data.sessions(url)


def test_cli_parquet_from_chdb_equals_the_servers(both: tuple[Path, str], tmp_path: Path) -> None:
    """`caerus data books -o x.parquet --engine-parquet`: chDB writes the file itself (caerus.data.outfile), the
    18.16 server's rows stream through Arrow (no Parquet output there); both files hold data.books' rows."""
    folder, url = both
    chdb_file, server_file = tmp_path / "chdb.parquet", tmp_path / "server.parquet"
    names = ["--instruments", str(folder / "instruments.json"), "--no-progress", "--engine-parquet"]
    assert main(["data", "books", str(folder), "-o", str(chdb_file), *names]) == 0
    assert main(["data", "books", url, "-o", str(server_file), *names]) == 0
    assert "ClickHouse" in pq.ParquetFile(chdb_file).metadata.created_by  # the engine-written path
    assert "ClickHouse" not in pq.ParquetFile(server_file).metadata.created_by  # pyarrow's
    got, remote = pq.read_table(chdb_file).to_pandas(), pq.read_table(server_file).to_pandas()
    want = data.books(url, instruments=INSTRUMENTS)
    for frame in (got, remote):
        for col in ("session", "venue", "symbol"):
            frame[col] = frame[col].astype(str)
    for col in ("session", "venue", "symbol"):
        want[col] = want[col].astype(str)
    assert len(got) == len(HAND)
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(remote, want)
