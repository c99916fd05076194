"""The embedded store: capture tables in chDB (ClickHouse's engine in-process) under the session folder.

One chDB session per process, rooted at the store directory. Batches arrive as pandas DataFrames (see rows.py)
and go in with ``INSERT ... SELECT ... FROM Python(table)`` of an Arrow table over the frame's numpy columns
(rows.arrow_table: a NaN price stays NaN, where chDB would read a pandas NaN as NULL and store 0.0), measured at
~0.6-2.8 M rows/s here, several times faster than serialising to JSONEachRow/CSV text first. Enum columns arrive
numeric and are cast in SQL.

The store also bounds chDB's own memory over a long session (``TABLE_SETTINGS``; docs/capture.md, "Memory over a
long session"): outdated parts are removed often and always in the cleanup thread itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import rows

if TYPE_CHECKING:
    import pandas as pd  # frames come from the callers: importing pandas is theirs to pay (rows.py)

# MergeTree settings of the embedded store's tables, applied with ALTER TABLE ... MODIFY SETTING once the tables exist
# (schema.sql stays plain: the sink's ClickHouse 18.16 knows none of them). chDB's defaults are a server's, and at
# capture's rate (an insert or two per flush, every 2 s) they made capture's anonymous memory step up during a session
# (measured: docs/capture.md, "Memory over a long session"):
TABLE_SETTINGS: dict[str, int] = {
    # Every insert is a part, and merging parts leaves the merged ones outdated (~8 KB of metadata each) until a
    # cleanup removes them. With few inserts per second chDB stretches the cleanup period towards 300 s, so 300+
    # outdated parts piled up between cleanups; every 5-10 s keeps a few dozen.
    "cleanup_delay_period": 5,
    "max_cleanup_delay_period": 10,
    "cleanup_delay_period_random_add": 1,
    # A cleanup that finds >= 100 outdated parts (the default threshold) removes them on chDB's parts-cleaning pool,
    # starting up to 128 threads that stay for the life of the process: +20-30 MB of anonymous memory at the first
    # cleanup (~5.5 min into a session). Removing a few dozen small local parts in the cleanup thread is quick.
    "concurrent_part_removal_threshold": 1_000_000_000,
}


class StoreError(RuntimeError):
    """The store could not be opened or written."""


class ChdbStore:
    """Capture tables in a chDB session at ``path``."""

    def __init__(self, path: Path) -> None:
        from chdb import session as chs  # imported here: chDB costs hundreds of ms to import

        self.path = Path(path)
        self.db_path = self.path / "chdb"
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._session = chs.Session(str(self.db_path))
            for stmt in rows.schema_statements():
                self._session.query(stmt)
            settings = ", ".join(f"{k} = {v}" for k, v in TABLE_SETTINGS.items())
            for table in rows.TABLES:
                self._session.query(f"ALTER TABLE {rows.DATABASE}.{table} MODIFY SETTING {settings}")
        except Exception as e:  # OSError, or chDB's RuntimeError/ChdbError carrying the engine's text
            raise StoreError(f"cannot open chDB store at {self.db_path}: {e}") from e
        self._inserts = {
            table: (f"INSERT INTO {rows.DATABASE}.{table} (session, {', '.join(cols)}) "
                    f"SELECT {{session}}, {rows.select_list(table)} FROM Python(capture_batch)")
            for table, cols in rows.COLUMNS.items()
        }
        self.inserts = 0

    def insert(self, table: str, df: pd.DataFrame, session: str) -> int:
        """Insert the rows of ``df`` (columns of rows.COLUMNS[table]) tagged with ``session``; returns the count."""
        if df.empty:
            return 0
        capture_batch = rows.arrow_table(df)  # noqa: F841 - chDB's Python() table function finds it by this name
        sql = self._inserts[table].replace("{session}", _quote(session))
        self._session.query(sql)
        self.inserts += 1
        return len(df)

    def query(self, sql: str, fmt: str = "CSV") -> str:
        return str(self._session.query(sql, fmt))

    def query_df(self, sql: str) -> pd.DataFrame:
        return self._session.query(sql, "DataFrame")

    def close(self) -> None:
        self._session.close()


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
