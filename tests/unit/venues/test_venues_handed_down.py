"""The venues are handed down: the feed config, credentials, live order entry and capture replay serve a venue the
app gives them, one the global venue registry has never heard of (only the apps look venues up)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from caerus.capture.replay import ReplayOptions, frames
from caerus.config import ConfigError
from caerus.execution.credentials import load_from_file
from caerus.execution.transports.live import resolve_url
from caerus.feed.config import add_arguments, from_args
from caerus.venuekit.spec import UnknownVenue, VenueSpec
from caerus.venues import registry
from caerus.venues.binance import SPEC as BINANCE

#: a venue of the test's own: Binance's protocol under another name and wire code, never registered
HANDED = dataclasses.replace(BINANCE, name="handed", code=201)


class Catalog:
    """A process's venues as its app would hand them down, without the global registry."""

    def __init__(self, *specs: VenueSpec) -> None:
        self._specs = {s.name: s for s in specs}

    def get(self, name: str) -> VenueSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownVenue(f"unknown venue {name!r}; known: {', '.join(self.names())}") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def live_names(self) -> tuple[str, ...]:
        return tuple(n for n, s in self._specs.items() if s.order_entry is not None)


def test_the_registry_does_not_know_the_handed_venue() -> None:
    with pytest.raises(registry.UnknownVenue):
        registry.get(HANDED.name)


def test_the_feed_config_takes_the_venue_it_is_handed() -> None:
    p = argparse.ArgumentParser()
    add_arguments(p, Catalog(HANDED))
    cfg = from_args(p.parse_args(["--venue", "handed", "--segment", "s.book.handed"]), Catalog(HANDED))
    assert cfg.spec is HANDED and cfg.venue == "handed"
    assert cfg.events_segment == "s.events.handed" and cfg.process == "feed-handed"
    assert cfg.url == "wss://fstream.binance.com/public/ws"  # the handed spec's defaults
    with pytest.raises(ConfigError, match="--venue: unknown venue 'binance'; known: handed"):
        from_args(p.parse_args(["--venue", "binance", "--segment", "s.book.x"]), Catalog(HANDED))


def test_credentials_and_order_entry_take_the_venue_they_are_handed(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(f'[handed]\napi_key = "{"a" * 64}"\nsecret = "{"b" * 64}"\n')
    os.chmod(f, 0o600)
    creds = load_from_file(HANDED, f)  # the handed venue's own table, read by its spec's credentials module
    assert creds.api_key.reveal() == "a" * 64
    assert resolve_url(HANDED, "testnet", "wss://127.0.0.1:9") == "wss://127.0.0.1:9/ws-fapi/v1"


def test_capture_replay_rebuilds_frames_of_the_venue_it_is_handed() -> None:
    books = pd.DataFrame({"venue": ["handed"], "symbol": [0], "seq": [7], "t_exchange": [1_796_000_000_000_000_000],
                          "t_recv": [1_796_000_000_100_000_000], "bid_px": [99.5], "bid_qty": [1.0],
                          "ask_px": [100.5], "ask_qty": [2.0]})
    ((venue, t_ns, frame),) = frames(books, ReplayOptions(venues=(HANDED,)))
    assert (venue, t_ns) == ("handed", 0)
    assert json.loads(frame)["u"] == 7 and json.loads(frame)["s"] == BINANCE.feed.default_symbol
