"""Capture's side of the rings: find each named segment, learn its layout from its header, read every record.

A :class:`RingSource` never blocks and never touches a writer: it polls for its segment (segments may appear late),
attaches in every-record mode, drains what is there, and re-attaches when the writer restarts (after draining what
the old writer left). Loss is exact: ``SwmrReader.lost`` counts every record number the writer lapped us on, and
the source adds up the counts of every writer generation it read.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import numpy as np

from caerus.ipc import segment
from caerus.ipc.swmr import SwmrReader
from caerus.wire import LAYOUTS, Layout

from . import rows

log = logging.getLogger(__name__)


class UnsupportedSegment(ValueError):
    """The named segment exists but capture cannot read it (not a SWMR ring, or a layout with no table)."""


def layout_of(name: str) -> Layout | None:
    """The layout named in segment ``name``'s header, or None when the segment does not exist (yet).

    Raises UnsupportedSegment for a segment capture cannot read, segment.SegmentUntrusted for a file it must not
    (a symlink, FIFO or anything but this user's own regular file, not writable by group or others)."""
    path = segment.shm_path(name)
    try:  # never follows a symlink nor blocks on a FIFO planted at the name (SegmentUntrusted instead)
        fd, _st = segment.open_file(name, path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        raw = os.pread(fd, segment.HEADER_SIZE, 0)
    finally:
        os.close(fd)
    if len(raw) < segment.HEADER_SIZE:
        return None
    hdr = segment.Header.read(raw)
    if hdr.magic != segment.MAGIC:
        raise UnsupportedSegment(f"segment {name!r} at {path} is not a Caerus segment (bad magic)")
    if hdr.kind != segment.KIND_SWMR:
        kind = segment.KIND_NAMES.get(hdr.kind, str(hdr.kind))
        raise UnsupportedSegment(f"segment {name!r} is a {kind} ring; capture reads SWMR rings only "
                                 "(orders are captured from the execution ring S.exec)")
    layout = LAYOUTS.get(hdr.layout_name)
    if layout is None or not rows.supported(layout):
        raise UnsupportedSegment(f"segment {name!r} holds {hdr.layout_name!r} records; capture stores "
                                 f"{', '.join(rows.LAYOUT_TABLES)} records")
    return layout


def role_of(name: str) -> str:
    """The segment name without its session prefix ("S.book.binance" -> "book.binance"); used in counter names."""
    _head, sep, rest = name.partition(".")
    return rest if sep and rest else name


def session_of(name: str) -> str:
    head, sep, rest = name.partition(".")
    return head if sep and rest else ""


@dataclass
class RingSource:
    """One segment capture reads."""

    name: str
    layout: Layout | None = None
    reader: SwmrReader | None = None
    records: int = 0  # records read (every generation)
    generations: int = 0  # writer restarts noticed
    _lost_before: int = 0  # loss of readers closed before the current one
    first_seen_ns: int = 0
    pending: list = field(default_factory=list)  # structured arrays of records not flushed yet

    @property
    def role(self) -> str:
        return role_of(self.name)

    @property
    def attached(self) -> bool:
        return self.reader is not None

    @property
    def lost(self) -> int:
        return self._lost_before + (self.reader.lost if self.reader else 0)

    def try_attach(self) -> bool:
        """Attach when the segment exists; False when it does not yet. Raises UnsupportedSegment."""
        if self.reader is not None:
            return True
        layout = layout_of(self.name)
        if layout is None:
            return False
        try:
            self.reader = SwmrReader.attach(self.name, layout, timeout=0)
        except segment.AttachTimeout:
            return False
        self.layout = layout
        self.first_seen_ns = time.time_ns()
        log.info("capture attached to %s (%s records, writer pid %d)", self.name, layout.name,
                 self.reader.writer_pid)
        return True

    def drain(self, limit: int) -> int:
        """Append up to ``limit`` records (as structured arrays) to ``pending``; returns how many were read."""
        r = self.reader
        if r is None:
            return 0
        n = 0
        while n < limit:
            batch = r.read_batch(limit - n)
            if not batch.size:
                break
            self.pending.append(batch)
            n += batch.size
        self.records += n
        return n

    def maintain(self) -> int:
        """Off-path housekeeping: re-attach after a writer restart. Returns records drained from the old writer."""
        r = self.reader
        if r is None or not r.seg.stale_mapping():
            return 0
        # Everything the old writer completed is still in our mapping: read it before switching.
        n = self.drain(1 << 30)
        # refresh() rebinds the same reader object, whose `lost` keeps accumulating: nothing to carry over.
        refreshed = r.refresh()
        if refreshed:
            self.generations = r.generations
            log.info("capture re-attached to %s after a writer restart (generation %d)", self.name, r.generation)
        return n

    def take(self) -> np.ndarray | None:
        """Everything pending as one structured array (None when nothing is pending)."""
        if not self.pending:
            return None
        out = self.pending[0] if len(self.pending) == 1 else np.concatenate(self.pending)
        self.pending = []
        return out

    def close(self) -> None:
        if self.reader is not None:
            self._lost_before += self.reader.lost
            self.reader.close()
            self.reader = None
