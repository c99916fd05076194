"""Per-process live counters in shared memory, for the session's progress display and summary.

A counter block is a segment whose data area holds a name table followed by 8-byte values: integer counters read
and written through a ``memoryview('q')`` (``block.ints[i] += 1`` costs tens of nanoseconds and no syscall) and
float gauges through a ``memoryview('d')``. Names are fixed at creation; the owning process is the only writer,
any number of readers take snapshots. Names are at most 47 bytes of ASCII.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence

from caerus.ipc import segment
from caerus.ipc.segment import HEADER_SIZE, KIND_COUNTERS
from caerus.wire import Layout

NAME_BYTES = 48
_ENTRY = struct.Struct(f"<{NAME_BYTES - 1}sB")  # name, kind (0 int, 1 float)
# The header check compares record size and layout name, so a counters segment uses this pseudo-layout.
COUNTERS_LAYOUT = Layout("counters", (("value", "q"),))


class CounterBlock:
    def __init__(self, seg: segment.Mapping) -> None:
        self.seg = seg
        self.name = seg.name
        n = seg.header.capacity
        entries = [_ENTRY.unpack_from(seg.mm, HEADER_SIZE + i * NAME_BYTES) for i in range(n)]
        self.int_names = [e[0].rstrip(b"\0").decode() for e in entries if e[1] == 0]
        self.float_names = [e[0].rstrip(b"\0").decode() for e in entries if e[1] == 1]
        values_off = HEADER_SIZE + n * NAME_BYTES
        values_off = (values_off + 63) // 64 * 64
        n_int = len(self.int_names)
        self.ints = memoryview(seg.mm)[values_off : values_off + 8 * n_int].cast("q")
        self.floats = memoryview(seg.mm)[values_off + 8 * n_int : values_off + 8 * n].cast("d")
        self._int_index = {name: i for i, name in enumerate(self.int_names)}
        self._float_index = {name: i for i, name in enumerate(self.float_names)}

    @classmethod
    def create(cls, name: str, ints: Sequence[str] = (), floats: Sequence[str] = ()) -> CounterBlock:
        names = [*ints, *floats]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"counter block {name!r}: duplicate counter names {dup}")
        for n in names:
            if not n or len(n.encode()) >= NAME_BYTES or not n.isascii():
                raise ValueError(f"counter name {n!r} must be 1-{NAME_BYTES - 1} ASCII bytes")
        count = len(names)
        data = ((count * NAME_BYTES + 63) // 64 * 64) + 8 * count
        def write_names(seg: segment.Mapping) -> None:
            # Before the segment becomes visible: a reader attaching must never see an empty name table.
            for i, n in enumerate(names):
                _ENTRY.pack_into(seg.mm, HEADER_SIZE + i * NAME_BYTES, n.encode(), 0 if i < len(ints) else 1)

        return cls(segment.create(name, COUNTERS_LAYOUT, KIND_COUNTERS, count, 8, data, init=write_names))

    @classmethod
    def attach(cls, name: str, timeout: float | None = None) -> CounterBlock:
        return cls(segment.attach(name, COUNTERS_LAYOUT, KIND_COUNTERS, timeout))

    def int_index(self, name: str) -> int:
        try:
            return self._int_index[name]
        except KeyError:
            raise KeyError(f"counter block {self.name!r} has no integer counter {name!r}") from None

    def float_index(self, name: str) -> int:
        try:
            return self._float_index[name]
        except KeyError:
            raise KeyError(f"counter block {self.name!r} has no float gauge {name!r}") from None

    def add(self, name: str, n: int = 1) -> None:
        self.ints[self.int_index(name)] += n

    def set(self, name: str, value: float) -> None:
        if name in self._float_index:
            self.floats[self._float_index[name]] = float(value)
        else:
            self.ints[self.int_index(name)] = int(value)

    def get(self, name: str) -> int | float:
        if name in self._float_index:
            return self.floats[self._float_index[name]]
        return self.ints[self.int_index(name)]

    def snapshot(self) -> dict[str, int | float]:
        out: dict[str, int | float] = dict(zip(self.int_names, self.ints.tolist(), strict=True))
        out.update(zip(self.float_names, self.floats.tolist(), strict=True))
        return out

    def beat(self) -> None:
        self.seg.words[segment.OFF_HEARTBEAT // 8] = time.time_ns()

    def close(self, unlink: bool = False) -> None:
        self.ints.release()
        self.floats.release()
        if unlink:
            segment.unlink(self.name)
        self.seg.close()
