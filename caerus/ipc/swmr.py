"""Single-writer multi-reader broadcast ring with a per-slot seqlock (feeds -> strategy and capture).

Layout after the segment header: ``capacity`` slots of ``stride`` bytes, each ``[seq: i64][record]``.
Record number n (1-based, ever increasing) lives in slot ``n & mask``.

Writer, for record n: store seq = 2n-1 (busy), pack the record, store seq = 2n (done), store cursor = n.
Reader, for record n: load seq alone; it must equal exactly 2n; copy the record out; load seq alone again; it must
still equal exactly 2n. Comparing against the exact expected value (never "even and unchanged") matters in
CPython: ``struct.pack_into`` was seen to zero-fill its target before packing, and a reader that accepted any even
value let torn records through. The sequence word is never part of the record copy.

Ordering: x86-64 is TSO: stores become visible in program order and loads are not reordered with other loads, so
the store/load sequences above need no fences there. A weakly ordered CPU (ARM) would need real acquire/release
atomics, which CPython does not offer; Caerus targets x86-64 hosts (c7i).

The writer never blocks or looks at readers. A reader in every-record mode that is lapped counts exactly how many
records it lost and resumes at the oldest record still valid.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from types import MethodType

import numpy as np

from caerus.ipc import segment
from caerus.ipc.segment import KIND_SWMR, OFF_CURSOR, OFF_HEARTBEAT
from caerus.ipc.swmr_publish import PUBLISHERS
from caerus.wire import Layout

_CURSOR = OFF_CURSOR // 8
_HEADER_SIZE = segment.HEADER_SIZE
_HEARTBEAT = OFF_HEARTBEAT // 8


def _slot_tables(capacity: int, stride: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per slot: the word index of its sequence word and the byte offset of its record (precomputed: the hot path
    does one tuple lookup instead of the offset arithmetic)."""
    seq_w = tuple((_HEADER_SIZE + i * stride) >> 3 for i in range(capacity))
    rec_off = tuple(_HEADER_SIZE + i * stride + 8 for i in range(capacity))
    return seq_w, rec_off


# The writer's side of the protocol above, the one place it is written. One positional parameter per field, not
# ``*fields``: a feed calls this once per message, and collecting then spreading a 15-tuple cost ~125 ns of the
# ~630 ns publish (benchmarks.peers' feed decode, same run: Caerus's whole bookTicker path 2.33-2.39 -> 2.08-2.10 us).
# The fleet's ring layouts run it as checked-in code: caerus/ipc/swmr_publish.py, rendered from this template by
# ``python -m caerus.codegen`` (tests/unit/test_codegen.py fails when that file is stale). Only a layout of another
# field count (none in the fleet today) is compiled here at run time.
PUBLISH_TEMPLATE = """
def publish(self, {fields}):
    n = self._n + 1
    i = n & self._mask
    words = self._words
    w = self._seq_w[i]
    words[w] = n + n - 1
    self._pack_into(self._mm, self._rec_off[i], {fields})
    words[w] = n + n
    words[_CURSOR] = n
    self._n = n
    return n
"""


def publish_source(n_fields: int) -> str:
    """The source of the writer's ``publish`` for a layout of ``n_fields`` fields."""
    return PUBLISH_TEMPLATE.format(fields=", ".join(f"f{k}" for k in range(n_fields)))


@functools.cache
def _publisher(n_fields: int) -> Callable[..., int]:
    """The writer's ``publish`` for a layout of ``n_fields`` fields: the checked-in one, else compiled once."""
    if n_fields in PUBLISHERS:
        return PUBLISHERS[n_fields]
    namespace: dict[str, object] = {"_CURSOR": _CURSOR}
    exec(publish_source(n_fields), namespace)
    fn = namespace["publish"]
    assert callable(fn)
    return fn


