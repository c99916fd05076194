"""The capture loop with a recording output: grouping per table, exact counts, failed writes counted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from caerus.capture.pipeline import Capture, CaptureConfig, counter_names
from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.swmr import SwmrWriter
from caerus.wire import BOOK, EXEC
from tests.fixtures.capture_rings import book, exec_record


class Recording:
    def __init__(self, fail_tables: tuple[str, ...] = ()) -> None:
        self.writes: list[tuple[str, str, pd.DataFrame]] = []
        self.fail_tables = fail_tables

    def write(self, table: str, df: pd.DataFrame, session: str) -> int:
        if table in self.fail_tables:
            raise RuntimeError(f"disk full while writing {table}")
        self.writes.append((table, session, df))
        return len(df)

    def poll(self) -> None:
        return None

    def counters(self) -> dict[str, int]:
        return {}


def test_both_book_rings_go_into_one_write_per_flush(shm_dir: Path) -> None:
    wb = SwmrWriter.create("P.book.binance", BOOK, 64)
    wh = SwmrWriter.create("P.book.hyperliquid", BOOK, 64)
    for i in range(10):
        wb.publish(*book(1, i))
        wh.publish(*book(2, i))
    out = Recording()
    segs = ["P.book.binance", "P.book.hyperliquid"]
    counters = CounterBlock.create("P.stats.capture", ints=counter_names(segs))
    cap = Capture(CaptureConfig(segments=segs), out, counters)
    cap.run(duration_s=0.3)
    assert [(t, s, len(df)) for t, s, df in out.writes] == [("books", "P", 20)]
    assert sorted(out.writes[0][2]["venue"].tolist()) == [1] * 10 + [2] * 10
    snap = counters.snapshot()
    assert snap["rows.books"] == 20 and snap["records.book.binance"] == 10 and snap["inserts"] == 1
    assert cap.summary()["records"] == 20
    counters.close(unlink=True)
    wb.close(unlink=True)
    wh.close(unlink=True)


def test_a_failed_write_is_counted_not_silent(shm_dir: Path, caplog) -> None:
    we = SwmrWriter.create("F.exec", EXEC, 64)
    for i in range(8):
        we.publish(*exec_record(i))
    out = Recording(fail_tables=("fills",))
    cap = Capture(CaptureConfig(segments=["F.exec"], session="override"), out)
    cap.run(duration_s=0.3)
    assert [(t, s, len(df)) for t, s, df in out.writes] == [("orders", "override", 8)]
    s = cap.summary()
    assert s["rows"]["orders"] == 8 and s["rows"]["fills"] == 0
    assert s["insert_errors"] == 1 and s["rows_failed"] == 4
    assert "disk full while writing fills" in caplog.text
    we.close(unlink=True)
