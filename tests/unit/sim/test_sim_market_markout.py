"""The market check (python -m benchmarks.market_markout): the naive rule's paper markouts are reliably positive on
the fixed-lag market and not on the default one, computed offline from the model with the fleet's decision code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import market_markout
from caerus.sim.core.market_config import load_market
from caerus.strategy.config import StrategyConfig


def test_bootstrap_interval_brackets_the_mean() -> None:
    x = np.random.default_rng(1).normal(2.0, 1.0, 400)
    lo, hi = market_markout.bootstrap_ci(x, 0)
    assert lo < x.mean() < hi
    assert hi - lo == pytest.approx(2 * 1.96 / 20, rel=0.2)  # ~ +-1.96 sd / sqrt(n)
    assert np.isnan(market_markout.bootstrap_ci(x[:1], 0)[0])


def test_the_fixed_lag_market_pays_the_naive_rule_by_construction() -> None:
    results = [market_markout.run_seed(load_market("fixed-lag", seed=s, jumps_per_min=30.0), 120.0,
                                       StrategyConfig(), 300_000) for s in (1, 2)]
    _, doc = market_markout.table(results, "fixed-lag")
    assert all(r.fills > 20 for r in results)
    assert doc["reliably_positive"] is True


@pytest.mark.slow
def test_the_default_market_does_not(tmp_path: Path) -> None:
    out = tmp_path / "mk.json"
    assert market_markout.main(["--seeds", "3", "--duration", "200", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["pooled"]["n"] > 200  # the rule still trades
    assert doc["reliably_positive"] is False
    assert doc["pooled"]["ci95"][0] <= 0.0


def test_bad_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert market_markout.main(["--set", "catch_up=2"]) == 2
    assert "catch_up" in capsys.readouterr().err
    assert market_markout.main(["--market", "no-such-market"]) == 2
