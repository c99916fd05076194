"""The fleet plan: core assignment per machine size, SMT siblings, policies, and its round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from caerus.plan import FleetPlan, format_cpu_list, one_thread_per_core, parse_cpu_list, plan_fleet


def test_two_cpu_machine_matches_the_measured_layout() -> None:
    plan = plan_fleet((0, 1), isolated=())
    assert plan.placement("feed-binance").cpus == (0,)
    assert plan.placement("strategy").cpus == plan.placement("execution").cpus == (1,)
    # the strategy yields; the execution, sharing its CPU, sleeps between orders (two yielding pollers on one CPU
    # cost the order path a scheduler slice: benchmarks/wire_to_decision, caerus/plan.py)
    assert plan.placement("strategy").wait_policy == "hybrid"
    assert plan.placement("execution").wait_policy == "sleep"
    assert not plan.isolated
    assert any("not isolated" in n for n in plan.notes)


def test_the_execution_placement_can_be_chosen_where_it_has_no_cpu_of_its_own() -> None:
    assert plan_fleet((0, 1), isolated=(), execution="strategy") == plan_fleet((0, 1), isolated=())
    moved_2 = plan_fleet((0, 1), isolated=(), execution="housekeeping")
    assert moved_2.placement("execution").cpus == (0,) and moved_2.placement("strategy").cpus == (1,)
    assert moved_2.placement("execution").wait_policy == "sleep"
    assert any("execution placement housekeeping" in n for n in moved_2.notes)
    assert not any("execution placement" in n for n in plan_fleet((0,), isolated=()).notes)  # one CPU: nothing said
    # two hot cores: the plan keeps it beside the strategy, housekeeping moves it (sleeping: never poll there)
    two_hot = plan_fleet((0, 1, 2), isolated=(1, 2))
    assert two_hot.placement("execution").cpus == two_hot.placement("strategy").cpus
    moved_plan = plan_fleet((0, 1, 2), isolated=(1, 2), execution="housekeeping")
    moved = moved_plan.placement("execution")
    assert (moved.cpus, moved.wait_policy) == ((0,), "sleep")
    assert any("execution sleeps on housekeeping CPU 0" in n for n in moved_plan.notes)
    assert not any("strategy+execution share" in n for n in moved_plan.notes)  # the notes say where it really runs
    assert any("strategy+execution share the other" in n for n in two_hot.notes)
    # a core of its own is kept, and the plan says the choice was not applied
    own = plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3), execution="housekeeping")
    assert own.placement("execution").dedicated and own.placement("execution").cpus != (0,)
    assert any("execution placement housekeeping not applied" in n for n in own.notes)
    with pytest.raises(ValueError, match="execution placement 'cpu0' is not one of auto, housekeeping, strategy"):
        plan_fleet((0, 1), execution="cpu0")


def test_three_isolated_cores_give_the_critical_path_a_core_each() -> None:
    plan = plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3))
    assert plan.isolated and plan.hot == (1, 2, 3) and plan.housekeeping == (0,)
    cpus = {n: plan.placement(n).cpus for n in ("feed-binance", "strategy", "execution")}
    assert sorted(c for cs in cpus.values() for c in cs) == [1, 2, 3]
    assert all(plan.placement(n).wait_policy == "spin" and plan.placement(n).dedicated for n in cpus)
    assert plan.placement("feed-hyperliquid").cpus == (0,)
    assert plan.placement("feed-hyperliquid").wait_policy == "sleep"


def test_four_hot_cores_give_every_hot_process_its_own() -> None:
    plan = plan_fleet(range(6), isolated=(1, 2, 3, 4, 5))
    hot = [plan.placement(n).cpus[0] for n in ("feed-binance", "feed-hyperliquid", "strategy", "execution")]
    assert len(set(hot)) == 4 and 0 not in hot


def test_smt_siblings_never_host_two_hot_processes() -> None:
    siblings = {c: (c % 4, c % 4 + 4) for c in range(8)}  # c7i.2xlarge with 2 threads per core
    plan = plan_fleet(range(8), isolated=(1, 2, 3, 5, 6, 7), siblings=siblings)
    used = [plan.placement(n).cpus[0] for n in ("feed-binance", "strategy", "execution")]
    assert len({c % 4 for c in used}) == 3
    assert plan.hot == (1, 2, 3, 5, 6, 7), "the whole isolated set stays isolated; spare siblings stay idle"
    assert any("SMT siblings 5-7" in n for n in plan.notes)


def test_forced_wait_policy_applies_to_every_hot_process() -> None:
    plan = plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3), wait_policy="sleep")
    assert {plan.placement(n).wait_policy for n in ("feed-binance", "strategy", "execution")} == {"sleep"}
    with pytest.raises(ValueError, match="'yolo' is not one of"):
        plan_fleet((0, 1), wait_policy="yolo")


def test_plan_round_trips_through_dict() -> None:
    plan = plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3))
    assert FleetPlan.from_dict(plan.to_dict()) == plan


def test_cpu_lists() -> None:
    assert parse_cpu_list("0-2,5,7-8\n") == (0, 1, 2, 5, 7, 8)
    assert format_cpu_list((8, 7, 5, 2, 1, 0)) == "0-2,5,7-8"
    assert one_thread_per_core((1, 2, 5, 6), {1: (1, 5), 5: (1, 5), 2: (2, 6), 6: (2, 6)}) == (1, 2)


def test_a_feed_gets_the_busy_client_only_with_a_core_of_its_own() -> None:
    from caerus.session.launch import Segments, fleet_specs
    from infra.deploy import process_command

    shared = plan_fleet((0, 1), isolated=())
    isolated = plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3))
    assert shared.placement("feed-binance").feed_client == "asyncio"
    assert isolated.placement("feed-binance").feed_client == "busy"  # dedicated, spinning
    assert isolated.placement("feed-hyperliquid").feed_client == "asyncio"  # housekeeping core, sleeping
    # what the session launches and what a host's unit runs say the same
    for plan in (shared, isolated):
        specs = {s.name: s.argv for s in fleet_specs(Path("/tmp/s"), plan, Segments("t"), None, capture=False,
                                                    transport="null")}
        for feed in ("feed-binance", "feed-hyperliquid"):
            want = plan.placement(feed).feed_client
            argv = specs[feed]
            assert argv[argv.index("--client") + 1] == want
            assert f"--client {want}" in process_command(feed, "caerus", plan)
            # the warm path where the feed has one (busy client, polling loop), in both
            warm = plan.placement(feed).feed_warm_every_us
            assert ("--warm-every-us" in argv) == bool(warm) == (f"--warm-every-us {warm:g}" in process_command(
                feed, "caerus", plan))
    assert isolated.placement("feed-binance").feed_warm_every_us > 0  # spinning on its own core
    assert isolated.placement("feed-hyperliquid").feed_warm_every_us == 0  # asyncio, sleeping
    assert shared.placement("feed-binance").feed_warm_every_us == 0  # asyncio on a shared core


def test_two_cpu_machine_keeps_the_emulator_and_a_yielding_hl_feed_off_the_binance_feeds_cpu() -> None:
    plan = plan_fleet((0, 1), isolated=())
    assert plan.placement("venue-sim").cpus == plan.placement("strategy").cpus == (1,)
    assert plan.placement("feed-hyperliquid").cpus == (0,)
    assert plan.placement("feed-hyperliquid").wait_policy == "sleep"
    assert plan.placement("capture").cpus == (0,)
    # an isolated CPU keeps hot processes only; with room, the emulator stays on housekeeping
    assert plan_fleet((0, 1), isolated=(1,)).placement("venue-sim").cpus == (0,)
    assert plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3)).placement("venue-sim").cpus == (0,)
    # a forced policy still applies to every hot process
    assert plan_fleet((0, 1), isolated=(), wait_policy="hybrid").placement("feed-hyperliquid").wait_policy == "hybrid"


def test_the_plan_says_when_the_emulator_shares_a_hot_processs_cpu() -> None:
    assert plan_fleet((0, 1), isolated=()).emulator_shares_hot_cpu  # the strategy's CPU
    assert plan_fleet((0,), isolated=()).emulator_shares_hot_cpu  # one CPU: everything on it
    # 3 hot cores: the sleeping Hyperliquid feed is on housekeeping with the emulator
    assert plan_fleet((0, 1, 2, 3), isolated=(1, 2, 3)).emulator_shares_hot_cpu
    assert not plan_fleet((0, 1, 2, 3, 4), isolated=(1, 2, 3, 4)).emulator_shares_hot_cpu  # a core per hot process
    assert not FleetPlan(housekeeping=(0,), hot=(1,)).emulator_shares_hot_cpu  # no placements at all
