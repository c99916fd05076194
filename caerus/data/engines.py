"""The two ClickHouse engines caerus.data reads, behind one interface: run a query, get Arrow record batches.

* :class:`ChdbEngine`: a capture store's embedded chDB (in-process). Results stream as Arrow batches
  (``Session.send_query(sql, "Arrow")``), never as one whole result.
* :class:`HttpEngine`: a ClickHouse server's HTTP interface (Debian's 18.16 and later). 18.16 has no Arrow output,
  so results come as TabSeparated, which queries here keep all-numeric (no string to unescape; NULL is ``\\N``,
  floats print shortest round-trip so they read back bit for bit), parsed while the response streams in by
  pyarrow's CSV reader with the column types given. The password, as for the sink, comes only from a file that
  must be mode 0600 (caerus.capture.clickhouse.read_password_file).

Both engines run the same SQL (sql.py); each batch is cast to the caller's schema so that both engines give equal
tables.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc  # pa.ipc below

from caerus.capture.clickhouse import check_url, read_password_file

from .sql import quote, settings_clause


class DataError(ValueError):
    """A source, session, symbol or time that cannot be read; the message names what was wrong."""


class Engine(Protocol):
    where: str  # what the engine reads, for messages

    def batches(self, sql: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """Run ``sql`` and yield its rows as batches of ``schema`` (the columns in that order)."""
        ...

    def close(self) -> None: ...


def _cast(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    cols = [batch.column(i).cast(f.type) for i, f in enumerate(schema)]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _chunk_buffer(chunk: Any) -> pa.Buffer:
    """A fetched chDB chunk's bytes as an Arrow buffer, without copying them.

    The chunk owns its result buffer and ``get_memview()``'s wrapper shares that ownership (chDB's
    memoryview_wrapper holds the same shared pointer), but the plain memoryview its ``view()`` gives does not: so
    the Arrow buffer is made over the view's address with the wrapper as its base, and every batch read from it
    keeps the wrapper, hence the chunk's memory, alive however many fetches and ``stream.close()`` come after."""
    owner = chunk.get_memview()
    view = pa.py_buffer(owner.view())
    return pa.foreign_buffer(view.address, view.size, base=owner)


