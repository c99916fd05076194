"""The out-of-sample comparison (caerus.research.models.oos, benchmarks/model_oos.py): the test range is never read
in training, the per-minute blocks reproduce the backtest's own numbers, the bootstrap is paired, the run is
deterministic."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from caerus.research.backtest import results
from caerus.research.backtest.fills import FillRules
from caerus.research.models import oos
from caerus.research.models.data import Timeline
from caerus.strategy.config import StrategyConfig
from caerus.wire import Venue
from tests.unit.research.models.conftest import line

QUICK = oos.OosOptions(seeds=(1, 2), minutes=3.0, folds=2, bootstrap=200)


def test_data_after_the_split_changes_nothing_in_the_model() -> None:
    """Trained on the full timelines or on the same timelines cut at the split: the same model file, hash and all
    -- the held-out range is never read by training, selection or the entry threshold."""
    opts = replace(QUICK, train_fraction=0.6)
    full = [line(s, 4.0, 0.6) for s in (1, 2)]
    cut = []
    for ln in full:
        ev = ln.loaded.events
        kept = ev.take(np.flatnonzero(ev.t_exchange < ln.t_split))
        assert len(kept) < len(ev)
        cut.append(Timeline(ln.name, replace(ln.loaded, events=kept), ln.t_split))
    a = oos.train_model(full, opts, "default")
    b = oos.train_model(cut, opts, "default")
    assert a["hash"] == b["hash"] and a == b
    # and the split matters: moving it changes the model
    moved = [Timeline(ln.name, ln.loaded, ln.t_split - 30_000_000_000) for ln in full]
    assert oos.train_model(moved, opts, "default")["hash"] != a["hash"]


def test_minute_blocks_add_up_to_the_backtests_own_metrics() -> None:
    ln = line(3, 4.0, 0.5)
    t0 = ln.t_split
    arm, out = oos.backtest_arm(ln.loaded.events, ln.loaded.instruments, StrategyConfig(), t0, QUICK, 3)
    got = results.summarise(out, FillRules(clock="publish"), int(Venue.HYPERLIQUID), ["BTC"])["total"]
    assert arm.orders == got["orders"] > 10
    assert arm.fills == got["fills"] and arm.round_trips == got["round_trips"]
    assert arm.blocks[:, 0].sum() == pytest.approx(got["pnl"]["marked"], abs=1e-9)
    assert arm.pnl == pytest.approx(got["pnl"]["marked"], abs=1e-9)
    assert arm.blocks[:, 3].sum() / arm.blocks[:, 2].sum() == pytest.approx(got["hit_rate"])
    assert arm.blocks[:, 1].sum() == pytest.approx(got["turnover"]["notional"])
    j = oos.MARKOUT_MS.index(1000.0)
    mk = got["markouts"]["1000ms"]
    assert arm.blocks[:, 5 + 2 * j].sum() == mk["n"]
    assert arm.blocks[:, 4 + 2 * j].sum() / mk["n"] == pytest.approx(mk["mean_bps"])
    assert len(arm.blocks) == int(np.ceil((out.t_last - t0) / oos.BLOCK_NS))


def _arm(blocks: np.ndarray) -> oos.ArmRun:
    return oos.ArmRun(1, 1, 1, 1, 1.0, float(blocks[:, 0].sum()), blocks)


def test_the_bootstrap_is_paired_by_minute() -> None:
    """Model = naive + 0.5 USD every minute: each arm's PnL interval is wide, the difference's is exactly 0.5 x
    minutes (the same minutes are drawn for both rules); an unrelated model gives a wide difference."""
    rng = np.random.default_rng(4)
    nb = 40
    naive = np.zeros((nb, 4 + 2 * len(oos.MARKOUT_MS)))
    naive[:, 0] = rng.normal(0.0, 3.0, nb)
    naive[:, 2] = 2.0
    naive[:, 3] = 1.0
    naive[:, 4::2] = rng.normal(0.0, 1.0, (nb, len(oos.MARKOUT_MS)))
    naive[:, 5::2] = 1.0
    model = naive.copy()
    model[:, 0] += 0.5
    res = oos.compare({"naive": [_arm(naive)], "model": [_arm(model)]}, QUICK)
    pnl = res["metrics"]["pnl"]
    assert pnl["diff"] == pytest.approx(0.5 * nb)
    assert pnl["diff_ci"] == pytest.approx([0.5 * nb, 0.5 * nb])
    assert pnl["naive_ci"][1] - pnl["naive_ci"][0] > 10.0
    other = model.copy()
    other[:, 0] = rng.normal(0.5, 3.0, nb)
    res = oos.compare({"naive": [_arm(naive)], "model": [_arm(other)]}, QUICK)
    lo, hi = res["metrics"]["pnl"]["diff_ci"]
    assert hi - lo > 10.0


def test_quick_run_is_deterministic_and_reports_both_rules(tmp_path: Path) -> None:
    a = oos.run_market("default", QUICK, tmp_path / "a.json")
    b = oos.run_market("default", QUICK, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    ta, tb = oos.render(a, QUICK), oos.render(b, QUICK)
    assert ta.replace("a.json", "") == tb.replace("b.json", "")
    assert a["samples"]["naive"]["orders"] > 0 and a["samples"]["model"]["orders"] > 0
    for key, _, _ in oos.ROWS:
        assert key in a["metrics"] and len(a["metrics"][key]["diff_ci"]) == 2
    assert "model beats naive on PnL out of sample: " in ta
    assert all(r["t_test_start"] > line(s, 3.0, QUICK.train_fraction).t_split
               for s, r in zip(QUICK.seeds, a["test_ranges"], strict=True))
