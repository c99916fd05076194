"""Scenario registry, overrides and the per-venue fault budget."""

from __future__ import annotations

import pytest

from caerus.sim.core.scenarios import SCENARIOS, FaultBudget, describe_scenarios, get_scenario

REQUIRED = ("none", "drop", "stall", "slow-drip", "malformed-json", "oversized-frame", "error-frames",
            "wrong-route", "refused", "http-429", "http-503", "tls-failure", "early-close")


def test_every_required_scenario_is_registered_and_listed() -> None:
    listing = describe_scenarios()
    for name in REQUIRED:
        assert name in SCENARIOS
        assert any(line.startswith(name + " ") for line in listing.splitlines()), name


def test_unknown_scenario_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown scenario 'nope'.*drop"):
        get_scenario("nope")


def test_overrides_replace_and_validate() -> None:
    s = get_scenario("stall").with_overrides(after_s=0.2, duration_s=9, venues="hyperliquid", times=None)
    assert (s.after_s, s.duration_s, s.venues, s.times) == (0.2, 9, ("hyperliquid",), 1)
    assert get_scenario("drop").with_overrides(venues="both").venues == ("binance", "hyperliquid")
    with pytest.raises(ValueError, match="unknown venue"):
        get_scenario("drop").with_overrides(venues="kraken")
    with pytest.raises(ValueError, match="after_s"):
        get_scenario("drop").with_overrides(after_s=-1)
    with pytest.raises(ValueError, match="unknown scenario setting"):
        get_scenario("drop").with_overrides(colour="red")


def test_budget_hits_only_the_first_connections_of_applicable_venues() -> None:
    budget = FaultBudget(get_scenario("http-429"))  # times=2, both venues
    assert [budget.claim("binance") for _ in range(3)] == [True, True, False]
    assert budget.claim("hyperliquid") is True
    wrong_route = FaultBudget(get_scenario("wrong-route"))  # binance only
    assert wrong_route.claim("hyperliquid") is False
    assert wrong_route.claim("binance") is True
    every = FaultBudget(get_scenario("early-close"))  # times=0: all connections
    assert all(every.claim("binance") for _ in range(50))
    assert FaultBudget(get_scenario("none")).claim("binance") is False
