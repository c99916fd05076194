"""Bulk ring reads against a writer in another process: no torn record, exact accounting (a real child process)."""


from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np

from caerus.capture.reader import (
    RingSource,
)
from caerus.ipc.swmr import SwmrWriter
from caerus.wire import BOOK
from tests.unit.capture.test_capture_reader import _check_consistent, _rec


def _hammer(name: str, n: int, shm: str) -> None:
    import os

    os.environ["CAERUS_SHM_DIR"] = shm
    w = SwmrWriter.create(name, BOOK, 64)
    for i in range(n):
        w.publish(*_rec(i))
        if i % 4096 == 0:
            w.beat()
    w.close()


def test_no_torn_record_and_exact_accounting_under_a_running_writer(shm_dir: Path) -> None:
    total = 300_000
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=_hammer, args=("ham.book.binance", total, str(shm_dir)))
    p.start()
    src = RingSource("ham.book.binance")
    try:
        while not src.try_attach():
            assert p.is_alive() or p.exitcode == 0
        seen = 0
        last = -1
        while True:
            got = src.drain(500)
            if got:
                a = src.take()
                _check_consistent(a)
                assert (np.diff(a["seq"]) > 0).all() and a["seq"][0] > last
                last = int(a["seq"][-1])
                seen += got
            elif not p.is_alive() and src.drain(1 << 20) == 0:
                break
        p.join(30)
        assert p.exitcode == 0
        assert seen + src.lost == total  # every record number either read or counted lost
        assert last == total - 1
    finally:
        if p.is_alive():
            p.kill()
        src.close()
