"""Consistency with the fleet: a real local session (emulator over TLS, both feeds, strategy, paper execution,
capture) is backtested from its own captured books, with its own timing and the paper transport's fill rules, and
the backtest must reproduce the session's orders and fills.

What must match and why: the replay is *as observed* (caerus.research.backtest.observed): every book that
triggered a live order is read at its captured t_seen and the order takes its captured path (t_decision, t_pickup,
t_sent), every other book is read at the quickest hop the session showed, one reader in publish order with
latest-value reads. Drawn latency cannot do this under CPU load: the book hop's millisecond tail, drawn onto random
books, priced orders off the wrong Hyperliquid book and moved cooldown ends (4 of 4 sessions diverged with one or
two CPU hogs). Stated tolerance: every order identical -- its triggering book (venue, instrument, seq), reason,
side, limit price, quantity, fill outcome, price and quantity, in order. The one thing a session does not capture is
when its strategy, held up by the scheduler, skipped books that triggered nothing; at a divergence the minimal such
stall is searched for (caerus.research.backtest.consistency.reconcile): starting after the previous order was read,
no longer than the longest book hop the session measured, ending when the live trigger was read or when the next
book of the replay's trigger venue replaced it -- or the other books' read times drawn from the session's own book hop
histogram (the EWMA weighs books by the time between reads: an entry a hundredth of a bps from its threshold depends
on them); a divergence no such timing explains fails the test. An exit identical but for its reason (threshold vs
reversal, the signal a hair from the reversal threshold) is let through, at most one in ten orders. A
replay with a changed strategy parameter must not be explained away. Also: `caerus backtest` on the session writes
its JSON and HTML, the same seed gives identical JSON, and a time range with no books is a clear error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from caerus.capture.store import ChdbStore
from caerus.metrics import hdr
from caerus.research.backtest import consistency, fills, latency, observed, runner, sources
from caerus.strategy.config import StrategyConfig

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("a whole-fleet session: the plan pins the hot processes to CPUs")]

ROOT = Path(__file__).resolve().parents[3]
REPLY = 0x80
SHADOW = 0x01


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("bt")
    shm = Path("/dev/shm") / f"caerus-test-bt-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    out = base / "sessions"
    cmd = [sys.executable, "-m", "caerus", "session", "--duration", "20", "--out", str(out), "--reports",
           str(base / "reports"), "--progress", "none", "--no-report", "--stop-grace", "15"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)}
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert res.returncode == 0, f"session failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        found = [p for p in out.iterdir() if p.is_dir()]
        assert len(found) == 1, found
        yield found[0]
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _live_orders(session: Path) -> list[dict[str, object]]:
    store = ChdbStore(session / "capture")
    try:
        df = store.query_df(f"SELECT reason, side, px, qty, trigger_seq, toUInt8(trigger_venue) AS trigger_venue, "
                            f"symbol, trigger_t_recv, outcome, fill_px, fill_qty, t_seen FROM caerus.orders FINAL "
                            f"WHERE bitAnd(flags, {REPLY | SHADOW}) = 0 ORDER BY seq")
    finally:
        store.close()
    return df.to_dict("records")


def _strategy_span(session: Path) -> tuple[int, int]:
    log = hdr.read_hlog(session / "strategy.hlog")
    end = max(iv.start_s + iv.length_s for iv in log.intervals)
    return int(log.start_time_s * 1e9), int(end * 1e9)


def _comparable_end(session: Path, lat: latency.LatencyModel) -> int:
    """Orders read before this could have gone all the way (strategy -> execution -> EXEC ring -> capture): the
    strategy and execution both still ran (their metrics logs' last interval, written after their loops stopped,
    less the longest the strategy was measured to be held up: the session's longest book hop) for the longest order
    path the session measured (t_seen -> t_sent). Near the stop the processes end in any order: under load a replay
    order 3 ms before the strategy's last interval ended had no live counterpart."""
    ends = []
    for name in ("strategy", "execution"):
        log = hdr.read_hlog(session / f"{name}.hlog")
        ends.append(int(max(iv.start_s + iv.length_s for iv in log.intervals) * 1e9))
    path = sum(int(lat.segments[s].values[-1]) for s in ("seen_to_decision", "queue_transit", "pickup_to_sent"))
    return min(ends) - int(lat.segments["book_hop"].values[-1]) - path


def _reconcile(session: Path, strategy: StrategyConfig) -> tuple[consistency.Reconciled, list[dict[str, object]]]:
    lat = observed.model_from_session(session)
    start, end = _strategy_span(session)[0], _comparable_end(session, lat)
    live = [o for o in _live_orders(session) if o["t_seen"] < end]  # orders the replay can compare
    opts = runner.BacktestOptions(strategy=strategy, latency=lat, fills=fills.FillRules.paper(),
                                  start_ns=start)
    max_hop = int(lat.segments["book_hop"].values[-1])
    return consistency.reconcile(sources.from_session(session), opts, live, end, max_hop), live


def test_a_backtest_of_a_session_reproduces_its_paper_orders_and_fills(session: Path) -> None:
    rec, live = _reconcile(session, StrategyConfig())
    assert len(live) >= 4, f"the session traded too little to compare ({len(live)} orders)"
    i = rec.divergence
    assert i is None, (f"order {i} differs and no stall explains it: replay "
                       f"{ {k: rec.orders[i][k] for k in consistency.COMPARED} if i < len(rec.orders) else None}, "
                       f"live { {k: live[i][k] for k in consistency.COMPARED} if i < len(live) else None}; "
                       f"stalls so far {rec.stalls}")
    assert len(rec.orders) == len(live)
    for k, (a, b) in enumerate(zip(rec.orders, live, strict=True)):
        if k in rec.relabelled:  # an exit whose reason alone differs (threshold vs reversal, a hair apart)
            assert consistency.relabelled(a, b), (k, a, b)
        else:
            assert [a[c] for c in consistency.COMPARED] == [b[c] for c in consistency.COMPARED], (k, a, b)
    assert len(rec.relabelled) <= max(1, len(live) // 10), rec.relabelled
    assert [o["t_seen"] for o in rec.orders] == [o["t_seen"] for o in live]  # read when the session read them
    assert len(rec.stalls) <= len(live)  # at most one per order: each is the minimal one at one divergence


def test_a_replay_with_another_strategy_is_not_explained_away(session: Path) -> None:
    rec, _ = _reconcile(session, StrategyConfig(slippage_bps=StrategyConfig().slippage_bps + 3.0))
    assert rec.divergence is not None  # every limit price moved: no stall of the strategy's reads explains that


def test_the_cli_writes_json_html_and_a_latency_sweep_deterministically(session: Path, tmp_path: Path) -> None:
    outs = []
    for k in range(2):
        out = tmp_path / f"o{k}"
        res = subprocess.run([sys.executable, "-m", "caerus", "backtest", "--session", str(session), "--start",
                              "strategy", "--paper", "--latency-from", str(session), "--latency-sweep",
                              "0,10us,100us,1ms,10ms,100ms", "--seed", "3", "--out", str(out)],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             timeout=300, check=False)
        assert res.returncode == 0, res.stderr
        outs.append(out)
    assert (outs[0] / "result.json").read_bytes() == (outs[1] / "result.json").read_bytes()
    sweep = json.loads((outs[0] / "latency_sweep.json").read_text())
    assert [p["added_ns"] for p in sweep["points"]] == [0, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
    html = (outs[0] / "report.html").read_text()
    for needle in ("Assumptions", "measured: session", "seed", "taker fees", "Equity curve", "Markout curves",
                   "Latency sensitivity", "Orders and fills"):
        assert needle in html, needle
    assert html.count("data:image/png;base64,") == 3


def test_a_range_without_books_is_a_clear_error(session: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "caerus", "backtest", "--session", str(session), "--start",
                          "2020-01-01", "--end", "2020-01-02"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False)
    assert res.returncode == 2
    assert "no captured books" in res.stderr and res.stderr.count("\n") == 1
