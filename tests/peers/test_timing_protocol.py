"""The timing protocol (benchmarks/protocol, issue 49) holds for the numba peer as benchmarks/backtest_speed runs it:
every numba dispatcher hftbacktest's timed region calls (the rule, the backtester's jitclass constructor and
methods, the state values' accessors) compiled before timing started, for both of its backtesters; every contender
ran the same number of repetitions; and both backtesters sent caerus' orders. A warm-up that leaves out a step of the
timed region (``hbt.state_values``: the call whose compilation used to be timed) is caught, and the benchmark refuses
that sample."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import backtest_speed, protocol
from caerus.research.backtest import sources
from caerus.strategy.config import StrategyConfig

SECONDS = "120"  # of offline market: ~14k books, orders on both sides of the market
REPEAT = 2


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any] | protocol.ProtocolError]:
    """One `python -m benchmarks.backtest_speed` run (this venv's python as the peers' venv): its JSON, or the
    ProtocolError it stopped with (each test then fails saying so)."""
    out = tmp_path_factory.mktemp("bt") / "bt.json"
    mp = pytest.MonkeyPatch()
    mp.setenv("CAERUS_PEERS_VENV", sys.prefix)  # the venv running these tests is the peers' venv
    try:
        assert backtest_speed.main(["--seconds", SECONDS, "--repeat", str(REPEAT), "--json", str(out)]) == 0
        yield json.loads(out.read_text())
    except protocol.ProtocolError as exc:
        yield exc
    finally:
        mp.undo()


def _doc(bench: dict[str, Any] | protocol.ProtocolError) -> dict[str, Any]:
    assert not isinstance(bench, protocol.ProtocolError), f"the benchmark broke the protocol: {bench}"
    return bench


@pytest.mark.timeout(900)
def test_every_dispatcher_the_timed_region_calls_compiled_before_timing(
        bench: dict[str, Any] | protocol.ProtocolError) -> None:
    hft = _doc(bench)["extra"]["hftbacktest"]
    assert set(hft) == {"hashmap", "roivec"}
    for kind, h in hft.items():
        assert h["compiled_in_timed_regions"] == 0, kind
        before, after = h["signatures_before_timing"], h["signatures_after_timing"]
        # what the region calls from Python and what the rule calls: compiled by the warm-up
        cls = "HashMapMarketDepthBacktest" if kind == "hashmap" else "ROIVectorMarketDepthBacktest"
        for name in ("rule", f"{cls}.__init__", f"{cls}.state_values", f"{cls}.close", f"{cls}.wait_next_feed",
                     f"{cls}.submit_buy_order", f"{cls}.submit_sell_order"):
            assert before[name] >= 1, (kind, name)
        assert after == before, kind  # no dispatcher gained a signature while timed
        assert h["warm_up"]["compiled"] and h["warm_up"]["steps"] == ["rule", "state_values", "close"]


@pytest.mark.timeout(900)
def test_every_contender_ran_the_same_repetitions_and_both_backtesters_sent_caerus_orders(
        bench: dict[str, Any] | protocol.ProtocolError) -> None:
    run = _doc(bench)
    entries = run["extra"]["protocol"]
    assert [e["contender"] for e in entries] == [backtest_speed.CAERUS, backtest_speed.CAERUS_LOOP,
                                                 *backtest_speed.BACKTESTERS.values()]
    assert {e["repetitions"] for e in entries} == {REPEAT}
    assert all(len(e["seconds"]) == REPEAT and e["statistic"] == protocol.STATISTIC for e in entries)
    assert all(e["warm_up_s"] is not None and e["warm_up_s"] > 0 for e in entries)
    for h in run["extra"]["hftbacktest"].values():
        assert h["agreement"]["identical"] and h["orders"] == run["extra"]["orders"] > 5, h["agreement"]
    assert run["ratios"]["caerus_over_faster_hftbacktest"] == min(run["ratios"]["caerus_over_hashmap"],
                                                                  run["ratios"]["caerus_over_roivec"])


@pytest.mark.timeout(900)
def test_a_warm_up_without_state_values_compiles_it_in_the_timed_region_and_is_refused() -> None:
    loaded = sources.offline_market(60.0, 1, market="fixed-lag")
    ev = backtest_speed.distinct_receive_times(loaded.events)
    worker = backtest_speed.PeerWorker(Path(sys.executable), ev, backtest_speed.rule_params(StrategyConfig(),
                                                                                             1_000_000))
    try:
        warm = worker.call("warm_up", "hashmap", skip=["state_values"])
        assert warm["steps"] == ["rule", "close"]
        ans = worker.call("run", "hashmap")
        assert any("state_values" in name for name in ans["compiled_in_timed_region"]), ans["compiled_in_timed_region"]
        assert ans["signatures_after_timing"]["HashMapMarketDepthBacktest.state_values"] > \
            ans["signatures_before_timing"]["HashMapMarketDepthBacktest.state_values"]
        with pytest.raises(protocol.ProtocolError, match="compiled inside the timed region"):
            backtest_speed.compiled_check("hftbacktest HashMapMarketDepthBacktest", ans)
        again = worker.call("run", "hashmap")  # compiled now: the next region is clean
        assert again["compiled_in_timed_region"] == []
        backtest_speed.compiled_check("hftbacktest HashMapMarketDepthBacktest", again)
    finally:
        worker.close()
