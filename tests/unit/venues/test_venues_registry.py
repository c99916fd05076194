"""The venue registry: built-ins by name and wire code, registration rules, plugins from the environment."""

from __future__ import annotations

import dataclasses

import pytest

from caerus.venues import registry
from caerus.venues.binance import SPEC as BINANCE
from caerus.wire import Venue


def test_builtins_by_name_and_code() -> None:
    assert registry.names()[:2] == ("binance", "hyperliquid")
    for code in Venue:
        spec = registry.by_code(int(code))
        assert spec is registry.get(code.name.lower()) and spec.code == int(code)
    assert registry.get("hyperliquid").feed.keepalive_frame == b'{"method":"ping"}'
    assert registry.get("binance").feed.url("wss://h:1", "public") == "wss://h:1/public/ws"
    assert set(registry.live_names()) == {"binance", "hyperliquid"}


def test_unknown_venue_names_the_known_ones() -> None:
    with pytest.raises(registry.UnknownVenue, match="unknown venue 'kraken'; known: binance, hyperliquid"):
        registry.get("kraken")
    with pytest.raises(registry.UnknownVenue, match="wire code 99"):
        registry.by_code(99)


def test_register_refuses_clashes_and_unregisters() -> None:
    extra = dataclasses.replace(BINANCE, name="extra", code=200, order_entry=None)
    registry.register(extra)
    try:
        assert registry.get("extra") is extra and registry.by_code(200) is extra
        assert "extra" in registry.names() and "extra" not in registry.live_names()
        with pytest.raises(ValueError, match="clashes"):
            registry.register(dataclasses.replace(extra, name="extra2"))  # same code
        with pytest.raises(ValueError, match=r"clashes|built-in"):
            registry.register(dataclasses.replace(extra, name="hyperliquid", code=201))
    finally:
        registry.unregister("extra")
    with pytest.raises(registry.UnknownVenue):
        registry.get("extra")


def test_plugins_from_environment() -> None:
    assert registry.load_plugins({}) == ()
    with pytest.raises(ImportError, match=r"CAERUS_VENUE_PLUGINS: cannot import venue plugin 'no\.such\.module'"):
        registry.load_plugins({registry.PLUGINS_ENV: "no.such.module"})
