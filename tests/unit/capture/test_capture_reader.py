"""Bulk ring reads for capture: same records as read_next, exact loss when lapped, no torn record under a writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from caerus.capture.reader import (
    RingSource,
    UnsupportedSegment,
    layout_of,
    role_of,
    session_of,
)
from caerus.ipc.mpsc import MpscConsumer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.wire import BOOK, ORDER


def _rec(i: int) -> tuple:
    # Every field derived from i, so a record mixing two writes is detectable.
    return (1, 1, 0, i % 7, 0, 0, i, 10 * i, 20 * i, 30 * i, float(i), i + 0.25, i + 0.5, i + 0.75, 40 * i)


def _check_consistent(a: np.ndarray) -> None:
    i = a["seq"]
    assert (a["t_exchange"] == 10 * i).all() and (a["t_recv"] == 20 * i).all() and (a["t_publish"] == 30 * i).all()
    assert (a["bid_px"] == i).all() and (a["ask_qty"] == i + 0.75).all() and (a["conn"] == i % 7).all()


def test_bulk_read_matches_read_next_across_the_wrap(shm_dir: Path) -> None:
    w = SwmrWriter.create("u.book.binance", BOOK, 16)
    scalar = SwmrReader.attach("u.book.binance", BOOK, timeout=1)
    bulk = SwmrReader.attach("u.book.binance", BOOK, timeout=1)
    got_scalar: list[tuple] = []
    got_bulk: list[np.ndarray] = []
    for i in range(100):  # 100 records through a 16-slot ring, read every 5: the runs cross the ring's end
        w.publish(*_rec(i))
        if i % 5 == 4:
            while (rec := scalar.read_next()) is not None:
                got_scalar.append(rec)
            while (b := bulk.read_batch(1000)).size:
                got_bulk.append(b)
    a = np.concatenate(got_bulk)
    assert a.tolist() == got_scalar and len(got_scalar) == 100
    assert bulk.lost == 0 and bulk.read_batch(10).size == 0
    scalar.close()
    bulk.close()
    w.close(unlink=True)


def test_bulk_read_counts_a_lap_exactly(shm_dir: Path) -> None:
    w = SwmrWriter.create("lap.book.binance", BOOK, 64)
    src = RingSource("lap.book.binance")
    assert src.try_attach() and src.layout is BOOK
    for i in range(1000):
        w.publish(*_rec(i))
    n = src.drain(1 << 20)
    a = src.take()
    assert n == a.size and n + src.lost == 1000
    assert a["seq"].tolist() == list(range(1000 - n, 1000))  # the newest, contiguous, in order
    _check_consistent(a)
    src.close()
    w.close(unlink=True)


def test_layout_detection_and_refusals(shm_dir: Path) -> None:
    assert layout_of("nothere.book.binance") is None
    w = SwmrWriter.create("S.book.binance", BOOK, 8)
    assert layout_of("S.book.binance") is BOOK
    c = MpscConsumer.create("S.orders", ORDER, 8)
    with pytest.raises(UnsupportedSegment, match="mpsc ring"):
        layout_of("S.orders")
    (shm_dir / "caerus-junk").write_bytes(b"x" * 300)
    with pytest.raises(UnsupportedSegment, match="bad magic"):
        layout_of("junk")
    c.close(unlink=True)
    w.close(unlink=True)


def test_names() -> None:
    assert role_of("S1.book.binance") == "book.binance" and session_of("S1.book.binance") == "S1"
    assert role_of("plain") == "plain" and session_of("plain") == ""
