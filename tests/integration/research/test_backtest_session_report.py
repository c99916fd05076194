"""The session report draws a backtest's latency sweep when the session folder has one (and only then).

Runs in integration: the synthetic session probes the machine (chronyc) as a real one does.
"""

from __future__ import annotations

import json
from pathlib import Path

from caerus.report.render import render_sessions
from caerus.session.synthetic import make_session


def test_the_session_report_shows_the_latency_sweep_of_its_backtest(tmp_path: Path) -> None:
    with_sweep = make_session(tmp_path / "s", intervals=3, samples_per_interval=50, seed=1)
    without = make_session(tmp_path / "s", intervals=3, samples_per_interval=50, seed=2)
    (with_sweep / "backtest").mkdir()
    points = [{"added_ns": a, "pnl_marked": 1.0 - a / 1e8, "fill_rate": 1.0 - a / 2e8, "orders": 10, "fills": 9,
               "pnl_realised": 0.5, "markout_1s_bps": 1.0} for a in (0, 10_000, 1_000_000, 100_000_000)]
    (with_sweep / "backtest" / "latency_sweep.json").write_text(
        json.dumps({"format": 1, "kind": "latency_sweep", "seed": 4, "points": points}))
    render_sessions([with_sweep, without], tmp_path / "reports")
    assert "Latency sensitivity" in (with_sweep / "report.md").read_text()
    assert "seed 4" in (with_sweep / "report.html").read_text()
    assert "Latency sensitivity" not in (without / "report.md").read_text()
