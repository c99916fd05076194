"""Capture reads a segment's header through the one safe open (caerus.ipc.segment.open_file): a FIFO or a symlink
planted at a segment's name is refused with SegmentUntrusted, never waited on or followed.

The calls a FIFO could block run in a thread joined with a timeout; a stuck one is released (the FIFO's other end
is opened) and the test fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caerus.capture.reader import RingSource, layout_of
from caerus.ipc import segment
from caerus.ipc.swmr import SwmrWriter
from caerus.wire import BOOK
from tests.kit.bounded import bounded_call


def test_a_fifo_at_a_segment_name_is_refused_not_waited_on(shm_dir: Path) -> None:
    fifo = segment.shm_path("S.book.binance")
    os.mkfifo(fifo, 0o600)
    exc = bounded_call(lambda: layout_of("S.book.binance"), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc
    assert "a FIFO" in str(exc) and str(fifo) in str(exc)
    exc = bounded_call(lambda: RingSource("S.book.binance").try_attach(), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc


def test_a_symlink_at_a_segment_name_is_refused_not_followed(shm_dir: Path, tmp_path: Path) -> None:
    # The symlink points at a valid ring of ours elsewhere: following it would "work", which is the point.
    w = SwmrWriter.create("S.book.hyperliquid", BOOK, 8)
    os.symlink(segment.shm_path("S.book.hyperliquid"), segment.shm_path("S.book.binance"))
    assert layout_of("S.book.hyperliquid") is BOOK
    with pytest.raises(segment.SegmentUntrusted, match="cannot be opened safely"):
        layout_of("S.book.binance")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    os.symlink(fifo, segment.shm_path("S.events.binance"))
    exc = bounded_call(lambda: layout_of("S.events.binance"), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc
    w.close(unlink=True)


def test_a_group_writable_segment_is_refused(shm_dir: Path) -> None:
    w = SwmrWriter.create("S.book.binance", BOOK, 8)
    os.chmod(segment.shm_path("S.book.binance"), 0o666)
    with pytest.raises(segment.SegmentUntrusted, match="writable by group or others"):
        layout_of("S.book.binance")
    w.close(unlink=True)
