"""Mainnet is bound to the venue's published order-entry endpoint (issue 26): ``--network mainnet --url
wss://anything`` is refused with one line naming the published URL and the flag that would allow it, unless
``--allow-custom-mainnet-url`` is given as well. Building a transport connects nowhere, so no socket is needed."""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from caerus.execution import app
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.credentials import Secret
from caerus.venuekit.order_session import LiveConfigError
from caerus.venues import binance, hyperliquid, registry
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials

PUBLISHED = {"binance": "wss://ws-fapi.binance.com/ws-fapi/v1", "hyperliquid": "wss://api.hyperliquid.xyz/ws"}
ELSEWHERE = ["wss://attacker.example/ws-fapi/v1", "wss://attacker.example", "wss://127.0.0.1:9443/ws",
             "wss://ws-fapi.binance.com.attacker.example/ws-fapi/v1", "wss://api.hyperliquid.xyz:8443/ws"]


def _mainnet(venue: str, tmp_path: Path) -> tuple[Any, Path]:
    """Mainnet credentials (random, never used on a wire) and the 0600 file confirming their account."""
    if venue == "binance":
        creds: Any = BinanceCredentials(api_key=Secret(secrets.token_hex(32)),
                                        hmac_secret=Secret(secrets.token_hex(32)), network="mainnet")
    else:
        creds = HyperliquidCredentials(private_key=Secret(Account.create().key.hex()), network="mainnet")
    confirm = tmp_path / f"{venue}.confirm"
    confirm.write_text(f"{venue} mainnet {creds.account_id}\n")
    os.chmod(confirm, 0o600)
    return creds, confirm


def _build(venue: str, tmp_path: Path, **kw: Any) -> Any:
    creds, confirm = _mainnet(venue, tmp_path)
    return make_live_transport(registry.get(venue), network="mainnet", credentials=creds, enable_live=True,
                               confirm_mainnet=confirm, **kw)


def test_the_published_endpoints_are_the_venues_own() -> None:
    assert binance.ORDER_URLS["mainnet"] == PUBLISHED["binance"]
    assert hyperliquid.ORDER_URLS["mainnet"] == PUBLISHED["hyperliquid"]


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
@pytest.mark.parametrize("url", ELSEWHERE)
def test_mainnet_refuses_any_other_url_without_the_second_flag(tmp_path: Path, venue: str, url: str) -> None:
    with pytest.raises(LiveConfigError) as err:
        _build(venue, tmp_path, url=url)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{venue}: mainnet connects only to")
    assert PUBLISHED[venue] in msg and "--allow-custom-mainnet-url" in msg
    assert url.split("://")[1].split("/")[0] in msg  # the host it refused


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_mainnet_goes_to_the_published_endpoint_named_or_not(tmp_path: Path, venue: str) -> None:
    for url in (None, PUBLISHED[venue]):
        t = _build(venue, tmp_path, url=url)
        try:
            assert t.url == PUBLISHED[venue]
        finally:
            t.close()  # built, never started


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_the_second_flag_allows_a_custom_mainnet_url(tmp_path: Path, venue: str) -> None:
    t = _build(venue, tmp_path, url="wss://proxy.desk.internal:8443", allow_custom_mainnet_url=True)
    try:
        assert t.url.startswith("wss://proxy.desk.internal:8443/")
    finally:
        t.close()
    with pytest.raises(LiveConfigError):  # only True allows it: a truthy string is not a deliberate flag
        _build(venue, tmp_path, url="wss://proxy.desk.internal:8443", allow_custom_mainnet_url="false")


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_testnet_takes_any_url_without_the_flag(order_creds: Any, venue: str) -> None:
    t = make_live_transport(registry.get(venue), network="testnet", credentials=order_creds[venue], enable_live=True,
                            url="wss://127.0.0.1:9443")
    try:
        assert t.url.startswith("wss://127.0.0.1:9443/")
    finally:
        t.close()


def test_binance_user_data_stream_is_bound_on_mainnet_too(tmp_path: Path) -> None:
    t = _build("binance", tmp_path)
    try:
        assert t._user_base == "wss://fstream.binance.com"  # the published stream host, not the order host's
    finally:
        t.close()
    with pytest.raises(LiveConfigError, match=r"not user_stream_url wss://listen\.attacker\.example"):
        _build("binance", tmp_path, user_stream_url="wss://listen.attacker.example")
    t = _build("binance", tmp_path, url="wss://proxy.desk.internal", user_stream_url="wss://streams.desk.internal",
               allow_custom_mainnet_url=True)
    t.close()


def test_the_execution_process_refuses_a_custom_mainnet_url_in_one_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    creds, confirm = _mainnet("binance", tmp_path)
    creds_file = tmp_path / "credentials.toml"
    creds_file.write_text(f'[binance]\napi_key = "{creds.api_key.reveal()}"\nsecret = "{creds.hmac_secret.reveal()}"\n'
                          f'network = "mainnet"\n')
    os.chmod(creds_file, 0o600)
    parser = argparse.ArgumentParser()
    app.add_arguments(parser)
    argv = ["--segment", "mu.orders", "--transport", "binance", "--book-segment", "mu.binance", "--enable-live",
            "--network", "mainnet", "--credentials", str(creds_file), "--confirm-mainnet", str(confirm),
            "--url", "wss://attacker.example"]
    assert app.run(parser.parse_args(argv)) == 2  # refused before it creates or attaches anything
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--allow-custom-mainnet-url" in lines[0] and PUBLISHED["binance"] in lines[0], err
    assert creds.api_key.reveal() not in err
    assert parser.parse_args([*argv, "--allow-custom-mainnet-url"]).allow_custom_mainnet_url is True


@pytest.fixture
def order_creds() -> dict[str, Any]:
    return {"binance": BinanceCredentials(api_key=Secret(secrets.token_hex(32)),
                                          hmac_secret=Secret(secrets.token_hex(32))),
            "hyperliquid": HyperliquidCredentials(private_key=Secret(Account.create().key.hex()))}
