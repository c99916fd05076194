"""The research verdict: too little data is insufficient, never YES; a control that says YES fails the run loudly;
the old optimistic execution makes the lag-0 control fail; the test range is never read in training; the buckets add
up to the backtest's own numbers; the run is deterministic; a real imported pair is named and matched as it trades.
The positive and negative controls end to end (known-edge YES with every placebo NO, no-lead NO) are the docs'
worked example, run by tests/unit/research/test_worked_example.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from caerus import cli
from caerus.research.backtest import results
from caerus.research.backtest.events import BookEvents
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.research.models.data import Timeline
from caerus.research.verdict import pipeline, placebos
from caerus.research.verdict.pnl import FEES, MARK0, MARKOUT_MS, NOTIONAL, PNL, ROUND_TRIPS, WINS
from caerus.strategy.config import StrategyConfig
from caerus.wire import Venue
from tests.unit.research.models.conftest import line

# long computations (training, calibration round trips, whole pipelines) over module fixtures: the fast tier
# leaves the whole module out
pytestmark = pytest.mark.slow

HL = int(Venue.HYPERLIQUID)
#: small but enough: 3 seeds x 6 min, blocks of 60 s (the tests' markets have no regimes), 4 blocks needed
SMALL = pipeline.VerdictOptions(folds=2, bootstrap=300, min_block_s=60.0, min_blocks=4)
LATENCY = LatencyModel.constant(1_000_000, 300_000)


def test_the_old_optimistic_execution_makes_the_lag_zero_control_fail_the_run(tmp_path: Path) -> None:
    """What the controls are for: with the old rules (zero latency, an IOC filling at the book between two blocks)
    the lag-0 market -- where Hyperliquid has already moved when any order arrives -- looks profitable, and the run
    says CONTROL FAILED instead of trusting the market's YES."""
    opts = replace(SMALL, controls=("lag_zero",), latency_points=False)
    doc = pipeline.run(pipeline.market_source("known-edge", (1, 2, 3), 6.0), opts, LatencyModel.zero(),
                       FillRules(blocks=False, deplete=False), tmp_path)
    assert [v["verdict"] for v in doc["variants"]] == [pipeline.YES, pipeline.YES]
    assert doc["verdict"] == pipeline.CONTROL_FAILED and "lag_zero" in doc["why"]


def _run(market: str, tmp: Path, seeds: tuple[int, ...] = (1, 2, 3), minutes: float = 6.0,
         opts: pipeline.VerdictOptions = SMALL) -> dict:
    return pipeline.run(pipeline.market_source(market, seeds, minutes), opts, LATENCY, FillRules(), tmp)


