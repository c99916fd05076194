"""The backtest of signal = "ab" is the live A/B replayed: windows from the replay's start alternate the naive rule
(first) and the model, each order carries the arm that decided it and lies in that arm's window, and the results
split orders, fills and markouts by arm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from caerus.research.backtest import engine, results
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel
from caerus.strategy.ab import arm_at
from caerus.strategy.config import StrategyConfig
from caerus.wire import Venue
from tests.unit.research.models.conftest import known_edge_model, line

# long computations (training, calibration round trips, whole pipelines) over module fixtures: the fast tier
# leaves the whole module out
pytestmark = pytest.mark.slow

HL = int(Venue.HYPERLIQUID)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return known_edge_model(tmp_path_factory.mktemp("model"))


def _run(cfg: StrategyConfig, seed: int = 2) -> engine.RunOutput:
    ln = line(seed)
    spec = engine.RunSpec(cfg, ln.loaded.instruments, LatencyModel.constant(0, 300_000), FillRules(), seed)
    return engine.run(ln.loaded.events, spec)


def _orders(out: engine.RunOutput) -> list[tuple]:
    o = out.orders
    return list(zip(*(o[c].tolist() for c in engine.ORDER_COLUMNS if c != "arm"), strict=True))


def test_ab_windows_alternate_the_arms_as_live(model_file: Path) -> None:
    window_s = 30.0
    ab = _run(StrategyConfig(signal="ab", model=str(model_file), signal_ab_window_s=window_s))
    naive = _run(StrategyConfig())
    model = _run(StrategyConfig(signal="model", model=str(model_file)))
    arm = ab.orders["arm"].astype(int)
    t0, w = ab.t_first, int(window_s * 1e9)
    assert ab.ab is not None and ab.ab.t0 == t0
    assert (arm == 0).sum() >= 3 and (arm == 1).sum() >= 3, arm
    # every order lies in its arm's window (the arm turns before the first decision of a window)
    assert [arm_at(t0, w, t) for t in ab.orders["t_seen"].tolist()] == arm.tolist()
    assert not naive.orders["arm"].any() and model.orders["arm"].all()
    # the A/B's orders are neither run's alone: each arm decides only in its windows
    assert _orders(ab) != _orders(naive) and _orders(ab) != _orders(model)
    m = results.summarise(ab, FillRules(), HL, ["BTC"])
    arms = m["arms"]
    assert arms["naive"]["orders"] + arms["model"]["orders"] == len(arm)  # type: ignore[index]
    assert arms["naive"]["time_share"] + arms["model"]["time_share"] == pytest.approx(1.0)  # type: ignore[index]
    fills = ab.orders["fill_qty"] > 0
    n1s = arms["model"]["markouts"]["1000ms"]["n"]  # type: ignore[index]
    assert 0 < n1s <= int((fills & (arm == 1)).sum())
    assert "arms" not in results.summarise(naive, FillRules(), HL, ["BTC"])


def test_an_ab_window_longer_than_the_run_is_the_naive_rule(model_file: Path) -> None:
    """The first window is the naive rule's: an A/B whose first window outlasts the run replays the naive rule's
    orders exactly (the model object in naive mode is the naive rule)."""
    ab = _run(StrategyConfig(signal="ab", model=str(model_file), signal_ab_window_s=3600.0))
    naive = _run(StrategyConfig())
    assert len(naive.orders["side"]) >= 3
    assert _orders(ab) == _orders(naive)
    assert not np.asarray(ab.orders["arm"]).any()
