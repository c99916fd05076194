"""Known-silent configurations are refused before the feed starts (issue 12 item 10), with a reason and an override."""

from __future__ import annotations

import argparse

import pytest

from caerus.config import ConfigError
from caerus.feed.config import add_arguments, from_args
from caerus.venues import registry


def _cfg(*argv: str):
    p = argparse.ArgumentParser()
    add_arguments(p, registry)
    return from_args(p.parse_args(["--segment", "s.book.x", *argv]), registry)


@pytest.mark.parametrize("channel", ["bookTicker", "depth5"])
def test_binance_book_channels_on_the_market_route_are_refused_naming_the_routing_split(channel: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg("--venue", "binance", "--channel", channel, "--route", "market")
    text = str(err.value)
    assert "silent" in text and "/public" in text and "--route public" in text and "--allow-silent-route" in text


def test_the_override_keeps_the_watchdog_demonstration_possible() -> None:
    cfg = _cfg("--venue", "binance", "--route", "market", "--allow-silent-route")
    assert cfg.url.endswith("/market/ws")


def test_defaults_pick_the_route_that_carries_the_channel() -> None:
    assert _cfg("--venue", "binance").url.endswith("/public/ws")
    assert _cfg("--venue", "binance", "--channel", "depth5").url.endswith("/public/ws")
    assert _cfg("--venue", "hyperliquid").url.endswith("/ws")
