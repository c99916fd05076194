"""The main job's report opens with the answer, on a real short session (issue 46 item 5).

A real local session (venue emulator over TLS, both feeds, strategy, paper execution, capture), run as `invoke
bench` runs it (``python -m caerus session``, report on), with a strategy config of its own. Its report and its
printed output must open with the strategy's paper fills and markouts with their n, equal to what the paper engine
recorded (``paper.json``), and with PnL against latency from the backtest of its own captured books at its own
latency: the numbers in the report are the ones in the backtest's ``result.json``, which must have run with the
session's measured latency and the session's strategy settings. A session without a capture store says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html import escape
from pathlib import Path

import pytest

from caerus.report import answer, pricing, tables

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
HORIZONS = ("100ms", "1000ms", "5000ms")  # the paper transport's default markout horizons


def _run_session(base: Path, duration: float, *extra: str) -> tuple[Path, str]:
    shm = Path("/dev/shm") / f"caerus-test-answer-{os.getpid()}-{base.name}"
    shm.mkdir(exist_ok=True)
    out = base / "sessions"
    cmd = [sys.executable, "-m", "caerus", "session", "--duration", str(duration), "--out", str(out), "--reports",
           str(base / "reports"), "--progress", "lines", "--stop-grace", "15", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)}
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    found = [p for p in out.iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0], res.stdout


@pytest.fixture(scope="module")
def traded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    base = tmp_path_factory.mktemp("answer")
    # a lower entry threshold than the default's, so a short session trades, and so the backtest must have read
    # the session's own strategy config to make the same decisions
    cfg = base / "strategy.toml"
    cfg.write_text("entry_bps = 2.0\nexit_bps = 0.5\ncooldown_ms = 300.0\n")
    yield _run_session(base, 15, "--strategy-config", str(cfg))


def _opening(session: Path) -> str:
    md = (session / "report.md").read_text()
    return md[md.index(f"## {answer.TITLE}"):md.index("## The session")]


def _usd(x: float) -> str:
    return f"{x:+,.4f}"


def test_the_report_and_the_printed_headline_open_with_the_answer(traded: tuple[Path, str]) -> None:
    session, stdout = traded
    md = (session / "report.md").read_text()
    assert md.startswith(f"# Session {session.name}\n\n## {answer.TITLE}\n")  # the first section
    html = (session / "report.html").read_text()
    assert html.index(escape(answer.TITLE)) < html.index("<h2>The session</h2>") < html.index("<h2>Headline</h2>")
    # the console: the answer first, then the headline table (tick-to-eval leading it)
    assert stdout.index(answer.TITLE) < stdout.index("PnL against latency") < stdout.index(
        tables.label("tick_to_eval")) < stdout.index("The path's headline is tick-to-eval")


def test_the_backtest_ran_on_the_sessions_books_latency_and_strategy_config(traded: tuple[Path, str]) -> None:
    session, _ = traded
    run = json.loads((session / pricing.DIR / pricing.RUN).read_text())
    assert run["returncode"] == 0, run
    result = json.loads((session / pricing.DIR / pricing.RESULT).read_text())
    a = result["assumptions"]
    assert a["latency"]["source"].startswith(f"measured: session {session.name}")  # LatencyModel.from_session
    assert a["latency"]["segments"]["seen_to_decision"]["origin"].startswith(f"measured: session {session.name}")
    assert a["strategy"]["entry_bps"] == 2.0 and a["strategy"]["cooldown_ms"] == 300.0  # the session's config
    assert a["data"]["source"].startswith(f"session {session.name}: chDB store")
    assert a["data"]["start_ns"] is not None  # from the live strategy's start
    assert [p["point"] for p in result["latency_points"]["points"]] == ["0", "p50", "p99", "2x"]


def test_paper_fills_and_markouts_with_their_n_are_the_paper_engines(traded: tuple[Path, str]) -> None:
    session, _ = traded
    paper = json.loads((session / "paper.json").read_text())
    acct = paper["venues"]["hyperliquid"]  # one instrument: its accounts are the session's
    assert acct["fills"] > 0, "the session traded nothing: nothing to compare"
    opening = _opening(session)
    marks = acct["markouts"]

    def cell(h: str) -> str:
        m = marks[h]
        mean = "-" if m["mean_bps"] is None else f"{m['mean_bps']:+.2f}"
        pending = f"; {m['pending']:,} pending" if m["pending"] else ""
        return f"{mean} (n={m['n']:,}{pending})"

    row = (f"| the session: its paper engine's fills (paper.json) | {paper['engine']['orders']:,} | "
           f"{acct['fills']:,} | {_usd(acct['total_pnl'])} | {_usd(acct['realized'])} | {acct['fees']:,.4f} | "
           + " | ".join(cell(h) for h in HORIZONS) + " |")
    assert row in opening, opening


def test_pnl_against_latency_and_the_backtests_markouts_are_its_result_json(traded: tuple[Path, str]) -> None:
    session, _ = traded
    result = json.loads((session / pricing.DIR / pricing.RESULT).read_text())
    opening = _opening(session)
    points = {p["point"]: p for p in result["latency_points"]["points"]}
    zero = points["0"]["pnl_marked"]
    for p in points.values():
        vs = "-" if p["point"] == "0" else _usd(p["pnl_marked"] - zero)
        rate = "-" if p["fill_rate"] is None else f"{p['fill_rate']:.0%}"
        mk = "-" if p["markout_1s_bps"] is None else f"{p['markout_1s_bps']:+.2f}"
        row = (f"| {p['point']} | {p['label']} | {p['orders']:,} | {p['fills']:,} | {rate} | "
               f"{_usd(p['pnl_marked'])} | {vs} | {p['fees']:,.4f} | {mk} |")
        assert row in opening, (row, opening)
    total = result["metrics"]["total"]
    for h in HORIZONS:
        m = total["markouts"][h]
        mean = "-" if m["mean_bps"] is None else f"{m['mean_bps']:+.2f}"
        assert f"{mean} (n={m['n']:,})" in opening, h
    lat = result["assumptions"]["latency"]["order_path"]
    assert (f"at this session's p50 order path ({tables.fmt_ns(lat['p50_ns'])}) and "
            f"{_usd(points['p99']['pnl_marked'])} at its p99 ({tables.fmt_ns(lat['p99_ns'])})") in opening
    assert f"{total['orders']:,} | {total['fills']:,} | {_usd(total['pnl']['marked'])} |" in opening


def test_a_session_without_capture_says_it_could_not_price_latency(tmp_path: Path) -> None:
    session, stdout = _run_session(tmp_path, 3, "--no-capture")
    opening = _opening(session)
    assert "PnL against latency was not computed: the session folder has no capture store" in opening
    assert "| p50 |" not in opening and not (session / pricing.DIR).exists()
    assert "not computed: the session folder has no capture store" in stdout