def test_one_seed_of_one_minute_is_insufficient_never_yes(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    """The issue's `--seeds 1 --minutes 1` printed a zero-width interval and YES; now it cannot say YES."""
    rc = cli.main(["verdict", "--market", "known-edge", "--seeds", "1", "--minutes", "1", "--folds", "2",
                   "--bootstrap", "200", "--no-latency-points", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ANSWER: INSUFFICIENT DATA" in out
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert doc["verdict"] == pipeline.INSUFFICIENT
    assert not any(v["verdict"] == pipeline.YES for v in doc["variants"])


def test_a_control_that_says_yes_fails_the_run_loudly(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A broken placebo (the "decoupled" follower left coupled) on a market with an edge says YES: the run's answer
    is CONTROL FAILED and the command exits 3, whatever the market says."""
    monkeypatch.setattr(placebos, "decoupled", lambda events, *a, **k: events)
    rc = cli.main(["verdict", "--market", "known-edge", "--seeds", "3", "--minutes", "6", "--folds", "2",
                   "--bootstrap", "300", "--min-block-s", "60", "--min-blocks", "4", "--controls", "decoupled",
                   "--latency", "1ms", "--no-latency-points", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 3
    assert "ANSWER: CONTROL FAILED" in captured.out and "CONTROL FAILED" in captured.err
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert [v["verdict"] for v in doc["variants"]] == [pipeline.YES, pipeline.YES]


def test_data_after_the_split_changes_nothing_in_training(tmp_path: Path) -> None:
    """The variant's model trained on whole timelines or on the same timelines cut at the split: the same file."""
    lines = [line(s, 4.0, 0.6, "known-edge") for s in (1, 2)]
    cut = []
    for ln in lines:
        ev = ln.loaded.events
        kept = ev.take(np.flatnonzero(ev.t_exchange < ln.t_split))
        assert len(kept) < len(ev)
        cut.append(Timeline(ln.name, replace(ln.loaded, events=kept), ln.t_split))
    docs = []
    for k, ls in enumerate((lines, cut)):
        src = pipeline.Source("test", "test", lambda ls=ls: [(x.name, x.loaded) for x in ls])
        opts = replace(SMALL, controls=(), latency_points=False)
        monkey = pipeline.variant_books
        pipeline.variant_books = lambda s, v, o, ls=ls: (ls, {})  # type: ignore[assignment]
        try:
            docs.append(pipeline.run(src, opts, LATENCY, FillRules(), tmp_path / str(k)))
        finally:
            pipeline.variant_books = monkey
    a, b = (json.loads(Path(d["variants"][0]["model"]["path"]).read_text()) for d in docs)
    assert a["hash"] == b["hash"] and a == b


def test_buckets_add_up_to_the_backtests_own_numbers() -> None:
    ln = line(3, 4.0, 0.5, "known-edge")
    rules = FillRules()
    b, out = pipeline.backtest_range(ln, StrategyConfig(entry_bps=8.0), LATENCY, rules, 3, 10_000_000_000)
    got = results.summarise(out, rules, HL, ["BTC"])["total"]
    assert b.orders == got["orders"] > 10
    assert b.fills == got["fills"] and b.round_trips == got["round_trips"]
    assert b.table[:, NOTIONAL].sum() == pytest.approx(got["turnover"]["notional"])
    assert b.table[:, WINS].sum() / b.table[:, ROUND_TRIPS].sum() == pytest.approx(got["hit_rate"])
    assert b.table[:, FEES].sum() == pytest.approx(got["pnl"]["fees"])
    j = MARKOUT_MS.index(1000.0)
    mk = got["markouts"]["1000ms"]
    assert b.table[:, MARK0 + 2 * j + 1].sum() == mk["n"]
    assert b.table[:, MARK0 + 2 * j].sum() / mk["n"] == pytest.approx(mk["mean_bps"])
    # PnL: the backtest marks the open position at the mid; the verdict closes it at the touch, paying the fee
    assert b.table[:, PNL].sum() == pytest.approx(b.pnl)
    assert b.pnl <= got["pnl"]["marked"] + 1e-9


def test_the_same_options_give_the_same_document(tmp_path: Path) -> None:
    opts = replace(SMALL, controls=("leader_delayed",), latency_points=False)
    a = _run("known-edge", tmp_path / "a", seeds=(1, 2), minutes=4.0, opts=opts)
    b = _run("known-edge", tmp_path / "b", seeds=(1, 2), minutes=4.0, opts=opts)
    for d in (a, b):
        for v in d["variants"]:
            v.get("model", {}).pop("path", None)
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_events_are_untouched_by_the_controls() -> None:
    """Building a control never edits the market's own books (arrays are copied)."""
    ln = line(1, 2.0, 0.6, "known-edge")
    before = {c: getattr(ln.loaded.events, c).copy() for c in ("t_exchange", "bid_px", "venue")}
    for f in (placebos.decoupled, placebos.leader_delayed):
        out: BookEvents = f(ln.loaded.events)
        assert len(out) == len(ln.loaded.events)
    for c, v in before.items():
        assert np.array_equal(getattr(ln.loaded.events, c), v)


def test_a_real_imported_pair_names_its_follower_matches_it_continuously_and_is_insufficient(tmp_path: Path) -> None:
    """USD-M BTCUSDT as the leader, COIN-M BTCUSD_PERP in the follower's slot (cut from the real captures): the
    verdict names the true follower, turns Hyperliquid's block clock off for it (a Binance product matches
    continuously), charges the fee given, reports the pair's lead-lag on the training range and, on seconds of data,
    answers INSUFFICIENT DATA -- never YES."""
    from caerus.data.imports import ImportOptions, run_import
    from caerus.research.verdict import app

    real = Path(__file__).parents[3] / "fixtures" / "data" / "real"
    store = tmp_path / "pair"
    run_import(store, [real / "usdm_btcusdt_20240808_head.gz"], ImportOptions(jobs=1, instrument="BTC"), out=None)
    run_import(store, [real / "cm_btcusd_perp_20240808_head.gz"],
               ImportOptions(jobs=1, instrument="BTC", slot="follower"), out=None)
    assert app.follower_market(store) == "binance coinm BTCUSD_PERP"
    rc = cli.main(["verdict", "--store", str(store), "--fee-bps", "5", "--folds", "2", "--bootstrap", "200",
                   "--no-latency-points", "--out", str(tmp_path / "v")])
    doc = json.loads((tmp_path / "v" / "verdict.json").read_text())
    assert rc == 0 and doc["verdict"] == pipeline.INSUFFICIENT
    assert doc["facts"]["follower"] == "binance coinm BTCUSD_PERP"
    assert doc["fills"]["blocks"] is False and doc["fills"]["taker_fee_bps"]["hyperliquid"] == 5.0
    assert "binance coinm BTCUSD_PERP" in doc["source"] and "lead_lag" in doc["facts"]
    assert not any(v["verdict"] == pipeline.YES for v in doc["variants"])
