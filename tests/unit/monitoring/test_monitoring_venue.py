"""The exporter's venue label: a feed's venue, every share of a split venue under it (caerus.plan.feed_venue)."""

from __future__ import annotations

from caerus.monitoring.collector import venue_of


def test_every_feed_process_of_a_venue_is_labelled_with_the_venue() -> None:
    assert [venue_of(p) for p in ("feed-binance", "feed-binance-1", "feed-binance-2", "feed-hyperliquid")] == [
        "binance", "binance", "binance", "hyperliquid"]
    assert venue_of("strategy", "tick_to_decision") == "all"
    assert venue_of("strategy", "guard.stale.binance") == "binance"
