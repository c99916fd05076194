"""Live view of a running session: counter blocks, the exec ring, process health -- and its rich display.

``LiveStats`` attaches lazily (a process may not have created its segments yet) to every ``S.stats.<process>``
counter block and, in every-record mode, to the ``S.exec`` ring; each ``poll()`` takes snapshots, reads the new
exec records (tick-to-decision = t_decision - trigger_t_recv, outcome, risk verdict, final state per order and the
PnL of confirmed fills: caerus.session.orders) and keeps a 10 s window for
live p50/p99. The last snapshot of each block is kept, so a process that dies still has its final counts.
The display shows whatever counters each block has, grouped by process, plus the headline ones.

Restarts (the session's supervisor, chaos): a restarted process creates its segments anew. Each poll notices a
block or the exec ring whose path now names another file; the old generation is read one last time (its final
counts, every exec record still in it) and kept in ``generations``, then the new one is attached. So the exec
records of every generation are read exactly once, and ``generations[p]`` lists the final counts of each earlier
incarnation of ``p`` (the continuity proof adds them up: caerus.session.continuity).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.segment import SegmentError
from caerus.ipc.swmr import SwmrReader
from caerus.records.exec import EXEC_FLAGS, EXEC_OUTCOME, EXEC_RISK, EXEC_T_DECISION, EXEC_TRIGGER_T_RECV
from caerus.session.collect import headline_counts
from caerus.session.launch import Running, Segments
from caerus.session.orders import ConfirmedOrders
from caerus.wire import EXEC, ExecFlags, Outcome, RiskReject

WINDOW_S = 10.0
_REPLY = int(ExecFlags.REPLY)


def _name(enum: type, code: int) -> str:
    try:
        return enum(code).name
    except ValueError:
        return f"code_{code}"


class LiveStats:
    def __init__(self, seg: Segments, processes: Iterable[str], start_ns: int) -> None:
        self.seg = seg
        self.processes = list(processes)
        self.start_ns = start_ns
        self.blocks: dict[str, CounterBlock] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.prev: dict[str, tuple[float, dict[str, Any]]] = {}
        self.rates: dict[str, dict[str, float]] = {}
        self.exec_reader: SwmrReader | None = None
        self.orders = 0
        self.by_outcome: collections.Counter[str] = collections.Counter()
        self.by_risk: collections.Counter[str] = collections.Counter()
        self.fires_per_s: collections.Counter[int] = collections.Counter()
        self.window: collections.deque[tuple[int, int]] = collections.deque()
        self.ttd_artifacts = 0
        self.errors: list[str] = []
        self.confirmed = ConfirmedOrders()  # orders by final state, PnL of confirmed fills
        self.generations: dict[str, list[dict[str, Any]]] = {}  # final counts of earlier incarnations
        self.writer_pids: dict[str, int] = {}  # the pid that wrote the attached counter block
        self.exec_generations = 0  # exec rings of earlier execution incarnations, drained and left
        self.exec_lost_before = 0  # records those rings lost to lapping
        self.on_exec: list[Any] = []  # callbacks given every exec record (the continuity proof)

    def _attach(self) -> None:
        for p in self.processes:
            if p not in self.blocks:
                try:
                    self.blocks[p] = CounterBlock.attach(self.seg.stats(p), timeout=0)
                except SegmentError:
                    pass
                except (OSError, ValueError) as exc:
                    self.errors.append(f"{p}: counter block unreadable: {exc}")
                    self.blocks.pop(p, None)
        if self.exec_reader is None:
            try:
                self.exec_reader = SwmrReader.attach(self.seg.exec, EXEC, timeout=0)
            except SegmentError:
                pass

    def _follow_restarts(self) -> None:
        """Leave every segment whose writer restarted: final counts and records first, then re-attach."""
        for p, block in list(self.blocks.items()):
            if not block.seg.stale_mapping():
                continue
            try:
                self.generations.setdefault(p, []).append({"pid": block.seg.header.writer_pid,
                                                           **block.snapshot()})
            except (ValueError, OSError):
                pass
            try:
                block.close()
            except (BufferError, ValueError, OSError):
                pass
            del self.blocks[p]
            self.prev.pop(p, None)
        r = self.exec_reader
        if r is not None and r.seg.stale_mapping():
            self._drain_exec(r, 1 << 30)  # what the dead writer published and we had not read yet
            try:
                r.close()
            except (BufferError, ValueError, OSError):
                pass
            self.exec_reader = None
            self.exec_generations += 1
            self.exec_lost_before += r.lost

    def _drain_exec(self, r: SwmrReader, max_records: int) -> None:
        for _ in range(max_records):
            rec = r.read_next()
            if rec is None:
                break
            self._exec(rec)

    def poll(self, max_records: int = 100_000) -> None:
        self._follow_restarts()
        self._attach()
        now = time.monotonic()
        for p, block in self.blocks.items():
            try:
                snap = block.snapshot()
            except (ValueError, OSError):  # unmapped under us
                continue
            self.snapshots[p] = snap
            self.writer_pids[p] = block.seg.header.writer_pid
            last = self.prev.get(p)
            if last is not None and now > last[0]:
                dt = now - last[0]
                self.rates[p] = {k: (v - last[1].get(k, 0)) / dt for k, v in snap.items() if isinstance(v, int)}
            self.prev[p] = (now, snap)
        if self.exec_reader is not None:
            self._drain_exec(self.exec_reader, max_records)
        horizon = time.time_ns() - int(WINDOW_S * 1e9)
        while self.window and self.window[0][0] < horizon:
            self.window.popleft()

    def _exec(self, rec: tuple) -> None:
        self.confirmed.add(rec)
        for callback in self.on_exec:
            callback(rec)
        if rec[EXEC_FLAGS] & _REPLY:
            # A later venue reply for an order already counted as SENT: it carries the final outcome only.
            self.by_outcome[_name(Outcome, int(Outcome.SENT))] -= 1
            self.by_outcome[_name(Outcome, rec[EXEC_OUTCOME])] += 1
            return
        self.orders += 1
        t_dec = rec[EXEC_T_DECISION]
        ttd = t_dec - rec[EXEC_TRIGGER_T_RECV]
        if ttd < 0:
            self.ttd_artifacts += 1
        else:
            self.window.append((t_dec, ttd))
        self.by_outcome[_name(Outcome, rec[EXEC_OUTCOME])] += 1
        self.by_risk[_name(RiskReject, rec[EXEC_RISK])] += 1
        self.fires_per_s[max(0, (t_dec - self.start_ns) // 1_000_000_000)] += 1

    def live_ttd(self) -> tuple[float | None, float | None, int]:
        if not self.window:
            return None, None, 0
        a = np.fromiter((v for _, v in self.window), dtype=np.int64, count=len(self.window))
        return float(np.percentile(a, 50)), float(np.percentile(a, 99)), int(a.size)

    def exec_summary(self) -> dict[str, Any]:
        return {
            "orders": self.orders, "by_outcome": {k: v for k, v in self.by_outcome.items() if v},
            "by_risk": dict(self.by_risk),
            "ring_lost": self.exec_lost_before + (int(self.exec_reader.lost) if self.exec_reader else 0),
            "ring_generations": self.exec_generations + (self.exec_reader is not None),
            "attached": self.exec_reader is not None, "tick_to_decision_artifacts": self.ttd_artifacts,
            "fires_per_s": [[s, n] for s, n in sorted(self.fires_per_s.items())],
            "confirmed": self.confirmed.summary(),
        }

    def close(self) -> None:
        for block in self.blocks.values():
            try:
                block.close()
            except (BufferError, ValueError, OSError):
                pass  # a snapshot list may still reference the memoryview; the mapping goes with the process
        if self.exec_reader is not None:
            try:
                self.exec_reader.close()
            except (BufferError, ValueError, OSError):
                pass


def _fmt_ns(v: float | None) -> str:
    from caerus.report.tables import fmt_ns

    return fmt_ns(v)


def render(live: LiveStats, procs: list[Running], elapsed_s: float, duration_s: float,
           session_start_mono: float) -> Group:
    """The rich renderable for one refresh."""
    p50, p99, n = live.live_ttd()
    hc = headline_counts(live.snapshots, live.exec_summary())
    head = Text.assemble(
        ("session ", "bold"), f"{elapsed_s:5.1f} s elapsed, {max(0.0, duration_s - elapsed_s):5.1f} s remaining   ",
        ("tick-to-decision ", "bold"), f"p50 {_fmt_ns(p50)}  p99 {_fmt_ns(p99)} (last {WINDOW_S:g} s, n={n})   ",
        ("fires ", "bold"), f"{hc.get('fires') or live.orders}  ", ("books ", "bold"), f"{hc['books']}  ",
        ("rejects ", "bold"), f"{hc['rejects']}  ", ("reconnects ", "bold"), f"{hc['reconnects']}",
    )
    table = Table(expand=True, show_lines=False)
    table.add_column("process", no_wrap=True)
    table.add_column("pid", justify="right")
    table.add_column("status")
    table.add_column("counters (value, +rate/s)")
    for r in procs:
        r.poll(session_start_mono)
        status = r.status if r.status != "running" else "running"
        style = "bold red" if r.status == "died" else ("green" if r.status == "running" else "")
        snap = live.snapshots.get(r.spec.name, {})
        rates = live.rates.get(r.spec.name, {})
        parts = []
        hidden = 0
        per_instrument = 0
        for k, v in snap.items():
            rate = rates.get(k)
            if k.startswith("inst."):
                per_instrument += 1  # many instruments: the report's Instruments table has them
            elif not v:
                hidden += 1  # feeds publish ~50 counters, most of them 0 on a healthy run
            elif isinstance(v, float):
                parts.append(f"{k}={v:.4g}")
            elif rate and not k.startswith("last_t_"):
                parts.append(f"{k}={v} (+{rate:.0f}/s)")
            elif not k.startswith("last_t_"):
                parts.append(f"{k}={v}")
        if hidden:
            parts.append(f"[{hidden} at 0]")
        if per_instrument:
            parts.append(f"[{per_instrument} per-instrument counters: see the report]")
        if r.status == "died":
            parts.insert(0, f"DIED exit {r.proc.returncode}")
        table.add_row(r.spec.name, str(r.pid), Text(status, style=style),
                      ", ".join(parts) or ("(no counter block yet)" if r.spec.name in live.processes else "-"))
    extra = Text(f"orders by outcome: {dict(live.by_outcome)}  exec ring lost: "
                 f"{live.exec_reader.lost if live.exec_reader else 0}", style="dim")
    return Group(head, table, extra)


def one_line(live: LiveStats, procs: list[Running], elapsed_s: float, duration_s: float) -> str:
    """A compact progress line for non-terminal output (CI logs)."""
    p50, p99, n = live.live_ttd()
    hc = headline_counts(live.snapshots, live.exec_summary())
    died = [r.spec.name for r in procs if r.status == "died"]
    return (f"[{elapsed_s:5.1f}/{duration_s:g} s] ttd p50 {_fmt_ns(p50)} p99 {_fmt_ns(p99)} (n={n}) "
            f"fires {hc.get('fires') or live.orders} books {hc['books']} rejects {hc['rejects']} "
            f"reconnects {hc['reconnects']}" + (f" DIED: {', '.join(died)}" if died else ""))
