"""The naive/model A/B windows (caerus.strategy.ab), the config that turns it on, and paper markouts per arm."""

from __future__ import annotations

import pytest

from caerus.config import ConfigError
from caerus.execution.paper_account import PaperAccount
from caerus.strategy.ab import AbWindows, arm_at
from caerus.strategy.config import AB_DEFAULT_WINDOW_S, StrategyConfig


def test_windows_alternate_from_t0_and_split_the_time_between_the_arms() -> None:
    w = AbWindows(t0=1_000, window_ns=10)
    assert [w.arm(t) for t in (1_000, 1_009, 1_010, 1_019, 1_020, 1_035)] == [0, 0, 1, 1, 0, 1]
    assert w.arm(1_035) == arm_at(1_000, 10, 1_035)
    assert w.next_edge(1_000) == 1_010 and w.next_edge(1_019) == 1_020
    assert w.time_per_arm(1_000) == (0, 0)
    assert w.time_per_arm(1_007) == (7, 0)
    assert w.time_per_arm(1_013) == (10, 3)
    assert w.time_per_arm(1_045) == (25, 20)
    assert sum(w.time_per_arm(1_999)) == 999


def test_signal_ab_config() -> None:
    ab = StrategyConfig(signal="ab", model="m.json")
    assert ab.uses_model and ab.ab_window_ns == int(AB_DEFAULT_WINDOW_S * 1e9)
    assert StrategyConfig(signal="model", model="m.json", signal_ab_window_s=5).ab_window_ns == 5_000_000_000
    assert StrategyConfig(signal="model", model="m.json").ab_window_ns == 0
    assert StrategyConfig().ab_window_ns == 0 and not StrategyConfig().uses_model


@pytest.mark.parametrize("fields,message", [
    ({"signal": "ab"}, 'signal = "ab" needs model = PATH'),
    ({"signal_ab_window_s": 5.0}, 'set signal = "ab"'),
    ({"signal": "ab", "model": "m.json", "mode": "bench"}, "latency_arb signal"),
])
def test_signal_ab_config_rules(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StrategyConfig(**fields).check()


def test_paper_markouts_are_summed_per_deciding_arm() -> None:
    acct = PaperAccount(0.0, (100.0,))
    acct.on_book(100.0, 0)
    acct.fill(1, 100.0, 1.0, 10, arm=0)  # naive buy at 100
    acct.fill(-1, 100.0, 1.0, 20, arm=1)  # model sell at 100
    acct.on_book(101.0, 50)
    acct.settle(1_000_000_000)
    assert acct.arm_fills == [1, 1]
    assert acct.arm_markout_n == [[1], [1]]
    assert acct.arm_markout_mean_bps(0, 0) == pytest.approx(100.0)
    assert acct.arm_markout_mean_bps(1, 0) == pytest.approx(-100.0)
    assert acct.markout_mean_bps(0) == pytest.approx(0.0)
    arms = acct.summary()["arms"]
    assert arms["model"]["fills"] == 1 and arms["naive"]["markouts"]["100ms"]["n"] == 1
    assert "arms" not in PaperAccount(0.0, (100.0,)).summary()  # no model fill: no per-arm block
