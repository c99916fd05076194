"""The plan's feed split: when a venue is split across feed processes, into which shares, and where they run."""

from __future__ import annotations

import itertools

import pytest

from caerus.plan import (
    HOT_PROCESSES,
    MAX_FEED_BOOKS_PER_S,
    FleetPlan,
    feed_process,
    feed_shares,
    feed_venue,
    plan_fleet,
)


def test_a_venue_within_one_process_rate_is_not_split() -> None:
    assert feed_shares(64, 75.0) == ((0, 64),)  # the default market's 75 Hz at N = 64: 4,800 books/s
    assert feed_shares(64, 160.0) == ((0, 32), (32, 64))  # 10,240 books/s: over the measured 10,000
    assert feed_shares(10, 100.0, max_books_per_s=1000.0) == ((0, 10),)  # exactly the limit: one process


def test_the_threshold_splits_into_ceil_rate_over_limit_shares() -> None:
    assert len(feed_shares(10, 100.0, max_books_per_s=999.0)) == 2
    assert len(feed_shares(10, 100.0, max_books_per_s=300.0)) == 4  # 1,000 / 300 -> 4
    assert len(feed_shares(3, 1e6, max_books_per_s=1.0)) == 3  # never more shares than instruments


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 65])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_shares_are_contiguous_cover_every_instrument_once_and_differ_by_at_most_one(n: int, k: int) -> None:
    shares = feed_shares(n, 1.0, max_books_per_s=n / k)  # rate n books/s over n/k per process: k shares
    assert len(shares) == min(k, n)
    assert shares[0][0] == 0 and shares[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(shares))  # contiguous, no gap, no overlap
    ids = [i for a, b in shares for i in range(a, b)]
    assert ids == list(range(n))  # every instrument once, in id order
    sizes = {b - a for a, b in shares}
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("bad", [dict(instruments=0, rate_hz=1.0), dict(instruments=3, rate_hz=-1.0),
                                 dict(instruments=3, rate_hz=float("nan")),
                                 dict(instruments=3, rate_hz=1.0, max_books_per_s=0.0)])
def test_bad_split_inputs_are_named(bad: dict) -> None:
    with pytest.raises(ValueError, match="feed_shares"):
        feed_shares(**bad)


def test_feed_names_keep_the_unsplit_name_and_map_back_to_their_venue() -> None:
    assert feed_process("binance") == "feed-binance" and feed_process("binance", 2, 3) == "feed-binance-2"
    assert [feed_venue(p) for p in ("feed-binance", "feed-binance-2", "feed-hyperliquid-10", "strategy",
                                    "venue-sim")] == ["binance", "binance", "hyperliquid", None, None]


def test_an_unsplit_plan_is_the_plan_it_always_was() -> None:
    plain = plan_fleet((0, 1), isolated=())
    rated = plan_fleet((0, 1), isolated=(), instruments=3, book_rate_hz={"binance": 75.0, "hyperliquid": 14.0})
    assert rated == plain and rated.to_dict() == plain.to_dict() and "feed_split" not in plain.to_dict()
    assert plain.hot_processes == HOT_PROCESSES and plain.feeds("binance") == ("feed-binance",)


def test_a_split_venue_gets_a_process_per_share_on_a_small_machine() -> None:
    plan = plan_fleet((0, 1), isolated=(), instruments=5, book_rate_hz={"binance": 100.0, "hyperliquid": 14.0},
                      max_feed_books_per_s=200.0)
    assert plan.feed_split == {"binance": ((0, 2), (2, 4), (4, 5))}  # 500 books/s over 200: 3 shares
    assert plan.feeds("binance") == ("feed-binance-1", "feed-binance-2", "feed-binance-3")
    assert plan.feeds("hyperliquid") == ("feed-hyperliquid",)  # 70 books/s: one process
    assert "feed-binance" not in plan.placements
    assert plan.hot_processes == ("feed-binance-1", "feed-binance-2", "feed-binance-3", "feed-hyperliquid",
                                  "strategy", "execution")
    for name in plan.feeds("binance"):  # where the one Binance feed would run, none of them spinning
        assert plan.placement(name).cpus == (0,) and plan.placement(name).wait_policy == "hybrid"
    assert any("binance split across 3 feed processes" in n for n in plan.notes)
    assert FleetPlan.from_dict(plan.to_dict()) == plan


def test_shares_take_spare_cores_first_then_share_the_first_ones() -> None:
    roomy = plan_fleet(range(8), isolated=range(1, 8), instruments=4, book_rate_hz={"binance": 100.0},
                       max_feed_books_per_s=200.0, siblings={})
    cpus = {n: roomy.placement(n).cpus for n in roomy.feeds("binance")}
    hot_others = {c for n in ("feed-hyperliquid", "strategy", "execution") for c in roomy.placement(n).cpus}
    assert len({c for cs in cpus.values() for c in cs}) == 2 and not hot_others & {c for cs in cpus.values()
                                                                                     for c in cs}
    assert all(roomy.placement(n).dedicated and roomy.placement(n).wait_policy == "spin" for n in cpus)
    tight = plan_fleet((0, 1, 2, 3, 4), isolated=(1, 2, 3, 4), instruments=4, book_rate_hz={"binance": 100.0},
                       max_feed_books_per_s=200.0, siblings={})
    a, b = (tight.placement(n) for n in tight.feeds("binance"))
    assert a.cpus == b.cpus and not a.dedicated and a.wait_policy == b.wait_policy == "hybrid"


def test_the_threshold_is_the_measured_one() -> None:
    assert MAX_FEED_BOOKS_PER_S == 10000.0  # docs/instruments.md, "Feed processes per venue"