class SwmrWriter:
    """The one writer of a broadcast ring."""

    __slots__ = ("_mask", "_mm", "_n", "_pack_into", "_rec_off", "_seq_w", "_words", "capacity", "layout", "name",
                 "publish", "seg")

    #: ``publish(*fields) -> int``: write one record (fields in layout order); returns its record number. Never
    #: blocks. Made per layout by :func:`_publisher` (one positional parameter per field).
    publish: Callable[..., int]

    def __init__(self, seg: segment.Mapping, layout: Layout, capacity: int) -> None:
        self.seg = seg
        self.name = seg.name
        self.layout = layout
        self.capacity = capacity
        self._mask = capacity - 1
        self._seq_w, self._rec_off = _slot_tables(capacity, segment.slot_stride_for(layout.size))
        self._pack_into = layout.struct.pack_into
        self._mm = seg.mm
        self._words = seg.words
        self._n = 0
        self.publish = MethodType(_publisher(len(layout.fields)), self)

    @classmethod
    def create(cls, name: str, layout: Layout, capacity: int = 4096) -> SwmrWriter:
        segment.check_capacity(capacity)
        stride = segment.slot_stride_for(layout.size)
        seg = segment.create(name, layout, KIND_SWMR, capacity, stride, capacity * stride)
        return cls(seg, layout, capacity)

    @property
    def published(self) -> int:
        return self._n

    def beat(self) -> None:
        """Refresh the writer heartbeat (off the hot path, ~every 100 ms)."""
        self._words[_HEARTBEAT] = time.time_ns()

    def close(self, unlink: bool = False) -> None:
        if unlink:
            segment.unlink(self.name)
        self.seg.close()


