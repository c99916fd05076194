"""caerus.data on a chDB store written by capture's own code: as-of alignment against a brute-force reference,
books, sessions, slicing, and the errors a reader gets for what a store does not hold."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from caerus import data
from caerus.data.read import parse_time
from tests.fixtures.data_books import BN, HAND, HL, REJECTED, SESSION, T, reference_aligned, write_session


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_session(tmp_path_factory.mktemp("data") / "S")


def _same(a: object, b: object) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)) or a is pd.NA:
        return b is None or (isinstance(b, float) and math.isnan(b)) or b is pd.NA
    return bool(a == b)


def _check_against_reference(df: pd.DataFrame, base: int, data_rows: list = HAND) -> None:
    want = reference_aligned(data_rows, base)
    assert len(df) == len(want)
    got = df.to_dict("records")
    for g, w in zip(got, want, strict=True):
        for k, v in w.items():
            assert _same(g[k], v), (k, g, w)


@pytest.mark.parametrize("base", ["binance", "hyperliquid"])
def test_aligned_matches_brute_force_reference(folder: Path, base: str) -> None:
    df = data.aligned(folder, base=base)
    _check_against_reference(df, BN if base == "binance" else HL)
    assert set(df["venue"].astype(str)) == {base}
    assert set(df["other_venue"].astype(str)) == {"hyperliquid" if base == "binance" else "binance"}


def test_aligned_cases_by_name(folder: Path) -> None:
    df = data.aligned(folder).set_index("seq")
    assert df.loc[10, "other_seq"] is pd.NA and pd.isna(df.loc[10, "other_t_recv_ts"])  # no HL book yet
    assert df.loc[11, "other_seq"] == 1  # equal receive time: the other book is known
    assert df.loc[12, "other_seq"] == 3  # two HL books at one instant: the higher seq
    assert df.loc[13, "flags"] & REJECTED and df.loc[13, "bid_px"] > df.loc[13, "ask_px"]  # crossed row kept
    assert df.loc[14, "other_seq"] == 4 and df.loc[14, "other_flags"] & REJECTED  # a rejected book is as-of too
    assert math.isnan(df.loc[14, "other_bid_px"])  # the withdrawn side: NaN as published, not 0.0
    assert df.loc[20, "other_seq"] is pd.NA  # ETH: BTC's Hyperliquid book does not count
    assert df.loc[22, "other_seq"] == 21 and df.loc[23, "other_seq"] == 21
    assert df.loc[14, "other_t_recv_ts"] == pd.Timestamp(T + 170, tz="UTC")


@pytest.mark.slow
def test_aligned_in_slices_equals_one_query(folder: Path) -> None:
    whole = data.aligned(folder)
    for rows in (1, 2, 3):
        pd.testing.assert_frame_equal(data.aligned(folder, slice_rows=rows), whole)


def test_aligned_range_uses_the_book_from_before_the_start(folder: Path) -> None:
    df = data.aligned(folder, "BTC", start=T + 155, end=T + 201)
    assert df["seq"].tolist() == [13, 14]
    assert df["other_seq"].tolist() == [3, 4]  # seq 13 is matched to the Hyperliquid book received at T + 150


def test_books_every_row_once_with_names_and_times(folder: Path) -> None:
    df = data.books(folder)
    assert len(df) == len(HAND)  # the batch inserted twice shows once (FINAL)
    assert df["t_recv"].is_monotonic_increasing
    assert df["t_recv_ts"].dtype == "datetime64[ns, UTC]"
    assert (df["t_recv_ts"].astype("int64") == df["t_recv"]).all()
    assert df["symbol"].astype(str).tolist()[:2] == ["SOL", "BTC"]
    row = df.set_index("seq").loc[11]
    assert row["t_wire"] == T + 99 and row["t_wire_ts"] == pd.Timestamp(T + 99, tz="UTC")
    assert pd.isna(df.set_index("seq").loc[10, "t_wire_ts"])  # 0: no kernel stamp
    assert (df["flags"] & REJECTED != 0).sum() == 2  # rejected rows are kept
    eth = data.books(folder, ["ETH"], venues=["hyperliquid"])
    assert eth["seq"].tolist() == [21]


def test_books_polars_and_arrow_hold_the_same_rows(folder: Path) -> None:
    import polars as pl  # the [research] extra, in locks/dev.txt
    pdf = data.books(folder)
    plf = data.books(folder, frame="polars")
    tab = data.books(folder, frame="arrow")
    assert isinstance(plf, pl.DataFrame)
    assert plf["seq"].to_list() == pdf["seq"].tolist() == tab.column("seq").to_pylist()
    assert plf["symbol"].cast(pl.String).to_list() == pdf["symbol"].astype(str).tolist()


def test_sessions_lists_what_the_store_holds(folder: Path) -> None:
    s = data.sessions(folder)
    got = {(r.venue, r.symbol): (r.rows, r.rejected) for r in s.itertuples()}
    assert got == {("binance", "BTC"): (5, 1), ("binance", "ETH"): (3, 0), ("hyperliquid", "BTC"): (4, 1),
                   ("hyperliquid", "ETH"): (1, 0), ("hyperliquid", "SOL"): (1, 0)}
    assert set(s["session"]) == {SESSION}
    assert s["t_first_ts"].min() == pd.Timestamp(T + 50, tz="UTC")


def test_missing_session_and_symbol_are_named(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(data.DataError, match=r"symbol 'DOGE' not in session S \(has BTC, ETH, SOL\)"):
        data.aligned(folder, ["BTC", "DOGE"])
    with pytest.raises(data.DataError, match=r"session 'X' not in .* \(has S\)"):
        data.books(folder, session="X")
    with pytest.raises(data.DataError, match="no such session folder"):
        data.books(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(data.DataError, match="not a session folder or capture store"):
        data.sessions(tmp_path / "empty")
    with pytest.raises(data.DataError, match="base venue 'kraken'"):
        data.aligned(folder, base="kraken")
    with pytest.raises(data.DataError, match=r"end .* is not after start"):
        data.books(folder, start=T + 10, end=T + 10)
    with pytest.raises(data.DataError, match="not epoch nanoseconds or ISO 8601"):
        data.books(folder, start="yesterday")


def test_store_path_and_unknown_ids(folder: Path) -> None:
    # The store folder itself reads the same; without an instrument list ids beyond DEFAULT are named #<id>.
    assert len(data.books(folder / "capture")) == len(HAND)
    df = data.books(folder / "capture" / "chdb", instruments=None)
    assert set(df["symbol"].astype(str)) == {"BTC", "ETH", "SOL"}  # the list beside the store is found


def test_parse_time() -> None:
    assert parse_time("1796000000000000123") == 1_796_000_000_000_000_123
    assert parse_time("2026-12-02T12:00:00.000000123Z") == parse_time("2026-12-02T12:00:00") + 123  # type: ignore[operator]
    assert parse_time(pd.Timestamp(5, tz="UTC")) == 5
    assert parse_time(np.datetime64(7, "ns")) == 7
    assert parse_time("2026-12-02T12:00:00+01:00") == parse_time("2026-12-02T11:00:00")
