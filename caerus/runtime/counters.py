"""A process's live counters: the shared counter block, or a same-shaped local stand-in without --stats-segment."""

from __future__ import annotations

import array
from collections.abc import Sequence

from caerus.ipc.counter_block import CounterBlock


class LocalCounters:
    """Same surface as CounterBlock (ints / floats arrays, snapshot) for runs without --stats-segment."""

    def __init__(self, ints: Sequence[str], floats: Sequence[str]) -> None:
        self.int_names = list(ints)
        self.float_names = list(floats)
        self.ints = array.array("q", [0] * len(self.int_names))
        self.floats = array.array("d", [0.0] * len(self.float_names))

    def int_index(self, name: str) -> int:
        return self.int_names.index(name)

    def float_index(self, name: str) -> int:
        return self.float_names.index(name)

    def snapshot(self) -> dict[str, int | float]:
        out: dict[str, int | float] = dict(zip(self.int_names, self.ints, strict=True))
        out.update(zip(self.float_names, self.floats, strict=True))
        return out

    def beat(self) -> None:
        pass

    def close(self, unlink: bool = False) -> None:
        pass


Counters = CounterBlock | LocalCounters


def open_counters(name: str | None, ints: Sequence[str], floats: Sequence[str] = ()) -> Counters:
    """The counter block ``name`` (created), or local counters when no name is given."""
    if not name:
        return LocalCounters(ints, floats)
    return CounterBlock.create(name, ints=ints, floats=floats)


def index_of(names: Sequence[str]) -> dict[str, int]:
    """name -> position, for housekeeping code that writes counters by name."""
    return {name: i for i, name in enumerate(names)}
