"""Multi-producer single-consumer order ring (strategies -> execution), lock-free on the hot path.

One SPSC lane per producer process (see spsc.py). A producer claims a free lane once, at attach time, under an
advisory file lock on the segment; after that pushing touches only its own lane, so producers never contend. The
consumer polls the claimed lanes round-robin; a claim bumps a version word in the header so the consumer notices a
new producer with one load per poll. A full lane refuses the push (the producer is told and it is counted in the
lane header, visible to the consumer and the session) and never blocks.

The consumer (execution engine) creates the segment; producers retry-attach, so they may start first.
A lane whose owner died is reclaimed by the next producer, which continues at the lane's head: orders the dead
producer pushed are still delivered.
"""

from __future__ import annotations

import fcntl
import os
import time

from caerus.ipc import segment
from caerus.ipc.segment import HEADER_SIZE, KIND_MPSC, OFF_COUNTERS, OFF_HEARTBEAT
from caerus.ipc.spsc import LaneConsumer, LaneProducer, claim_lane, lane_owner, lane_size
from caerus.wire import Layout

_CLAIM_VERSION = OFF_COUNTERS // 8


class LanesExhausted(segment.SegmentError):
    """Every lane of the MPSC ring is owned by a live producer."""


def _lane_base(layout: Layout, capacity: int, lane: int) -> int:
    return HEADER_SIZE + lane * lane_size(layout, capacity)


class MpscConsumer:
    """The single consumer; creates the ring."""

    def __init__(self, seg: segment.Mapping, layout: Layout, capacity: int, lanes: int) -> None:
        self.seg = seg
        self.layout = layout
        self.capacity = capacity
        self.lanes = [LaneConsumer(seg, layout, _lane_base(layout, capacity, i), capacity) for i in range(lanes)]
        self._words = seg.words
        self._claims_seen = -1
        self._active: list[LaneConsumer] = []
        self._rr = 0
        self._scan_claims()

    @classmethod
    def create(cls, name: str, layout: Layout, capacity: int = 1024, lanes: int = 8) -> MpscConsumer:
        segment.check_capacity(capacity)
        if lanes < 1:
            raise ValueError(f"an MPSC ring needs at least one lane, got {lanes}")
        seg = segment.create(
            name, layout, KIND_MPSC, capacity, segment.slot_stride_for(layout.size),
            lanes * lane_size(layout, capacity), lanes=lanes,
        )
        return cls(seg, layout, capacity, lanes)

    def _scan_claims(self) -> None:
        self._claims_seen = self._words[_CLAIM_VERSION]
        self._active = [lane for lane in self.lanes if lane.owner_pid]

    def poll(self) -> tuple | None:
        """The next order from any producer, or None when every lane is empty."""
        if self._words[_CLAIM_VERSION] != self._claims_seen:
            self._scan_claims()
        active = self._active
        n = len(active)
        if n == 1:
            return active[0].poll()
        for i in range(n):
            lane = active[(self._rr + i) % n]
            rec = lane.poll()
            if rec is not None:
                self._rr = (self._rr + i + 1) % n  # fairness: start after the lane just served
                return rec
        return None

    def full_count(self) -> int:
        """Pushes refused because a lane was full, over every lane."""
        return sum(lane.full_count for lane in self.lanes)

    def beat(self) -> None:
        self._words[OFF_HEARTBEAT // 8] = time.time_ns()

    def close(self, unlink: bool = False) -> None:
        self.lanes.clear()
        self._active = []
        if unlink:
            segment.unlink(self.seg.name)
        self.seg.close()


class MpscProducer(LaneProducer):
    """One producer process's end of the ring: owns one lane."""

    __slots__ = ()

    @classmethod
    def attach(cls, name: str, layout: Layout, timeout: float | None = None) -> MpscProducer:
        seg = segment.attach(name, layout, KIND_MPSC, timeout)
        hdr = seg.header
        pid = os.getpid()
        with open(seg.path, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                for i in range(hdr.lanes):
                    base = _lane_base(layout, hdr.capacity, i)
                    owner = lane_owner(seg, base)
                    if owner == 0 or owner == pid or not segment.pid_alive(owner):
                        claim_lane(seg, base, pid)
                        seg.words[_CLAIM_VERSION] += 1
                        producer = cls(seg, layout, base, hdr.capacity)
                        producer.lane = i
                        return producer
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        seg.close()
        raise LanesExhausted(f"MPSC ring {name!r}: all {hdr.lanes} lanes are owned by live producers")

    def reattach(self, name: str, layout: Layout) -> MpscProducer | None:
        """A producer on the consumer's new segment when the consumer restarted (this mapping names a file that is
        no longer the ring), else None. Off the hot path: it stats the path. Orders pushed into the old mapping
        after the consumer died were never consumed: callers count them from ``pending()`` before switching."""
        if not self.seg.stale_mapping():
            return None
        try:
            return MpscProducer.attach(name, layout, timeout=0)
        except segment.AttachTimeout:
            return None  # the consumer has not re-created the ring yet

    def consumer_alive(self, stale_after_s: float = segment.DEFAULT_STALE_AFTER_S) -> bool:
        return self.seg.heartbeat_age_s() <= stale_after_s and segment.pid_alive(self.seg.header.writer_pid)

    def close(self) -> None:
        self.seg.close()
