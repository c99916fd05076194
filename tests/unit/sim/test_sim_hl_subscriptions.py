"""A Hyperliquid subscription as the emulator keeps it (issue 44): the keys its channel defines and nothing else,
a ``user`` that is an address, every known channel described; and the emulator's total limits validated before
anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caerus.sim.core.config import EmulatorConfig
from caerus.sim.hyperliquid import server as hyperliquid
from caerus.sim.hyperliquid.subscriptions import CHANNEL_KEYS, is_address, normalise

USER = "0x" + "Ab" * 20


def test_every_channel_the_server_knows_has_its_keys_described() -> None:
    assert frozenset(CHANNEL_KEYS) == hyperliquid.KNOWN_TYPES


@pytest.mark.parametrize(("sent", "kept"), [
    ({"type": "bbo", "coin": "BTC", "junk": "x" * 1000}, {"type": "bbo", "coin": "BTC"}),
    ({"type": "l2Book", "coin": "ETH", "nSigFigs": None, "mantissa": 2, "fast": True, "depth": 9},
     {"type": "l2Book", "coin": "ETH", "nSigFigs": None, "mantissa": 2, "fast": True}),
    ({"type": "candle", "coin": "BTC", "interval": "1m", "extra": [1, 2]},
     {"type": "candle", "coin": "BTC", "interval": "1m"}),
    ({"type": "allMids", "pad": {"a": 1}}, {"type": "allMids"}),
    ({"type": "userFills", "user": USER, "aggregateByTime": True, "x": 1},
     {"type": "userFills", "user": USER, "aggregateByTime": True}),
    ({"type": "activeAssetData", "user": USER, "coin": "BTC", "y": 0},
     {"type": "activeAssetData", "user": USER, "coin": "BTC"}),
])
def test_only_the_channels_keys_are_kept(sent: dict[str, Any], kept: dict[str, Any]) -> None:
    assert normalise(sent) == kept


@pytest.mark.parametrize(("sent", "why"), [
    ("bbo", "must be an object"),
    ({"type": "nope"}, "unknown subscription type"),
    ({"coin": "BTC"}, "unknown subscription type"),
    ({"type": "bbo"}, "missing coin"),
    ({"type": "candle", "coin": "BTC"}, "missing interval"),
    ({"type": "bbo", "coin": 7}, "coin must be a coin name"),
    ({"type": "l2Book", "coin": "BTC", "nSigFigs": "5"}, "nSigFigs must be an integer or null"),
    ({"type": "l2Book", "coin": "BTC", "fast": 1}, "fast must be true or false"),
    ({"type": "userFills"}, "missing user"),
    ({"type": "userFills", "user": "anything at all"}, "user must be an address"),
    ({"type": "orderUpdates", "user": "0x" + "0" * 41}, "user must be an address"),
    ({"type": "notification", "user": ["0x" + "0" * 40]}, "user must be an address"),
])
def test_a_malformed_subscription_is_refused_naming_what_is_wrong(sent: object, why: str) -> None:
    out = normalise(sent)
    assert isinstance(out, str) and why in out


def test_an_address_is_0x_and_exactly_40_hex_digits() -> None:
    assert is_address("0x" + "0" * 40) and is_address(USER)
    for bad in ("0x" + "0" * 39, "0x" + "0" * 40 + "\n", " 0x" + "0" * 40, "0" * 42, "0X" + "0" * 40, 0, None):
        assert not is_address(bad), bad


@pytest.mark.parametrize(("changes", "message"), [
    ({"hl_max_connections_total": 0}, "hl_max_connections_total must be >= 1"),
    ({"hl_max_subscriptions_total": 0}, "hl_max_subscriptions_total must be >= 1"),
    ({"hl_max_subscription_bytes": 0}, "hl_max_subscription_bytes must be >= 1"),
    ({"hl_max_connections_total": 5}, r"hl_max_connections_total \(5\) must be >= hl_max_connections_per_ip \(10\)"),
    ({"hl_max_subscriptions_total": 999}, r"hl_max_subscriptions_total \(999\) must be >= hl_max_subscriptions_per_ip"),
    ({"hl_max_subscription_bytes": 2 << 20}, r"must be <= max_message_bytes"),
])
def test_the_total_limits_are_validated_before_anything_starts(tmp_path: Path, changes: dict[str, int],
                                                               message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EmulatorConfig(cert_dir=tmp_path, **changes).validate()  # type: ignore[arg-type]


def test_the_defaults_hold_the_per_ip_limits_and_bound_the_total(tmp_path: Path) -> None:
    cfg = EmulatorConfig(cert_dir=tmp_path)
    cfg.validate()
    assert cfg.hl_max_connections_per_ip <= cfg.hl_max_connections_total < 10 * cfg.hl_max_connections_per_ip
    assert cfg.hl_max_subscriptions_per_ip <= cfg.hl_max_subscriptions_total
