"""From the engines' numeric batches to the tables caerus.data hands out, and from those to a DataFrame.

The engines return codes (venue Enum8 code, instrument id); here each batch gains, without touching its rows:

* ``session``, ``venue`` and ``symbol`` as dictionary columns (categoricals in pandas and polars), the symbol
  names from the session's instrument list (an id the list does not hold is named ``#<id>``, never dropped);
  the id stays beside it as ``symbol_id``;
* beside every Int64 nanosecond time column ``t_x`` a ``t_x_ts`` timestamp column (ns, UTC) viewing the same
  buffer; ``t_wire`` = 0 means "no kernel stamp" (wire.py), so ``t_wire_ts`` is null there.

Flags stay as they were captured: REJECTED/STALE rows and crossed books are kept, with ``flags`` and ``reason``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from caerus.capture.rows import VENUE_NAMES
from caerus.instruments import InstrumentSet

from .sql import PAYLOAD, TIME_COLUMNS

FRAMES = ("pandas", "polars", "arrow")
DEFAULT_FRAME = "pandas"  # docs/research.md, "Datasets": why
TS = pa.timestamp("ns", tz="UTC")

_PAYLOAD_TYPES = {
    "flags": pa.uint8(), "reason": pa.uint8(), "conn": pa.uint16(), "seq": pa.int64(),
    "t_exchange": pa.int64(), "t_recv": pa.int64(), "t_publish": pa.int64(), "t_wire": pa.int64(),
    "bid_px": pa.float64(), "bid_qty": pa.float64(), "ask_px": pa.float64(), "ask_qty": pa.float64(),
}
#: what sql.books returns
BOOKS_RAW = pa.schema([("venue_code", pa.int8()), ("symbol", pa.uint16())]
                      + [(c, _PAYLOAD_TYPES[c]) for c in PAYLOAD])
#: what sql.aligned returns
ALIGNED_RAW = pa.schema([("symbol", pa.uint16())] + [(c, _PAYLOAD_TYPES[c]) for c in PAYLOAD]
                        + [(f"other_{c}", _PAYLOAD_TYPES[c]) for c in PAYLOAD])
#: what sql.inventory returns
INVENTORY_RAW = pa.schema([("session", pa.string()), ("venue_code", pa.int8()), ("symbol", pa.uint16()),
                           ("rows", pa.uint64()), ("rejected", pa.uint64()), ("t_first", pa.int64()),
                           ("t_last", pa.int64())])


@functools.cache
def _venues() -> pa.Array:
    # built on first use: pa.array imports pandas (when installed) to check its input, ~0.3 s that every `caerus
    # data` command would pay at import
    return pa.array([VENUE_NAMES.get(i, f"#{i}") for i in range(max(VENUE_NAMES) + 1)])


_DICT = pa.dictionary(pa.int32(), pa.string())


def symbol_names(instruments: InstrumentSet, top_id: int = 0) -> pa.Array:
    """The symbol dictionary for ids 0..max(top_id, last id of the list): the session's names, ``#<id>`` beyond."""
    top = max(len(instruments) - 1, int(top_id))
    return pa.array([instruments[i].name if i < len(instruments) else f"#{i}" for i in range(top + 1)])


def _constant(value: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value]))


def _codes(arr: pa.Array, dictionary: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(arr.cast(pa.int32()), dictionary)


def _times(name: str, arr: pa.Array) -> list[tuple[str, pa.Array]]:
    ts = arr.view(TS)
    if name.endswith("t_wire"):
        ts = pc.if_else(pc.equal(arr, 0), pa.scalar(None, TS), ts)
    return [(name, arr), (f"{name}_ts", ts)]


def _payload(batch: pa.RecordBatch, prefix: str) -> list[tuple[str, pa.Array]]:
    out: list[tuple[str, pa.Array]] = []
    for c in PAYLOAD:
        arr = batch.column(prefix + c)
        out.extend(_times(prefix + c, arr) if c in TIME_COLUMNS else [(prefix + c, arr)])
    return out


def _symbols(batch: pa.RecordBatch, names: pa.Array) -> list[tuple[str, pa.Array]]:
    ids = batch.column("symbol")
    return [("symbol", _codes(ids, names)), ("symbol_id", ids)]


def books_batch(batch: pa.RecordBatch, session: str, names: pa.Array) -> pa.RecordBatch:
    """A sql.books batch as caerus.data.books' columns (``names``: :func:`symbol_names`)."""
    cols = [("session", _constant(session, batch.num_rows)), ("venue", _codes(batch.column("venue_code"), _venues())),
            *_symbols(batch, names), *_payload(batch, "")]
    return _batch(cols)


def aligned_batch(batch: pa.RecordBatch, session: str, base: str, other: str, names: pa.Array) -> pa.RecordBatch:
    """A sql.aligned batch as caerus.data.aligned's columns: the base book, then ``other_*`` (null: none yet)."""
    n = batch.num_rows
    cols = [("session", _constant(session, n)), ("venue", _constant(base, n)), *_symbols(batch, names),
            *_payload(batch, ""), ("other_venue", _constant(other, n)), *_payload(batch, "other_")]
    return _batch(cols)


def _batch(cols: list[tuple[str, pa.Array]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([a for _, a in cols], names=[n for n, _ in cols])


def books_schema(aligned: bool = False) -> pa.Schema:
    """The schema of books_batch / aligned_batch (what an empty result has)."""
    raw_schema = ALIGNED_RAW if aligned else BOOKS_RAW
    raw = pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in raw_schema], schema=raw_schema)
    names = pa.array([], pa.string())
    shaped = aligned_batch(raw, "", "", "", names) if aligned else books_batch(raw, "", names)
    return _unify(shaped.schema)


def _unify(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _DICT) if pa.types.is_dictionary(f.type) else f for f in schema])


def table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """One table from shaped batches (their dictionaries unified: the DataFrame gets one category list)."""
    if not batches:
        return schema.empty_table()
    return pa.Table.from_batches(batches).unify_dictionaries()


def to_frame(tab: pa.Table, frame: str, nullable_ints: bool = False) -> Any:
    """``tab`` as a pandas or polars DataFrame (or the Arrow table itself). ``nullable_ints``: pandas integer columns
    become its nullable dtypes (``UInt8``, ``Int64``...), so a column with nulls (aligned's ``other_*``) keeps its
    integers instead of turning into floats; polars and Arrow integers are nullable anyway."""
    if frame == "arrow":
        return tab
    if frame == "polars":
        import polars as pl  # the [research] extra

        return pl.from_arrow(tab, rechunk=False)
    if frame == "pandas":
        mapper = _pandas_nullable().get if nullable_ints else None
        return tab.to_pandas(split_blocks=True, self_destruct=True, types_mapper=mapper)
    raise ValueError(f"frame {frame!r} is not one of {', '.join(FRAMES)}")


@functools.cache
def _pandas_nullable() -> dict[pa.DataType, Any]:
    import pandas as pd  # here, not at import: every `caerus data` command imports this module, few build a frame

    return {pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(), pa.int64(): pd.Int64Dtype()}

