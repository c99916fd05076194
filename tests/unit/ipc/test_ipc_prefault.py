"""Segments are mapped populated: a process's resident memory reaches a ring's full size when it creates or
attaches it, and does not creep up afterwards as the ring's pages are first written and read.

Creeping RSS over the first lap of a slow ring (minutes for a Hyperliquid book ring) looked like a leak in long
sessions and meant page faults on the hot path. Checked by size (bytes resident), never by time.
"""

from __future__ import annotations

from pathlib import Path

import psutil

from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.wire import BOOK, ORDER
from tests.fixtures.pipeline import make_book

CAPACITY = 1 << 16  # ~5 MB of BOOK slots: far above allocator and interpreter noise


def _rss() -> int:
    return psutil.Process().memory_info().rss


def test_swmr_ring_is_resident_from_create_and_attach_and_flat_over_a_lap(shm_dir: Path) -> None:
    r0 = _rss()
    w = SwmrWriter.create("pf.book.binance", BOOK, CAPACITY)
    size = w.seg.size
    r1 = _rss()
    assert r1 - r0 >= 0.9 * size  # the writer's mapping is populated at create
    reader = SwmrReader.attach("pf.book.binance", BOOK, timeout=1.0)
    r2 = _rss()
    assert r2 - r1 >= 0.9 * size  # and so is the reader's
    rec = make_book(1, 100.0, 101.0, 1)
    for _ in range(CAPACITY + 10):  # a full lap, every slot written and read
        w.publish(*rec)
        assert reader.read_latest() is not None
    assert _rss() - r2 < 0.05 * size  # nothing left to fault in
    reader.close()
    w.close(unlink=True)


def test_mpsc_order_ring_is_resident_from_create_and_attach(shm_dir: Path) -> None:
    r0 = _rss()
    consumer = MpscConsumer.create("pf.orders", ORDER, 1 << 14)
    size = consumer.seg.size
    r1 = _rss()
    assert size > 1 << 20 and r1 - r0 >= 0.9 * size
    producer = MpscProducer.attach("pf.orders", ORDER, timeout=1.0)
    assert _rss() - r1 >= 0.9 * size
    producer.close()
    consumer.close()
