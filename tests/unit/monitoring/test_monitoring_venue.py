"""The exporter's venue and instrument labels: a feed's venue, every share of a split venue under it
(caerus.plan.feed_venue); a per-instrument latency under its instrument."""

from __future__ import annotations

from pathlib import Path

from caerus.metrics.hdr import IntervalLog
from caerus.monitoring.collector import BASE, FleetCollector, venue_of
from caerus.monitoring.session_files import FleetProcess


def test_every_feed_process_of_a_venue_is_labelled_with_the_venue() -> None:
    assert [venue_of(p) for p in ("feed-binance", "feed-binance-1", "feed-binance-2", "feed-hyperliquid")] == [
        "binance", "binance", "binance", "hyperliquid"]
    assert venue_of("strategy", "tick_to_decision") == "all"
    assert venue_of("strategy", "guard.stale.binance") == "binance"


def test_a_per_instrument_latency_has_its_instrument_label_and_the_tags_metric_and_venue(tmp_path: Path) -> None:
    """Issue 32 item 4: an inst.<NAME>.<tag> interval (the feeds' feed_internal / info_age, the strategy's
    tick_to_decision) is served with instrument="<NAME>" and the metric and venue of <tag>, beside the fleet's series
    (instrument="all"); the label set is the same."""
    log = IntervalLog(tmp_path / "feed-binance.hlog", ["feed_internal.binance", "inst.ETH.feed_internal.binance"])
    log.record("feed_internal.binance", 9_000)
    log.record("inst.ETH.feed_internal.binance", 9_000)
    log.close()
    slog = IntervalLog(tmp_path / "strategy.hlog", ["tick_to_decision", "inst.SOL.tick_to_decision"])
    slog.record("inst.SOL.tick_to_decision", 50_000)
    slog.close()
    c = FleetCollector("s1", tmp_path, [FleetProcess("feed-binance", None, tmp_path / "feed-binance.hlog"),
                                        FleetProcess("strategy", None, tmp_path / "strategy.hlog")])
    c.refresh()
    hist = next(m for m in c.latency if m.name == "caerus_latency_seconds")
    labels = {(s.labels["process"], s.labels["venue"], s.labels["instrument"], s.labels["metric"])
              for s in hist.samples if s.name == "caerus_latency_seconds_count"}
    assert labels == {("feed-binance", "binance", "all", "feed_internal"),
                      ("feed-binance", "binance", "ETH", "feed_internal"),
                      ("strategy", "all", "all", "tick_to_decision"), ("strategy", "all", "SOL", "tick_to_decision")}
    assert all(set(s.labels) - {"le"} == {*BASE, "metric"} for s in hist.samples)
