"""Turning batches of wire records into table rows: the capture tables' columns and the records they come from.

Off the hot path and in bulk: a batch of records (one numpy structured array of the layout's dtype, read from the
ring in bulk by reader.py) becomes one pandas DataFrame per table with the columns of
``schema.sql`` minus ``session`` (the writers add it). Enum columns stay numeric here; :func:`select_list` is the
SQL that casts them (by name) on the way into chDB or out as JSONEachRow.

Routing: a BOOK record is a ``books`` row, an EVENT record a ``feed_events`` row, an EXEC record an ``orders`` row
and, when ``fill_qty > 0``, also a ``fills`` row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from caerus.wire import BOOK, EVENT, EXEC, EventKind, Layout, Venue

if TYPE_CHECKING:
    import pandas as pd  # imported where a frame is built: ~0.2-0.3 s that `caerus data import` never needs

SCHEMA_PATH = Path(__file__).with_name("schema.sql")
DATABASE = "caerus"
TABLES = ("books", "orders", "fills", "feed_events")

BOOK_COLUMNS = tuple(n for n in BOOK.names if not n.startswith("_"))  # padding is not stored
ORDER_COLUMNS = tuple(n for n in EXEC.names if not n.startswith("_"))
FILL_COLUMNS = ("order_id", "venue", "side", "outcome", "px", "qty", "t_decision", "t_sent")
EVENT_COLUMNS = EVENT.names
COLUMNS: dict[str, tuple[str, ...]] = {
    "books": BOOK_COLUMNS,
    "orders": ORDER_COLUMNS,
    "fills": FILL_COLUMNS,
    "feed_events": EVENT_COLUMNS,
}
# Which tables each layout feeds.
LAYOUT_TABLES: dict[str, tuple[str, ...]] = {"book": ("books",), "event": ("feed_events",),
                                             "exec": ("orders", "fills")}
# Enum columns: table -> {column: enum}. Values not in the enum are stored as 'unknown' (venue) or rejected.
VENUE_COLUMNS = ("venue", "trigger_venue")
VENUE_NAMES = {int(v): v.name.lower() for v in Venue} | {0: "unknown"}
KIND_NAMES = {int(k): k.name for k in EventKind}


def schema_statements(path: Path = SCHEMA_PATH) -> list[str]:
    """The CREATE statements of schema.sql, one per entry, comments removed."""
    lines = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def supported(layout: Layout) -> bool:
    return layout.name in LAYOUT_TABLES


def tables_from(layout_name: str, a: np.ndarray) -> dict[str, pd.DataFrame]:
    """Table name -> DataFrame of rows built from the structured array ``a`` of ``layout_name`` records."""
    if layout_name == "book":
        return {"books": _frame(a, BOOK_COLUMNS)}
    if layout_name == "event":
        return {"feed_events": _frame(a, EVENT_COLUMNS)}
    if layout_name == "exec":
        import pandas as pd

        orders = _frame(a, ORDER_COLUMNS)
        filled = a[a["fill_qty"] > 0]
        fills = pd.DataFrame({
            "order_id": filled["order_id"], "venue": filled["venue"], "side": filled["side"],
            "outcome": filled["outcome"], "px": filled["fill_px"], "qty": filled["fill_qty"],
            "t_decision": filled["t_decision"], "t_sent": filled["t_sent"],
        })
        return {"orders": orders, "fills": fills}
    raise ValueError(f"capture cannot store {layout_name!r} records (it stores {', '.join(LAYOUT_TABLES)})")


def _frame(a: np.ndarray, columns: Sequence[str]) -> pd.DataFrame:
    # Column by column: a DataFrame built from a dict of (strided) field views is ~7x faster than from the
    # structured array itself.
    import pandas as pd

    return pd.DataFrame({n: a[n] for n in columns}, copy=True)


def arrow_table(df: pd.DataFrame) -> pa.Table:
    """``df`` as an Arrow table for chDB's ``Python()`` table function, NaN kept as a value.

    chDB reads a pandas float column with pandas' meaning of NaN (missing: NULL, stored as the column's default
    0.0; chdb-io/chdb issue 447), but an Arrow array built from the numpy buffer keeps NaN a float value and has no
    nulls. A withdrawn side (the feeds publish NaN for an empty side) must reach the store as NaN. The columns are
    the frame's own buffers (no copy); measured as fast as inserting the DataFrame."""
    return pa.table({c: df[c].to_numpy() for c in df.columns})


VENUE_ENUM = "Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2)"
KIND_ENUM = "Enum8(" + ", ".join(f"'{name}' = {code}" for code, name in sorted(KIND_NAMES.items())) + ")"


def select_expr(col: str) -> str:
    """SQL that turns a numeric DataFrame column into the table's column type (enums by name)."""
    if col in VENUE_COLUMNS:
        return f"CAST(toUInt8({col}) AS {VENUE_ENUM})"
    if col == "kind":
        return f"CAST(toUInt8({col}) AS {KIND_ENUM})"
    return col


def select_list(table: str) -> str:
    """The SELECT list (without session) producing ``table``'s columns from a rows.py DataFrame."""
    return ", ".join(e if e == c else f"{e} AS {c}" for c, e in ((c, select_expr(c)) for c in COLUMNS[table]))


def venue_names(codes: np.ndarray) -> list[bytes]:
    """Kafka message keys: the venue name of each code."""
    lut = np.array([VENUE_NAMES.get(i, "unknown").encode() for i in range(256)], dtype=object)
    return lut[codes.astype(np.uint8)].tolist()
