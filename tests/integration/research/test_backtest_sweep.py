"""Sweeps in worker processes: resumable results keyed by a hash, parameters chosen on the train range only, and
`invoke sweep` end to end with two workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from caerus.research.backtest import sweep

ROOT = Path(__file__).resolve().parents[3]


def test_a_sweep_resumes_and_chooses_on_train_only(tmp_path: Path) -> None:
    source = sweep.SourceSpec("offline", offline_s=120.0, market_seed=2)
    grid = sweep.parse_grid(["entry_bps=3,8"])
    args = (grid, source, ("0", "60"), ("60", "120"), "const:1000000", {}, 1, tmp_path, 1)
    doc = sweep.run_sweep(*args)
    runs = sorted((tmp_path / "runs").glob("*.json"))
    assert len(runs) == 4
    mtimes = [p.stat().st_mtime_ns for p in runs]
    again = sweep.run_sweep(*args)
    assert [p.stat().st_mtime_ns for p in runs] == mtimes  # nothing re-run: every result existed
    assert again == doc
    best_train = max(doc["grid"], key=lambda r: r["train"]["pnl_marked"])
    assert doc["chosen"]["params"] == best_train["params"] and doc["chosen"]["by"] == "marked PnL on train"
    assert json.loads((tmp_path / "sweep.json").read_text())["chosen"]["test"] == best_train["test"]
    html = (tmp_path / "sweep.html").read_text()
    assert "Chosen on train only" in html and "test 60..120" in html


def test_invoke_sweep_runs_the_grid_in_two_workers(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    res = subprocess.run([sys.executable, "-m", "invoke", "sweep", "--offline", "90", "--param", "entry_bps=4,6",
                          "--param", "ewma_half_life_s=1,3", "--train", "0..45", "--test", "45..90", "--latency",
                          "1ms", "--workers", "2", "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "sweep.json").read_text())
    assert len(doc["grid"]) == 4 and len(list((out / "runs").glob("*.json"))) == 8
    assert "chosen on train" in res.stdout


def test_invoke_sweep_over_a_capture_store_in_worker_processes(tmp_path: Path) -> None:
    """A session-source sweep: the parent reads the chDB store before the pool starts (its threads exist), so a
    forked worker would inherit their locks held and hang on its first query; workers are spawned. Bounded by the
    subprocess timeout, the sweep killed by PID if it ever hangs."""
    from caerus.sim.core.market import MarketConfig
    from tests.fixtures.research_books import offline_books, write_session

    session = write_session(offline_books(MarketConfig(seed=4), minutes=2.0), tmp_path / "s")
    out = tmp_path / "sw"
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "sweep", "--session", str(session), "--param",
                             "entry_bps=4,6", "--train", "0..60", "--test", "60..120", "--latency", "1ms",
                             "--workers", "2", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            start_new_session=True)  # its own process group: the sweep and its workers
    try:
        stdout, stderr = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group we started, by its leader's PID: hung workers too
        proc.communicate(timeout=30)
        raise AssertionError("invoke sweep over a capture store did not finish in 300 s (a hung worker)") from None
    assert proc.returncode == 0, stderr[-2000:]
    doc = json.loads((out / "sweep.json").read_text())
    assert len(doc["grid"]) == 2 and len(list((out / "runs").glob("*.json"))) == 4
    assert all(r["train"]["books"] > 0 and r["test"]["books"] > 0 for r in doc["grid"])
    assert "chosen on train" in stdout
