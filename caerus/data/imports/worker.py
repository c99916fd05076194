"""One file's import, start to end, in whatever process runs it: read -> the live checks -> rows to staging files.

Nothing here touches the store (chDB allows one process per store): the rows go to Arrow stream files beside it,
and the store's single writer (target.py) commits them. So files are read by as many processes as there are cores.
A big file is staged in pieces of at most STAGE_PIECE_ROWS rows, each committed by an INSERT of its own, so the
commit's memory is bounded by a piece, not by the file.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from caerus.runtime import malloc

from . import compressed
from .checks import DERIVE_T_EXCHANGE, DERIVE_T_RECV, Checker, Rows
from .clock import ClockEstimate, ClockSamples, estimate
from .formats import Reader, ReadOptions, open_reader
from .records import ImportRefused, Market

STAGE_SCHEMA = pa.schema([
    ("sym", pa.uint16()), ("flags", pa.uint8()), ("reason", pa.uint8()), ("seq", pa.int64()),
    ("t_exchange", pa.int64()), ("t_recv", pa.int64()), ("bid_px", pa.float64()), ("bid_qty", pa.float64()),
    ("ask_px", pa.float64()), ("ask_qty", pa.float64()), ("derive", pa.uint8()),
])
_STAGE_DTYPES = {"sym": np.uint16, "flags": np.uint8, "reason": np.uint8, "seq": np.int64, "t_exchange": np.int64,
                 "t_recv": np.int64, "bid_px": np.float64, "bid_qty": np.float64, "ask_px": np.float64,
                 "ask_qty": np.float64, "derive": np.uint8}


#: rows per staging file at most. chDB's memory for an INSERT grows with the rows it reads: one INSERT of an 8M-row
#: staging file (488 MB) raised the process's peak RSS by ~1.2 GB, four INSERTs of 2M rows each by ~0.55 GB in all, at
#: the same CPU (0.43 -> 0.34 us a row); a piece of 2^20 rows is chDB's own insert block (min_insert_block_size_rows),
#: so a piece costs no more parts than the whole file would
STAGE_PIECE_ROWS = 1 << 20


class Staging:
    """A file's staging files: Arrow streams of STAGE_SCHEMA named ``<stem>.<k><suffix>`` after the path given, a
    new one every STAGE_PIECE_ROWS rows (none for a file with no rows)."""

    def __init__(self, stage: str) -> None:
        p = Path(stage)
        self._name = (str(p.parent / p.stem), p.suffix)
        self.paths: list[str] = []
        self.rows: list[int] = []
        self._sink: pa.OSFile | None = None
        self._out: pa.ipc.RecordBatchStreamWriter | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        done = 0
        while done < batch.num_rows:
            if self._out is None or self.rows[-1] >= STAGE_PIECE_ROWS:
                self._next()
            take = min(batch.num_rows - done, STAGE_PIECE_ROWS - self.rows[-1])
            assert self._out is not None
            self._out.write_batch(batch.slice(done, take))
            self.rows[-1] += take
            done += take

    def _next(self) -> None:
        self.close()
        stem, suffix = self._name
        path = f"{stem}.{len(self.paths)}{suffix}"
        self.paths.append(path)
        self.rows.append(0)
        self._sink = pa.OSFile(path, "wb")
        self._out = pa.ipc.new_stream(self._sink, STAGE_SCHEMA)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
        if self._sink is not None:
            self._sink.close()
        self._out = self._sink = None

    def remove(self) -> None:
        self.close()
        remove_stages(self.paths)


def remove_stages(paths: list[str]) -> None:
    for path in paths:
        Path(path).unlink(missing_ok=True)


def stage_batch(rows: Rows) -> pa.RecordBatch:
    """The rows as an Arrow batch of STAGE_SCHEMA, each column the numpy array's own memory (no copy, no nulls).
    Not ``RecordBatch.from_pydict``: it imports pandas (~0.2-0.4 s of each reader process's first file)."""
    cols = rows.columns()
    arrays = []
    for f in STAGE_SCHEMA:
        v = np.ascontiguousarray(cols[f.name], dtype=_STAGE_DTYPES[f.name])
        arrays.append(pa.Array.from_buffers(f.type, len(v), [None, pa.py_buffer(v)]))
    return pa.RecordBatch.from_arrays(arrays, schema=STAGE_SCHEMA)


@dataclass
class FileResult:
    """What reading one file found (import.json's file entry is built from it)."""

    path: str
    format: str
    size: int
    blake2b: str
    rule: str
    markets: list[Market]
    counts: dict[str, int]  # read.* / dropped.* / refused.* from the reader
    refused: dict[str, int]  # by RejectReason name, from the checks
    stored_valid: int
    stored_rejected: int
    derived: dict[str, int]  # rows whose t_exchange / t_recv is derived from the other clock
    clock: dict[str, object] | None  # the offset used (measured or given)
    measured: dict[str, object] | None  # the offset measured, when the file has both clocks
    t_recv_first: int | None
    t_recv_last: int | None
    tick: dict[str, list[int]]  # symbol -> [price decimals, size decimals] seen on valid books
    notes: dict[str, object]
    stages: list[str]  # the staging files (Arrow streams) holding the rows, in order
    stage_rows: list[int]  # rows in each
    last_seq: list[int]  # per market (sym index): the import's own last record number (time rule; 0: none)
    cpu_s: float
    wall_s: float
    gzip: str = field(default=compressed.GZIP_LIBRARY)

    @property
    def frames(self) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith(("read.", "dropped.")))

    @property
    def offset_ns(self) -> int | None:
        return None if self.clock is None else int(self.clock["clock_offset_ns"])  # type: ignore[call-overload]


