"""Segments are mapped populated: each mapping of a ring is resident at its full size as soon as it is created or
attached, and does not creep up afterwards as the ring's pages are first written and read.

Creeping RSS over the first lap of a slow ring (minutes for a Hyperliquid book ring) looked like a leak in long
sessions and meant page faults on the hot path. Checked by size (bytes resident), never by time, and per
mapping from /proc/self/smaps: the process's total RSS also moves with the allocator and earlier tests' freed
memory (a CI run saw it fall 47 MB across one create), which once made this test fail on a correct ring.
"""

from __future__ import annotations

from pathlib import Path

from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.wire import BOOK, ORDER
from tests.fixtures.pipeline import make_book

CAPACITY = 1 << 16  # ~5 MB of BOOK slots: far above allocator and interpreter noise


def _mapped_rss(path: Path) -> list[int]:
    """Resident bytes of each of this process's mappings of `path`, in address order."""
    rss: list[int] = []
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and ":" not in head[0]:  # a mapping's header line: range perms offset dev inode path
            inside = len(head) >= 6 and head[5] == str(path)
        elif inside and head[0] == "Rss:":
            rss.append(int(head[1]) * 1024)
    return rss


def test_swmr_ring_is_resident_from_create_and_attach_and_flat_over_a_lap(shm_dir: Path) -> None:
    w = SwmrWriter.create("pf.book.binance", BOOK, CAPACITY)
    size, path = w.seg.size, w.seg.path
    [writer] = _mapped_rss(path)
    assert writer >= 0.9 * size  # the writer's mapping is populated at create
    reader = SwmrReader.attach("pf.book.binance", BOOK, timeout=1.0)
    both = _mapped_rss(path)
    assert len(both) == 2 and min(both) >= 0.9 * size  # and so is the reader's
    rec = make_book(1, 100.0, 101.0, 1)
    for _ in range(CAPACITY + 10):  # a full lap, every slot written and read
        w.publish(*rec)
        assert reader.read_latest() is not None
    assert sum(_mapped_rss(path)) - sum(both) < 0.05 * size  # nothing left to fault in
    reader.close()
    w.close(unlink=True)


def test_mpsc_order_ring_is_resident_from_create_and_attach(shm_dir: Path) -> None:
    consumer = MpscConsumer.create("pf.orders", ORDER, 1 << 14)
    size, path = consumer.seg.size, consumer.seg.path
    [created] = _mapped_rss(path)
    assert size > 1 << 20 and created >= 0.9 * size
    producer = MpscProducer.attach("pf.orders", ORDER, timeout=1.0)
    both = _mapped_rss(path)
    assert len(both) == 2 and min(both) >= 0.9 * size
    producer.close()
    consumer.close()
