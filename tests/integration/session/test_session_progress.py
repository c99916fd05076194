"""Session plumbing against real shared memory and real subprocesses: live stats from counter blocks and the
exec ring, the progress display, and stop-by-PID (SIGTERM, then SIGKILL after the grace period)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.swmr import SwmrWriter
from caerus.session import launch
from caerus.session.progress import LiveStats, one_line, render
from caerus.wire import EXEC, Outcome, RiskReject


def _exec_record(i: int, t_recv: int, t_decision: int, outcome: Outcome, risk: RiskReject) -> tuple:
    values = {name: 0 for name in EXEC.names}
    values.update(order_id=i, trigger_t_recv=t_recv, t_decision=t_decision, outcome=int(outcome), risk=int(risk),
                  px=1.0, qty=0.001, fill_px=0.0, fill_qty=0.0)
    return tuple(values[n] for n in EXEC.names)


def _spec(name: str, code: str) -> launch.ProcessSpec:
    return launch.ProcessSpec(name, (sys.executable, "-c", code), (), "sleep")


def test_live_stats_read_counters_and_exec_ring(shm_dir: Path) -> None:
    seg = launch.Segments("t1")
    feed = CounterBlock.create(seg.stats("feed-binance"), ints=["msgs", "books", "rejects", "reject.crossed",
                                                               "reconnects"], floats=["backoff_s"])
    strat = CounterBlock.create(seg.stats("strategy"), ints=["orders"])
    w = SwmrWriter.create(seg.exec, EXEC, 64)
    now = time.time_ns()
    live = LiveStats(seg, ["feed-binance", "strategy", "execution"], start_ns=now - 10**9)
    live.poll()
    assert set(live.snapshots) == {"feed-binance", "strategy"}  # execution has no block: not an error
    feed.set("books", 100)
    feed.set("rejects", 2)
    feed.set("reject.crossed", 2)
    strat.set("orders", 3)
    for i, ttd in enumerate((10_000, 20_000, 30_000)):
        w.publish(*_exec_record(i + 1, now - ttd, now, Outcome.FILLED, RiskReject.NONE))
    w.publish(*_exec_record(4, now + 5, now, Outcome.RISK_REJECTED, RiskReject.MAX_POSITION))  # artifact
    live.poll()
    p50, p99, n = live.live_ttd()
    assert n == 3 and p50 == 20_000 and 29_000 < p99 <= 30_000
    ex = live.exec_summary()
    assert ex["orders"] == 4 and ex["by_outcome"] == {"FILLED": 3, "RISK_REJECTED": 1}
    assert ex["by_risk"] == {"NONE": 3, "MAX_POSITION": 1} and ex["tick_to_decision_artifacts"] == 1
    assert live.snapshots["feed-binance"]["books"] == 100
    console = Console(record=True, width=200)
    console.print(render(live, [], 3.0, 10.0, time.monotonic()))
    text = console.export_text()
    assert "p50 20 us" in text and "books 100" in text and "rejects 2" in text and "fires 3" in text
    assert "books 100" in one_line(live, [], 3.0, 10.0)
    live.close()
    w.close(unlink=True)
    feed.close(unlink=True)
    strat.close(unlink=True)


def test_died_process_shown_and_stop_escalates_to_sigkill(tmp_path: Path, shm_dir: Path) -> None:
    start = time.monotonic()
    dies = launch.start(_spec("strategy", "import sys; sys.exit(3)"), tmp_path)
    stubborn = launch.start(_spec("capture", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                             "print('han' + 'dler-set', flush=True)\ntime.sleep(60)"), tmp_path)
    polite = launch.start(_spec("execution", "import time; time.sleep(60)"), tmp_path)
    dies.proc.wait(30)
    dies.poll(start)
    assert dies.status == "died" and dies.proc.returncode == 3
    deadline = time.monotonic() + 30
    # (the log's first line is the command itself, so wait for a marker the command text does not contain)
    while "handler-set" not in stubborn.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "handler-set" in stubborn.log_path.read_text()
    live = LiveStats(launch.Segments("t2"), ["strategy"], time.time_ns())
    console = Console(record=True, width=200)
    console.print(render(live, [dies, stubborn, polite], 1.0, 5.0, start))
    assert "DIED exit 3" in console.export_text()
    launch.stop([stubborn, polite], grace_s=1.0, session_start_mono=start)
    assert stubborn.status == "killed_after_grace" and stubborn.proc.returncode == -9
    assert polite.status == "ok" and polite.proc.returncode == -15
    rec = dies.record(start, tmp_path)
    assert rec["status"] == "died" and rec["exit_code"] == 3 and rec["died_after_s"] >= 0
    assert rec["log"] == "logs/strategy.log"
    assert launch.stop([dies], 1.0, start) is None and dies.status == "died"  # stopping a dead one changes nothing
