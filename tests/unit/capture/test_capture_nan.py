"""A NaN price (the feeds publish NaN for a withdrawn side) survives capture's writers: chDB's store keeps it NaN
(not the 0.0 chDB's Python() would store for a pandas NaN), and the Kafka path's JSON carries it as ``"nan"``,
valid JSON that ClickHouse reads back as NaN."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np

from caerus.capture import rows
from caerus.capture.kafka import json_rows
from caerus.capture.store import ChdbStore
from caerus.wire import BOOK


def _books() -> np.ndarray:
    a = np.zeros(4, dtype=BOOK.dtype)
    a["venue"] = 2
    a["seq"] = [1, 2, 3, 4]
    a["t_recv"] = [10, 20, 30, 40]
    a["bid_px"] = [100.0, np.nan, 100.5, 0.0]
    a["ask_px"] = [100.1, 100.2, np.nan, 0.5]
    return a


def test_arrow_table_keeps_nan_as_a_value_not_a_null() -> None:
    tab = rows.arrow_table(rows.tables_from("book", _books())["books"])
    assert tab.column("bid_px").null_count == 0
    assert math.isnan(tab.column("bid_px")[1].as_py()) and tab.column("bid_px")[3].as_py() == 0.0


def test_chdb_store_keeps_nan_prices(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "store")
    try:
        store.insert("books", rows.tables_from("book", _books())["books"], "S")
        got = store.query("SELECT seq, isNaN(bid_px), isNaN(ask_px), bid_px FROM caerus.books ORDER BY seq", "TSV")
    finally:
        store.close()
    assert got.splitlines() == [
        "1\t0\t0\t100", "2\t1\t0\tnan", "3\t0\t1\t100.5", "4\t0\t0\t0"]


def test_json_rows_write_nan_as_a_quoted_string() -> None:
    lines = json_rows("books", rows.tables_from("book", _books())["books"], "S")
    decoded = [msgspec.json.decode(line) for line in lines]  # valid JSON: the sink does not drop the row
    assert [d["bid_px"] for d in decoded] == [100, "nan", 100.5, 0]
    assert [d["ask_px"] for d in decoded] == [100.1, 100.2, "nan", 0.5]
