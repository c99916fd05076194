"""Single-producer single-consumer bounded queue (a "lane"), standalone or as one lane of the MPSC ring.

Lane layout (at ``base`` inside a segment)::

    +0    owner pid, claimed ns, full count, pushed count   (producer's line)
    +64   head: records pushed so far                       (written by the producer only)
    +128  tail: records consumed so far                     (written by the consumer only)
    +192  capacity slots of ``stride`` bytes, record at the start of each slot

Producer: if head - tail == capacity the lane is full: count it and return False (never block). Otherwise pack the
record into slot ``head & mask``, then store head + 1. Consumer: if tail == head there is nothing; otherwise copy
slot ``tail & mask`` out, then store tail + 1. On x86-64 (TSO) the producer's payload stores are visible before its
head store, and the consumer's payload loads complete before its tail store, so no fences are needed; head and
tail live on separate cache lines so the two sides do not false-share.
"""

from __future__ import annotations

import os
import time

from caerus.ipc import segment
from caerus.ipc.segment import KIND_SPSC
from caerus.wire import Layout

LANE_HEADER = 192
_OWNER, _CLAIMED, _FULL, _PUSHED = 0, 1, 2, 3
_HEAD = 64 // 8
_TAIL = 128 // 8


def lane_size(layout: Layout, capacity: int) -> int:
    return LANE_HEADER + capacity * segment.slot_stride_for(layout.size)


def _slot_offsets(base: int, capacity: int, layout: Layout) -> tuple[int, ...]:
    """Byte offset of every slot's record (precomputed: the hot path does one tuple lookup)."""
    stride = segment.slot_stride_for(layout.size)
    return tuple(base + LANE_HEADER + i * stride for i in range(capacity))


class LaneProducer:
    """The producing side of one lane."""

    __slots__ = ("_full_i", "_head", "_head_i", "_mask", "_mm", "_pack_into", "_pushed_i", "_slot_off", "_tail_i",
                 "_w0", "_words", "capacity", "full", "lane", "seg")

    def __init__(self, seg: segment.Mapping, layout: Layout, base: int, capacity: int) -> None:
        self.seg = seg
        self.capacity = capacity
        self.lane = 0
        self._mask = capacity - 1
        self._slot_off = _slot_offsets(base, capacity, layout)
        self._w0 = base >> 3
        self._head_i = self._w0 + _HEAD
        self._tail_i = self._w0 + _TAIL
        self._full_i = self._w0 + _FULL
        self._pushed_i = self._w0 + _PUSHED
        self._words = seg.words
        self._mm = seg.mm
        self._pack_into = layout.struct.pack_into
        self._head = self._words[self._head_i]  # continue where a previous owner of this lane stopped
        self.full = 0  # pushes refused because the lane was full (this producer)

    def try_push(self, *fields: object) -> bool:
        """Append one record; False (and counted) when the consumer is ``capacity`` records behind."""
        h = self._head
        words = self._words
        if h - words[self._tail_i] >= self.capacity:
            self.full += 1
            words[self._full_i] += 1
            return False
        self._pack_into(self._mm, self._slot_off[h & self._mask], *fields)
        self._head = h + 1
        words[self._head_i] = h + 1
        return True

    def pending(self) -> int:
        return self._head - self._words[self._tail_i]


class LaneConsumer:
    """The consuming side of one lane."""

    __slots__ = ("_head_i", "_mask", "_mm", "_slot_off", "_tail", "_tail_i", "_unpack_from", "_w0", "_words",
                 "capacity", "seg")

    def __init__(self, seg: segment.Mapping, layout: Layout, base: int, capacity: int) -> None:
        self.seg = seg
        self.capacity = capacity
        self._mask = capacity - 1
        self._slot_off = _slot_offsets(base, capacity, layout)
        self._w0 = base >> 3
        self._head_i = self._w0 + _HEAD
        self._tail_i = self._w0 + _TAIL
        self._words = seg.words
        self._mm = seg.mm
        self._unpack_from = layout.struct.unpack_from
        self._tail = self._words[self._tail_i]

    def poll(self) -> tuple | None:
        t = self._tail
        words = self._words
        if words[self._head_i] == t:
            return None
        rec = self._unpack_from(self._mm, self._slot_off[t & self._mask])
        self._tail = t + 1
        words[self._tail_i] = t + 1
        return rec

    @property
    def full_count(self) -> int:
        return self._words[self._w0 + _FULL]

    @property
    def owner_pid(self) -> int:
        return self._words[self._w0 + _OWNER]


def claim_lane(seg: segment.Mapping, base: int, pid: int) -> None:
    words = seg.words
    w0 = base >> 3
    words[w0 + _OWNER] = pid
    words[w0 + _CLAIMED] = time.time_ns()


def lane_owner(seg: segment.Mapping, base: int) -> int:
    return seg.words[(base >> 3) + _OWNER]


class SpscWriter(LaneProducer):
    """A standalone SPSC queue's producer; it creates the segment."""

    __slots__ = ()

    @classmethod
    def create(cls, name: str, layout: Layout, capacity: int = 4096) -> SpscWriter:
        segment.check_capacity(capacity)
        seg = segment.create(
            name, layout, KIND_SPSC, capacity, segment.slot_stride_for(layout.size), lane_size(layout, capacity)
        )
        claim_lane(seg, segment.HEADER_SIZE, os.getpid())
        return cls(seg, layout, segment.HEADER_SIZE, capacity)

    def beat(self) -> None:
        self._words[segment.OFF_HEARTBEAT // 8] = time.time_ns()

    def close(self, unlink: bool = False) -> None:
        if unlink:
            segment.unlink(self.seg.name)
        self.seg.close()


class SpscReader(LaneConsumer):
    """A standalone SPSC queue's consumer; retry-attaches to the writer's segment."""

    __slots__ = ()

    @classmethod
    def attach(cls, name: str, layout: Layout, timeout: float | None = None) -> SpscReader:
        seg = segment.attach(name, layout, KIND_SPSC, timeout)
        return cls(seg, layout, segment.HEADER_SIZE, seg.header.capacity)

    def close(self) -> None:
        self.seg.close()