class SwmrReader:
    """One reader of a broadcast ring, in every-record or latest-value mode."""

    __slots__ = ("_last", "_mask", "_mm", "_next", "_rec_off", "_rec_view", "_seq_view", "_seq_w", "_stride",
                 "_unpack_from", "_words", "capacity", "generation", "generations", "layout", "lost", "name", "seg",
                 "writer_pid")

    def __init__(self, seg: segment.Mapping, layout: Layout) -> None:
        self.layout = layout
        self.name = seg.name
        self.lost = 0  # records skipped because the writer lapped this reader (every-record mode)
        self.generations = 0  # times this reader re-attached to a restarted writer
        self._bind(seg)

    def _bind(self, seg: segment.Mapping) -> None:
        hdr = seg.header
        self.seg = seg
        self.capacity = hdr.capacity
        self.generation = hdr.generation
        self.writer_pid = hdr.writer_pid
        self._mask = hdr.capacity - 1
        self._stride = hdr.slot_stride
        self._seq_w, self._rec_off = _slot_tables(hdr.capacity, hdr.slot_stride)
        self._unpack_from = self.layout.struct.unpack_from
        self._mm = seg.mm
        self._words = seg.words
        self._next = 1  # every-record mode: the next record number to read
        self._last = 0  # latest-value mode: the newest record number returned
        self._seq_view: np.ndarray | None = None  # read_batch's numpy views of this mapping (made on first use)
        self._rec_view: np.ndarray | None = None

    @classmethod
    def attach(cls, name: str, layout: Layout, timeout: float | None = None) -> SwmrReader:
        return cls(segment.attach(name, layout, KIND_SWMR, timeout), layout)

    def head(self) -> int:
        """Number of the newest completely written record (0 when none)."""
        return self._words[_CURSOR]

    def read_next(self) -> tuple | None:
        """Every-record mode: the next record in order, or None when the reader is caught up."""
        words = self._words
        while True:
            n = self._next
            want = n + n
            i = n & self._mask
            w = self._seq_w[i]
            s1 = words[w]
            if s1 == want:
                rec = self._unpack_from(self._mm, self._rec_off[i])
                if words[w] == want:
                    self._next = n + 1
                    return rec
            elif s1 < want:
                return None  # not written yet (or being written right now)
            self._skip_lapped()

    def _skip_lapped(self) -> None:
        # The slot holds a newer lap: every record older than the oldest surely-valid one is lost. Counting by
        # record number keeps the count exact: every number is either returned or counted, never both.
        head = self._words[_CURSOR]
        oldest = head - self.capacity + 1 + max(1, self.capacity >> 3)  # margin: the writer may be on `oldest`
        oldest = max(oldest, self._next + 1)
        self.lost += oldest - self._next
        self._next = oldest

    def read_latest(self) -> tuple | None:
        """Latest-value mode: the newest record not returned before, or None when nothing new arrived."""
        words = self._words
        while True:
            n = words[_CURSOR]
            if n == self._last:
                return None
            want = n + n
            i = n & self._mask
            w = self._seq_w[i]
            if words[w] == want:
                rec = self._unpack_from(self._mm, self._rec_off[i])
                if words[w] == want:
                    self._last = n
                    return rec
            # The writer overwrote the slot (lapped within the copy): read the new cursor and try again.

    def read_batch(self, limit: int) -> np.ndarray:
        """Every-record mode in bulk: up to ``limit`` next records as one structured array (the layout's dtype).

        The same seqlock protocol as ``read_next``, vectorised over a run of contiguous slots: copy the sequence
        words, copy the records, copy the sequence words again, and keep the leading records whose two sequence
        words both equal exactly 2n. The three copies are three separate load sequences, which x86-64 keeps in
        program order (the same TSO argument as the scalar path). A slot already holding a newer lap ends the run;
        the scalar path then skips the lapped records and counts them exactly. Shares the cursor with
        ``read_next``, so the two can be mixed. ~0.1 us per record against ~1.5 us for read_next + conversion: this
        is for off-path bulk readers (capture), never for the hot path.
        """
        seq_view, rec_view = self._views()
        n0 = self._next
        head = self._words[_CURSOR]
        if head < n0:
            return rec_view[:0].copy()
        i0 = n0 & self._mask
        count = min(head - n0 + 1, limit, self.capacity - i0)  # one contiguous run; the next call continues
        i1 = i0 + count
        s1 = seq_view[i0:i1].copy()
        data = rec_view[i0:i1].copy()
        s2 = seq_view[i0:i1].copy()
        want = np.arange(2 * n0, 2 * (n0 + count), 2, dtype=np.int64)
        ok = (s1 == want) & (s2 == want)
        k = count if ok.all() else int(np.argmin(ok))
        if k == 0:
            # The first slot is not the record expected: the scalar path resolves it (counts a lap, or None).
            rec = self.read_next()
            if rec is None:
                return data[:0]
            return np.array([rec], dtype=self.layout.dtype)
        self._next = n0 + k
        return data[:k]

    def _views(self) -> tuple[np.ndarray, np.ndarray]:
        """The (seq, record) numpy views of the slots, made on first use."""
        if self._seq_view is None or self._rec_view is None:
            self._make_views()
        assert self._seq_view is not None and self._rec_view is not None
        return self._seq_view, self._rec_view

    def _make_views(self) -> None:
        fields = [("seq", "<i8"), ("rec", self.layout.dtype)]
        pad = self._stride - 8 - self.layout.size
        if pad:
            fields.append(("_pad", f"V{pad}"))
        slots = np.frombuffer(self._mm, dtype=np.dtype(fields), count=self.capacity, offset=segment.HEADER_SIZE)
        self._seq_view = slots["seq"]
        self._rec_view = slots["rec"]

    def _release_views(self) -> None:
        # The views export the mapping's buffer: they must be gone before the mapping is closed.
        self._seq_view = self._rec_view = None

    def seek_end(self) -> None:
        """Every-record mode: skip everything already written (start with the next new record)."""
        self._next = self._words[_CURSOR] + 1

    def writer_alive(self, stale_after_s: float = segment.DEFAULT_STALE_AFTER_S) -> bool:
        """True while the writer's heartbeat is fresh and its process exists (an off-path check)."""
        if self.seg.heartbeat_age_s() > stale_after_s:
            return False
        return segment.pid_alive(self.writer_pid) or self.writer_pid == os.getpid()

    def refresh(self) -> bool:
        """Re-attach when the writer restarted with a new generation; True when it did. Off the hot path."""
        if not self.seg.stale_mapping():
            return False
        try:
            new = segment.attach(self.name, self.layout, KIND_SWMR, timeout=0)
        except segment.AttachTimeout:
            return False
        old = self.seg
        self._release_views()
        self._bind(new)
        old.close()
        self.generations += 1
        return True

    def close(self) -> None:
        self._release_views()
        self.seg.close()
