"""Credentials: env and 0600-file loading, refusal of unsafe files, and redaction everywhere."""

from __future__ import annotations

import dataclasses
import os
import pickle
import secrets
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from caerus.execution.credentials import load_credentials, load_from_env, load_from_file
from caerus.venuekit.credentials import CredentialsError, Secret
from caerus.venues.binance import SPEC as BINANCE
from caerus.venues.binance.credentials import BinanceCredentials
from caerus.venues.hyperliquid import SPEC as HYPERLIQUID
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials


def _write(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.fixture
def keys() -> dict[str, str]:
    return {"api": secrets.token_hex(32), "secret": secrets.token_hex(32), "hl": "0x" + secrets.token_hex(32)}


def test_file_0600_loads_both_venues(tmp_path: Path, keys: dict[str, str]) -> None:
    f = _write(tmp_path / "c.toml", f'[binance]\napi_key="{keys["api"]}"\nsecret="{keys["secret"]}"\n'
                                    f'[hyperliquid]\nprivate_key="{keys["hl"]}"\n', 0o600)
    b = load_from_file(BINANCE, f)
    h = load_from_file(HYPERLIQUID, f)
    assert isinstance(b, BinanceCredentials) and b.kind == "hmac"
    assert b.api_key.reveal() == keys["api"] and b.hmac_secret.reveal() == keys["secret"]
    assert isinstance(h, HyperliquidCredentials) and h.private_key.reveal() == keys["hl"]
    for shown in (repr(b), str(b), repr(h), f"{b.api_key}", str(h.private_key)):
        assert keys["api"] not in shown and keys["secret"] not in shown and keys["hl"][2:] not in shown


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666])
def test_file_readable_by_others_is_refused(tmp_path: Path, keys: dict[str, str], mode: int) -> None:
    f = _write(tmp_path / "c.toml", f'[hyperliquid]\nprivate_key="{keys["hl"]}"\n', mode)
    with pytest.raises(CredentialsError, match=r"with mode 0600") as err:
        load_from_file(HYPERLIQUID, f)
    assert f"{mode:04o}" in str(err.value) and keys["hl"][2:] not in str(err.value)


def test_missing_file_table_and_key_named(tmp_path: Path, keys: dict[str, str]) -> None:
    with pytest.raises(CredentialsError, match="does not exist"):
        load_from_file(BINANCE, tmp_path / "nope.toml")
    f = _write(tmp_path / "c.toml", f'[hyperliquid]\nprivate_key="{keys["hl"]}"\n', 0o600)
    with pytest.raises(CredentialsError, match=r"no \[binance\] table"):
        load_from_file(BINANCE, f)
    g = _write(tmp_path / "d.toml", f'[binance]\napi_key="{keys["api"]}"\n', 0o600)
    with pytest.raises(CredentialsError, match="exactly one of"):
        load_from_file(BINANCE, g)
    bad = _write(tmp_path / "e.toml", '[hyperliquid]\nprivate_key="0x1234"\n', 0o600)
    with pytest.raises(CredentialsError, match="64 hex digits"):
        load_from_file(HYPERLIQUID, bad)
    broken = _write(tmp_path / "f.toml", f'[binance\napi_key="{keys["api"]}"\n', 0o600)
    with pytest.raises(CredentialsError, match="not valid TOML") as err:
        load_from_file(BINANCE, broken)
    assert keys["api"] not in str(err.value)


def test_env_loading_and_errors_name_the_variable(keys: dict[str, str]) -> None:
    env = {"CAERUS_BINANCE_API_KEY": keys["api"], "CAERUS_BINANCE_SECRET": keys["secret"],
           "CAERUS_HL_PRIVATE_KEY": keys["hl"]}
    assert load_from_env(BINANCE, env).hmac_secret.reveal() == keys["secret"]
    assert load_credentials(HYPERLIQUID, env=env).private_key.reveal() == keys["hl"]
    with pytest.raises(CredentialsError, match="CAERUS_HL_PRIVATE_KEY is not set"):
        load_from_env(HYPERLIQUID, {})
    with pytest.raises(CredentialsError, match="CAERUS_BINANCE_SECRET"):
        load_from_env(BINANCE, {"CAERUS_BINANCE_API_KEY": keys["api"]})
    feed_only = dataclasses.replace(BINANCE, name="feedonly", code=250, order_entry=None)
    with pytest.raises(CredentialsError, match="'feedonly' has no order entry"):
        load_from_env(feed_only, env)


def test_ed25519_key_file_must_be_private_too(tmp_path: Path, keys: dict[str, str]) -> None:
    pem = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption())
    key_file = tmp_path / "ed.pem"
    key_file.write_bytes(pem)
    os.chmod(key_file, 0o644)
    creds = load_from_env(BINANCE, {"CAERUS_BINANCE_API_KEY": keys["api"],
                                      "CAERUS_BINANCE_ED25519_KEY_FILE": str(key_file)})
    assert creds.kind == "ed25519"
    with pytest.raises(CredentialsError, match="with mode 0600"):
        creds.signer()
    os.chmod(key_file, 0o600)
    assert creds.signer().kind == "ed25519"
    key_file.write_text("not a key")
    with pytest.raises(CredentialsError, match="not an unencrypted PEM"):
        creds.signer()


def test_secret_cannot_be_pickled_or_formatted() -> None:
    s = Secret("hunter2-very-secret")
    assert repr(s) == str(s) == f"{s}" == "<redacted>"
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(s)


def test_live_url_resolution() -> None:
    from caerus.execution.transports.live import resolve_url

    assert resolve_url(BINANCE, "mainnet", None) == "wss://ws-fapi.binance.com/ws-fapi/v1"
    assert resolve_url(BINANCE, "testnet", None) == "wss://testnet.binancefuture.com/ws-fapi/v1"
    assert resolve_url(HYPERLIQUID, "mainnet", None) == "wss://api.hyperliquid.xyz/ws"
    assert resolve_url(HYPERLIQUID, "testnet", None) == "wss://api.hyperliquid-testnet.xyz/ws"
    assert resolve_url(HYPERLIQUID, "testnet", "wss://127.0.0.1:9000") == "wss://127.0.0.1:9000/ws"
    assert resolve_url(BINANCE, "testnet", "wss://127.0.0.1:9000/") == "wss://127.0.0.1:9000/ws-fapi/v1"
    assert resolve_url(BINANCE, "testnet", "wss://127.0.0.1:9000/custom") == "wss://127.0.0.1:9000/custom"
