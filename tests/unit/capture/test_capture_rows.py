"""Capture tables: schema.sql stays in step with the wire layouts and enums; records become the right rows."""

from __future__ import annotations

import re

import numpy as np
import pytest

from caerus.capture import rows
from caerus.capture.pipeline import counter_names, counter_role
from caerus.wire import BOOK, EVENT, EXEC, EventKind, Venue

_CH_TYPES = {"B": "UInt8", "b": "Int8", "H": "UInt16", "I": "UInt32", "i": "Int32", "q": "Int64", "d": "Float64"}


def _split_top(text: str) -> list[str]:
    """Split a column list on commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur] if cur.strip() else out


def _tables() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for stmt in rows.schema_statements():
        m = re.match(r"CREATE TABLE IF NOT EXISTS caerus\.(\w+)\s*\((.*)\)\s*ENGINE", stmt, re.S)
        if not m:
            continue
        cols = []
        for item in _split_top(m.group(2)):
            name, typ = item.strip().split(None, 1)
            cols.append((name, " ".join(typ.split())))
        out[m.group(1)] = cols
    return out


def test_schema_has_every_table_with_the_rows_columns() -> None:
    tables = _tables()
    assert sorted(tables) == sorted(rows.TABLES)
    for table, cols in tables.items():
        assert [c for c, _ in cols] == ["session", *rows.COLUMNS[table]], table


def test_schema_types_follow_the_wire_layouts() -> None:
    layouts = {"books": BOOK, "orders": EXEC, "fills": EXEC, "feed_events": EVENT}
    for table, cols in _tables().items():
        codes = dict(layouts[table].fields)
        for col, typ in cols:
            if col == "session":
                assert typ == "String"
            elif col in rows.VENUE_COLUMNS:
                assert typ == rows.VENUE_ENUM
            elif col == "kind":
                assert typ == rows.KIND_ENUM
            elif table == "fills" and col in ("px", "qty"):
                assert typ == "Float64"
            else:
                assert typ == _CH_TYPES[codes[col]], (table, col, typ)


def test_enums_mirror_wire() -> None:
    for v in Venue:
        assert f"'{v.name.lower()}' = {int(v)}" in rows.VENUE_ENUM
    for k in EventKind:
        assert f"'{k.name}' = {int(k)}" in rows.KIND_ENUM
    text = rows.SCHEMA_PATH.read_text()
    assert text.count(rows.VENUE_ENUM) == 5  # books, orders (x2), fills, feed_events
    assert " ".join(rows.KIND_ENUM.split()) in " ".join(text.split())


def test_exec_records_give_orders_and_only_filled_ones_give_fills() -> None:
    recs = []
    for i in range(6):
        filled = i % 3 == 0
        recs.append((i + 1, 7, int(Venue.BINANCE), -1, 1, 2, int(Venue.HYPERLIQUID), 0, 100.0, 0.5, 10 + i, 11, 12,
                     13, 14 + i, i + 1, 0, i % 2, 0, 15, 16 + i, 2 if filled else 4, 0, 0, 0,
                     101.5 if filled else 0.0, 0.5 if filled else 0.0))
    t = rows.tables_from("exec", np.array(recs, dtype=EXEC.dtype))
    assert list(t["orders"].columns) == list(rows.ORDER_COLUMNS) and len(t["orders"]) == 6
    assert list(t["fills"].columns) == list(rows.FILL_COLUMNS)
    assert t["fills"]["order_id"].tolist() == [1, 4]
    assert t["fills"]["px"].tolist() == [101.5, 101.5] and t["fills"]["t_sent"].tolist() == [16, 19]
    assert t["fills"]["side"].tolist() == [-1, -1]
    assert t["orders"]["symbol"].tolist() == [0, 1, 0, 1, 0, 1] and "_spare" not in t["orders"].columns


def test_book_and_event_frames_and_unknown_layouts() -> None:
    b = np.zeros(3, dtype=BOOK.dtype)
    b["seq"] = [5, 6, 7]
    assert rows.tables_from("book", b)["books"]["seq"].tolist() == [5, 6, 7]
    e = np.zeros(2, dtype=EVENT.dtype)
    assert list(rows.tables_from("event", e)["feed_events"].columns) == list(EVENT.names)
    with pytest.raises(ValueError, match="cannot store 'order'"):
        rows.tables_from("order", b)


def test_select_list_casts_enums_by_name() -> None:
    s = rows.select_list("orders")
    assert "CAST(toUInt8(venue) AS Enum8(" in s and "AS trigger_venue" in s and "px" in s
    assert "CAST(toUInt8(kind)" in rows.select_list("feed_events")
    assert rows.venue_names(np.array([1, 2, 0, 9])) == [b"binance", b"hyperliquid", b"unknown", b"unknown"]


def test_counter_names_fit_and_collide_safely() -> None:
    segs = ["S.book.binance", "S.book.hyperliquid", "S.events.binance", "S.events.hyperliquid", "S.exec"]
    names = counter_names(segs)
    assert len(names) == len(set(names)) and all(len(n) <= 47 for n in names)
    assert "lost.book.binance" in names and "records.exec" in names and "kafka.dropped" in names
    # Two sessions' rings with the same role: the full names keep the counters apart.
    assert counter_role("A.exec", ["A.exec", "B.exec"]) == "A.exec"
