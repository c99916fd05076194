"""`caerus backtest` as a user runs it: the fleet's latency by default, named on stdout and in result.json; ZERO only
when asked for, and named; PnL at the latency points (0, p50, p99, 2x) in every result (stdout, result.json,
report.html). Real subprocesses on the offline market."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from caerus.research.backtest.latency import DEFAULT_PROFILE

ROOT = Path(__file__).resolve().parents[3]


def _backtest(out: Path, *args: str) -> tuple[str, dict]:
    res = subprocess.run([sys.executable, "-m", "caerus", "backtest", "--offline", "60", "--market-seed", "2",
                          "--out", str(out), *args], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout, json.loads((out / "result.json").read_text())


def test_the_default_is_the_fleets_latency_and_every_result_prices_the_latency_points(tmp_path: Path) -> None:
    stdout, doc = _backtest(tmp_path / "d")
    lines = stdout.splitlines()
    assert lines[0].startswith("latency: profile fleet-2vcpu") and "ZERO" not in lines[0]
    assert doc["assumptions"]["latency"]["zero"] is False
    assert doc["assumptions"]["latency"]["headline"] == lines[0]
    prof = json.loads(DEFAULT_PROFILE.read_text())["order_path"]
    pts = doc["latency_points"]["points"]
    assert [p["point"] for p in pts] == ["0", "p50", "p99", "2x"]
    assert [p["order_path_ns"] for p in pts] == [0, prof["p50_ns"], prof["p99_ns"], None]
    start = lines.index(next(x for x in lines if x.startswith("PnL against latency")))
    for p, line in zip(pts, lines[start + 1:start + 5], strict=True):
        assert line.strip().startswith(f"{p['point']}:") and f"marked PnL {p['pnl_marked']:.4f} USD" in line
    html = (tmp_path / "d" / "report.html").read_text()
    assert "PnL against latency" in html and "profile fleet-2vcpu" in html and "Hyperliquid block" in html


def test_zero_latency_is_an_option_named_in_the_output(tmp_path: Path) -> None:
    for k, flag in enumerate((["--zero-latency"], ["--latency", "0"])):
        stdout, doc = _backtest(tmp_path / f"z{k}", *flag, "--no-html")
        assert stdout.splitlines()[0] == "latency: ZERO (optimistic; not the fleet's)"
        assert doc["assumptions"]["latency"]["zero"] is True
        assert doc["assumptions"]["latency"]["headline"] == "latency: ZERO (optimistic; not the fleet's)"
