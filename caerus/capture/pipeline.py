"""The capture loop: drain every ring, convert in batches, hand the batches to one output, count everything.

Kept apart from the CLI so tests and the benchmark can run it in-process. The loop reads each source until it is
caught up (or a batch is full), flushes when enough rows are pending or the flush interval passed, and does its
housekeeping (attach late segments, re-attach restarted writers, counters, Kafka delivery reports) on a timer.
It never waits on a writer: an idle pass calls the wait policy and loops.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Protocol

import msgspec
import pandas as pd

from caerus.config import ConfigBase, NonNegative, Positive
from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.wait import WaitPolicy, make_waiter
from caerus.runtime.memwatch import MemWatch

from . import rows
from .reader import RingSource, role_of, session_of

log = logging.getLogger(__name__)


class Output(Protocol):
    def write(self, table: str, df: pd.DataFrame, session: str) -> int: ...
    def poll(self) -> None: ...
    def counters(self) -> dict[str, int]: ...  # the output's own counters for the capture counter block


class ChdbOutput:
    """Adapter: rows go into the embedded chDB store."""

    def __init__(self, store) -> None:
        self.store = store

    def write(self, table: str, df: pd.DataFrame, session: str) -> int:
        return self.store.insert(table, df, session)

    def poll(self) -> None:
        return None

    def counters(self) -> dict[str, int]:
        return {}


class CaptureConfig(ConfigBase, frozen=True):
    segments: Sequence[str]
    session: str = ""
    batch_rows: Annotated[int, msgspec.Meta(ge=1)] = 65536  # flush when this many records are pending
    flush_interval_s: Positive = 2.0  # ... or when this long passed since the last flush
    housekeeping_s: Positive = 0.1
    missing_after_s: NonNegative = 10.0  # a segment still absent after this long is reported as missing
    # capture is off the hot path: it sleeps when idle (the rings buffer while it naps) and leaves the CPU to others
    wait_policy: WaitPolicy = WaitPolicy.SLEEP
    idle_sleep_s: NonNegative = 0.005


def counter_names(segments: Sequence[str]) -> list[str]:
    """The integer counters capture publishes (documented in docs/capture.md)."""
    names = [f"rows.{t}" for t in rows.TABLES]
    for seg in segments:
        role = counter_role(seg, segments)
        names += [f"records.{role}", f"lost.{role}"]
    names += ["segments.attached", "segments.missing", "writer_restarts", "inserts", "insert_errors",
              "rows.failed", "kafka.queued", "kafka.buffered", "kafka.delivered", "kafka.dropped", "kafka.errors"]
    return names


def counter_role(seg: str, segments: Sequence[str]) -> str:
    """Counter suffix for a segment: its role ("book.binance"), or the full name when two roles collide."""
    role = role_of(seg)
    return role if sum(role_of(s) == role for s in segments) == 1 else seg


class Capture:
    def __init__(self, config: CaptureConfig, output: Output, counters: CounterBlock | None = None) -> None:
        self.config = config
        self.output = output
        self.counters = counters
        self.sources = [RingSource(name) for name in config.segments]
        self.rows = dict.fromkeys(rows.TABLES, 0)
        self.failed_rows = 0
        self.insert_errors = 0
        self.inserts = 0
        self.missing: list[str] = []
        self.stop_event = threading.Event()
        self._started = time.monotonic()
        self._roles = {s.name: counter_role(s.name, config.segments) for s in self.sources}
        self._pending = 0
        self.memwatch: MemWatch | None = None  # opt-in growth report (CAERUS_TRACEMALLOC), ticked by housekeeping

    def session_for(self, src: RingSource) -> str:
        if self.config.session:
            return self.config.session
        return session_of(src.name)

    # --- the loop ------------------------------------------------------------------------------------------

    def run(self, duration_s: float | None = None) -> None:
        cfg = self.config
        waiter = make_waiter(cfg.wait_policy, sleep_s=cfg.idle_sleep_s)
        deadline = None if duration_s is None else time.monotonic() + duration_s
        next_house = 0.0
        last_flush = time.monotonic()
        self.housekeeping()
        while not self.stop_event.is_set():
            got = 0
            room = cfg.batch_rows
            for src in self.sources:
                if src.reader is not None:
                    got += src.drain(room)
            self._pending += got
            now = time.monotonic()
            if self._pending >= cfg.batch_rows or (self._pending and now - last_flush >= cfg.flush_interval_s):
                self.flush()
                last_flush = now
            if now >= next_house:
                self.housekeeping()
                next_house = now + cfg.housekeeping_s
                if deadline is not None and now >= deadline:
                    break
            if got:
                waiter.reset()
            else:
                waiter.idle()
        self.finish()

    def finish(self) -> None:
        """Read everything still in the rings, flush it, detach."""
        for src in self.sources:
            src.maintain()
            while src.drain(self.config.batch_rows):
                self.flush()
        self.flush()
        self.housekeeping()
        for src in self.sources:
            src.close()

    def flush(self) -> None:
        # One write per (table, session): both book rings go into `books` in one insert. chDB spends ~12 ms of CPU
        # per INSERT whatever its size, so fewer, larger inserts are what keeps capture cheap on a shared core.
        frames: dict[tuple[str, str], list[pd.DataFrame]] = {}
        for src in self.sources:
            batch = src.take()
            layout = src.layout
            if batch is None or layout is None:  # records are only ever taken from an attached source
                continue
            try:
                tables = rows.tables_from(layout.name, batch)
            except ValueError as e:
                self.failed_rows += len(batch)
                log.error("capture: could not convert %d %s records from %s: %s", len(batch), layout.name,
                          src.name, e)
                continue
            session = self.session_for(src)
            for table, df in tables.items():
                if not df.empty:
                    frames.setdefault((table, session), []).append(df)
        for (table, session), dfs in frames.items():
            df = dfs[0] if len(dfs) == 1 else pd.concat(dfs, ignore_index=True)
            try:
                n = self.output.write(table, df, session)
            except Exception as e:  # the store's own error text says what broke; count and go on
                self.insert_errors += 1
                self.failed_rows += len(df)
                log.error("capture: writing %d rows to %s failed: %s", len(df), table, e)
                continue
            self.inserts += 1
            self.rows[table] += n
        self._pending = 0

    def housekeeping(self) -> None:
        now = time.monotonic()
        for src in self.sources:
            if src.reader is None:
                src.try_attach()  # UnsupportedSegment propagates: a config error the CLI reports
                if src.reader is None and now - self._started > self.config.missing_after_s \
                        and src.name not in self.missing:
                    self.missing.append(src.name)
                    log.warning("capture: segment %s has not appeared after %.0f s", src.name,
                                self.config.missing_after_s)
            else:
                if src.name in self.missing:
                    self.missing.remove(src.name)
                drained = src.maintain()
                self._pending += drained
        self.output.poll()
        self.publish_counters()
        if self.memwatch is not None:
            self.memwatch.tick()

    # --- reporting -----------------------------------------------------------------------------------------

    def publish_counters(self) -> None:
        b = self.counters
        if b is None:
            return
        for table, n in self.rows.items():
            b.set(f"rows.{table}", n)
        for src in self.sources:
            role = self._roles[src.name]
            b.set(f"records.{role}", src.records)
            b.set(f"lost.{role}", src.lost)
        b.set("segments.attached", sum(s.attached for s in self.sources))
        b.set("segments.missing", len(self.missing))
        b.set("writer_restarts", sum(s.generations for s in self.sources))
        b.set("inserts", self.inserts)
        b.set("insert_errors", self.insert_errors)
        b.set("rows.failed", self.failed_rows)
        for name, value in self.output.counters().items():
            b.set(name, value)
        b.beat()

    def summary(self) -> dict:
        segs = {}
        for src in self.sources:
            segs[src.name] = {
                "layout": src.layout.name if src.layout else None,
                "attached": src.layout is not None,
                "records": src.records,
                "lost": src.lost,
                "writer_restarts": src.generations,
            }
        never = [s.name for s in self.sources if s.layout is None]
        out = {
            "segments": segs,
            "missing": never,
            "rows": dict(self.rows),
            "records": sum(s.records for s in self.sources),
            "lost": sum(s.lost for s in self.sources),
            "inserts": self.inserts,
            "insert_errors": self.insert_errors,
            "rows_failed": self.failed_rows,
        }
        return out


def write_summary(path: Path, summary: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    tmp.replace(path)