def _decimals(x: np.ndarray) -> int:
    """Decimals needed to write every value (at most 10): the grid the venue quotes on, or finer."""
    x = x[np.isfinite(x)][:100_000]
    for d in range(11):
        scaled = x * 10.0 ** d
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-7 + 1e-12 * np.abs(scaled)):
            return d
    return 10


def read_file(path: str, fmt: str, options: ReadOptions, stage: str, clock_offset_ms: float | None) -> FileResult:
    """Read ``path`` as ``fmt``, check every book as the live feed would, write the rows to staging files named after
    ``stage`` (Staging); none is left behind if the file is refused or cannot be read."""
    malloc.keep_freed_memory()  # chunk after chunk of megabytes: from the heap, not fresh pages (runtime/malloc.py)
    staging = Staging(stage)
    try:
        return _read(path, fmt, options, staging, clock_offset_ms)
    except BaseException:
        staging.remove()
        raise


def _read(path: str, fmt: str, options: ReadOptions, staging: Staging, clock_offset_ms: float | None) -> FileResult:
    t0, c0 = time.perf_counter(), time.process_time()
    p = Path(path)
    reader = open_reader(fmt, p, options)
    checker = Checker(reader.rule)
    samples = ClockSamples()
    counts: Counter[str] = Counter()
    derived = Counter[str]()
    first = last = None
    tick: dict[int, list[int]] = {}
    for chunk in reader.chunks():
        counts.update(chunk.counts)
        samples.add(chunk.clock)
        rows: Rows = checker.apply(chunk)
        if not len(rows):
            continue
        have = rows.t_recv[rows.derive != DERIVE_T_RECV]
        if len(have):
            lo, hi = int(have.min()), int(have.max())
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
        derived["t_exchange"] += int((rows.derive == DERIVE_T_EXCHANGE).sum())
        derived["t_recv"] += int((rows.derive == DERIVE_T_RECV).sum())
        for s in np.unique(rows.sym):
            if int(s) not in tick:
                v = (rows.sym == s) & (rows.reason == 0)
                if v.any():
                    tick[int(s)] = [_decimals(np.concatenate([rows.bid_px[v], rows.ask_px[v]])),
                                    _decimals(np.concatenate([rows.bid_qty[v], rows.ask_qty[v]]))]
        staging.write(stage_batch(rows))
    staging.close()
    markets = reader.markets()
    measured = estimate(samples, None)
    used = estimate(samples, clock_offset_ms) if clock_offset_ms is not None else measured
    stored = checker.stored_valid + checker.stored_rejected
    if used is None and (stored or samples.total == 0):
        if reader.has_receive_time:
            raise ImportRefused(
                f"{path}: no frame carries an event time, so its receive clock cannot be placed against the venue's "
                "(t_exchange of its books would be unknown); give --clock-offset-ms MS (receive minus venue time)")
        raise ImportRefused(
            f"{path}: the file has venue times but no receive times, so t_recv cannot be measured; give "
            "--clock-offset-ms MS (the receive time to assume, relative to the venue time: e.g. 0, or a latency)")
    return FileResult(
        path=str(p), format=fmt, size=p.stat().st_size, blake2b=reader.digest.hexdigest(), rule=reader.rule,
        markets=markets, counts=dict(counts), refused=dict(checker.refused), stored_valid=checker.stored_valid,
        stored_rejected=checker.stored_rejected, derived=dict(derived),
        clock=_clock_json(used), measured=_clock_json(measured), t_recv_first=first, t_recv_last=last,
        tick={reader_symbol(reader, k): v for k, v in tick.items()}, notes=reader.notes(),
        stages=staging.paths, stage_rows=staging.rows,
        last_seq=[checker.states[i].own_seq if i in checker.states else 0 for i in range(len(markets))],
        cpu_s=time.process_time() - c0, wall_s=time.perf_counter() - t0)


def reader_symbol(reader: Reader, i: int) -> str:
    return reader.symbols[i]


def _clock_json(c: ClockEstimate | None) -> dict[str, object] | None:
    return None if c is None else c.to_json()


def result_json(r: FileResult) -> dict[str, object]:
    out = asdict(r)
    out["markets"] = [asdict(m) for m in r.markets]
    return out