class ChdbEngine:
    """An existing capture store (``<store>/chdb``) opened with chDB; never creates one."""

    def __init__(self, store: Path) -> None:
        from chdb import session as chs  # imported here: chDB costs hundreds of ms to import

        self.where = str(store)
        db = store / "chdb"
        if not db.is_dir():
            raise DataError(f"no chDB capture store at {store} (expected {db})")
        try:
            self._session = chs.Session(str(db))
            # Arrow results uncompressed: chDB's default (lz4_frame) has the engine compress every block and
            # pyarrow decompress it into new buffers, and only an uncompressed chunk can be read without a copy
            # (_chunk_buffer). A session setting, so both engines keep running the same SQL text.
            self._session.query("SET output_format_arrow_compression_method = 'none'")
        except Exception as exc:  # chDB raises RuntimeError/ChdbError with the engine's text (e.g. the store in use)
            raise DataError(f"cannot open the chDB store at {db}: {exc}") from None

    def batches(self, sql: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        # Each fetched chunk is one Arrow IPC file of one engine block, read here as it is: chDB's own
        # record_batch() reader concatenates chunks into 1M-row batches (a copy of every row, ~1 CPU-s per 10^7
        # book rows, measured); downstream takes batches of any size. The batches point into the chunk's own
        # buffer: no copy out of chDB and, with the session's uncompressed Arrow, none by pyarrow either.
        try:
            stream = self._session.send_query(sql, "Arrow")
        except Exception as exc:
            raise DataError(f"chDB store {self.where}: {_first_line(exc)}") from None
        try:
            while (chunk := stream.fetch()) is not None:
                if not chunk.size():
                    continue
                reader = pa.ipc.open_file(_chunk_buffer(chunk))
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    if batch.num_rows:
                        yield _cast(batch, schema)
        except (pa.ArrowException, RuntimeError) as exc:
            raise DataError(f"chDB store {self.where}: {_first_line(exc)}") from None
        finally:
            stream.close()

    def run(self, sql: str) -> None:
        """Run ``sql`` for its effect (a statement, or a query ending in FORMAT Null), its output dropped."""
        try:
            self._session.query(sql)
        except Exception as exc:
            raise DataError(f"chDB store {self.where}: {_first_line(exc)}") from None

    def write_file(self, sql: str, path: Path, fmt: str, settings: dict[str, str | int]) -> None:
        """Run the query ``sql`` (no SETTINGS clause of its own: the query's settings go in ``settings`` with the
        output's) with the engine writing its result to ``path`` itself (``INTO OUTFILE ... TRUNCATE``: an existing
        file is replaced), in ``fmt``. The statement is composed from these parts in ClickHouse's clause order,
        never by cutting ``sql``, whose string literals may hold any text."""
        if not fmt.isalnum():
            raise DataError(f"output format {fmt!r} is not a ClickHouse format name")
        statement = f"{sql} INTO OUTFILE {quote(str(path))} TRUNCATE FORMAT {fmt} {settings_clause(settings)}"
        try:
            self._session.query(statement)
        except Exception as exc:
            raise DataError(f"chDB store {self.where}: {_first_line(exc)}") from None

    def close(self) -> None:
        self._session.close()


class HttpEngine:
    """A ClickHouse server at ``url`` (``http://HOST:PORT``), optionally with a user and a 0600 password file."""

    def __init__(self, url: str, user: str | None = None, password_file: Path | None = None,
                 timeout_s: float = 60.0) -> None:
        try:
            self.url = check_url(url)
        except ValueError as exc:
            raise DataError(str(exc).replace("--clickhouse ", "")) from None
        self.where = self.url
        self.timeout_s = timeout_s  # each socket read waits at most this long
        self._headers: dict[str, str] = {}
        if password_file is not None and user is None:
            raise DataError("a ClickHouse password file needs a user")
        if user is not None:
            try:
                password = read_password_file(Path(password_file)) if password_file is not None else ""
            except (ValueError, OSError) as exc:
                raise DataError(str(exc).replace("--clickhouse-password-file ", "password file ")) from None
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"

    def _open(self, sql: str) -> Any:
        req = urllib.request.Request(self.url + "/", data=sql.encode(), method="POST", headers=self._headers)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout_s)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace").strip()
            first = text.splitlines()[0][:300] if text else ""
            raise DataError(f"ClickHouse at {self.url} answered {exc.code}: {first}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise DataError(f"ClickHouse at {self.url} unreachable: {getattr(exc, 'reason', exc)}") from None

    def batches(self, sql: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        response = self._open(sql + "\nFORMAT TabSeparated")
        try:
            try:
                reader = pacsv.open_csv(
                    response,
                    read_options=pacsv.ReadOptions(column_names=schema.names, block_size=8 << 20),
                    parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False,
                                                     escape_char=False),
                    convert_options=pacsv.ConvertOptions(column_types={f.name: f.type for f in schema},
                                                         null_values=["\\N"], strings_can_be_null=False))
            except pa.ArrowInvalid as exc:
                if "Empty CSV file" in str(exc):
                    return
                raise
            for batch in reader:
                if batch.num_rows:
                    yield _cast(batch, schema)
        except pa.ArrowInvalid as exc:
            # The server reports an error found while streaming inside the body ("Code: NNN, ..."): not a number.
            raise DataError(f"ClickHouse at {self.url}: the result could not be read ({_first_line(exc)})") from None
        except OSError as exc:
            raise DataError(f"ClickHouse at {self.url}: the result stopped ({exc})") from None
        finally:
            response.close()

    def close(self) -> None:
        pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def url_like(text: str) -> bool:
    return urllib.parse.urlsplit(text).scheme in ("http", "https")
