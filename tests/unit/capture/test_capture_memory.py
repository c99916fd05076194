"""The capture loop keeps nothing per flush: drain real rings, convert to DataFrames, hand them to an output,
many times over, and bound what stays allocated (by size, never by time).

Capture runs with the collector on (its libraries form cycles), so only memory still reachable counts: a list
that kept every batch, a per-flush cache without a bound, a pending list never reset. The chDB store's own
native memory is outside this test (see docs/strategy-execution.md, "memory").
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from caerus.capture.pipeline import Capture, CaptureConfig
from caerus.ipc.swmr import SwmrWriter
from caerus.wire import BOOK, EVENT, EXEC
from tests.fixtures.capture_rings import book, event, exec_record

FLUSHES = 200
BOOKS_PER_FLUSH = 60
# One 16-byte object kept per record would be 200 x ~70 x 16 = 224 KB; one 200-byte object per flush 40 KB.
# pandas keeps a small bounded cache of inferred column-name types (~20 KB, reached early): that fits below.
LEAK_BOUND = 36 * 1024


class NullOutput:
    def __init__(self) -> None:
        self.rows = 0

    def write(self, table: str, df: pd.DataFrame, session: str) -> int:
        self.rows += len(df)
        return len(df)

    def poll(self) -> None:
        return None

    def counters(self) -> dict[str, int]:
        return {}


@pytest.mark.slow
def test_capture_flushes_keep_nothing(shm_dir: Path) -> None:
    segs = ["c.book.binance", "c.book.hyperliquid", "c.exec", "c.events.binance"]
    wb, wh = SwmrWriter.create(segs[0], BOOK, 4096), SwmrWriter.create(segs[1], BOOK, 4096)
    we, wv = SwmrWriter.create(segs[2], EXEC, 1024), SwmrWriter.create(segs[3], EVENT, 1024)
    out = NullOutput()
    cap = Capture(CaptureConfig(segments=segs), out)
    cap.housekeeping()  # attaches every ring
    k = [0]

    def phase(flushes: int) -> None:
        for _ in range(flushes):
            i = k[0]
            for j in range(BOOKS_PER_FLUSH):
                wb.publish(*book(1, i + j))
            for j in range(6):
                wh.publish(*book(2, i + j))
            for j in range(3):
                we.publish(*exec_record(i + j))
            wv.publish(*event(1, i))
            k[0] = i + BOOKS_PER_FLUSH
            for src in cap.sources:
                cap._pending += src.drain(cap.config.batch_rows)
            cap.flush()
            cap.housekeeping()

    try:
        phase(FLUSHES // 2)  # warm-up: pandas and numpy fill their first-time caches
        gc.collect()
        tracemalloc.start(1)
        before = tracemalloc.take_snapshot()
        phase(FLUSHES)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        flt = (tracemalloc.Filter(False, tracemalloc.__file__),)
        diff = after.filter_traces(flt).compare_to(before.filter_traces(flt), "lineno")
        growth = sum(s.size_diff for s in diff)
        if growth >= LEAK_BOUND:
            print("\n".join(str(s) for s in diff[:10]))
        per_flush = BOOKS_PER_FLUSH + 6 + 3 + 1 + 1  # + a fill for every other exec record
        assert cap.rows["books"] == (FLUSHES + FLUSHES // 2) * (BOOKS_PER_FLUSH + 6), "capture missed records"
        assert out.rows >= (FLUSHES + FLUSHES // 2) * (per_flush - 1)
        assert cap.inserts >= 3 * FLUSHES and cap.failed_rows == 0
        assert all(not s.pending for s in cap.sources)
        assert growth < LEAK_BOUND, f"capture kept {growth} bytes over {FLUSHES} flushes"
    finally:
        for src in cap.sources:
            src.close()
        for w in (wb, wh, we, wv):
            w.close(unlink=True)
