"""Wire layouts: the struct and the numpy dtype are one definition, and every record is 8-byte aligned."""

from __future__ import annotations

import numpy as np
import pytest

from caerus import wire


@pytest.mark.parametrize("layout", list(wire.LAYOUTS.values()), ids=lambda lay: lay.name)
def test_struct_and_dtype_agree_field_by_field(layout: wire.Layout) -> None:
    assert layout.struct.size == layout.dtype.itemsize
    values = []
    for i, (_, code) in enumerate(layout.fields):
        values.append(float(i) + 0.5 if code == "d" else (i % 100) + 1)
    raw = layout.struct.pack(*values)
    row = np.frombuffer(raw, dtype=layout.dtype)[0]
    for (name, _), expected in zip(layout.fields, values, strict=True):
        assert row[name] == expected, name


def test_records_are_little_endian_and_aligned() -> None:
    for layout in wire.LAYOUTS.values():
        assert layout.struct.format.startswith("<")
        assert layout.size % 8 == 0


def test_exec_extends_order_so_order_fields_keep_their_positions() -> None:
    assert wire.EXEC.names[: len(wire.ORDER.names)] == wire.ORDER.names
    assert wire.EXEC.index("t_decision") == wire.ORDER.index("t_decision")


def test_field_index_names_a_missing_field() -> None:
    with pytest.raises(ValueError):
        wire.BOOK.index("no_such_field")
