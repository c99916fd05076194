"""Binance order-entry credentials: an API key plus an HMAC secret or an Ed25519 private key file.

TOML table ``[binance]``: ``api_key``, and ``secret`` (HMAC) or ``ed25519_private_key_file`` (PEM, unencrypted,
itself mode 0600; relative to the credentials file), ``network`` (testnet | mainnet, default testnet).
Environment: ``CAERUS_BINANCE_API_KEY``, ``CAERUS_BINANCE_SECRET`` or ``CAERUS_BINANCE_ED25519_KEY_FILE``,
``CAERUS_BINANCE_NETWORK``. Secrets stay inside :class:`Secret`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from caerus.venuekit.credentials import CredentialsError, Secret, read_private_file, table_network, table_text

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from caerus.venues.binance.signing import BinanceSigner

ENV_API_KEY = "CAERUS_BINANCE_API_KEY"
ENV_SECRET = "CAERUS_BINANCE_SECRET"
ENV_ED25519_KEY_FILE = "CAERUS_BINANCE_ED25519_KEY_FILE"
ENV_NETWORK = "CAERUS_BINANCE_NETWORK"


@dataclass(frozen=True, repr=False)
class BinanceCredentials:
    api_key: Secret
    hmac_secret: Secret | None = None
    ed25519_key_file: Path | None = None
    network: str = "testnet"  # the network these keys are for

    def __post_init__(self) -> None:
        if not self.api_key:
            raise CredentialsError("Binance api_key is empty")
        if (self.hmac_secret is None) == (self.ed25519_key_file is None):
            raise CredentialsError("Binance credentials need exactly one of an HMAC secret or an Ed25519 key file")
        if self.hmac_secret is not None and not self.hmac_secret:
            raise CredentialsError("Binance HMAC secret is empty")

    @property
    def account_id(self) -> str:
        """Names the account without revealing the key: a fingerprint of the API key (sha256, 12 hex digits)."""
        return "key-" + hashlib.sha256(self.api_key.reveal().encode()).hexdigest()[:12]

    @property
    def kind(self) -> str:
        return "hmac" if self.hmac_secret is not None else "ed25519"

    def signer(self) -> BinanceSigner:
        from caerus.venues.binance.signing import BinanceEd25519Signer, BinanceHmacSigner

        if self.hmac_secret is not None:
            return BinanceHmacSigner(self.hmac_secret.reveal())
        return BinanceEd25519Signer(load_ed25519_private_key(self.ed25519_key_file))

    def __repr__(self) -> str:
        return f"BinanceCredentials(kind={self.kind}, api_key=<redacted>, secret=<redacted>)"


def load_ed25519_private_key(path: Path | None) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    if path is None:
        raise CredentialsError("no Ed25519 key file configured")
    pem = read_private_file(path, "Binance Ed25519 key file").encode()
    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CredentialsError(f"Binance Ed25519 key file {path} is not an unencrypted PEM private key "
                               f"({type(exc).__name__})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CredentialsError(f"Binance key file {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def from_table(table: Mapping[str, object], where: str, base: Path | None) -> BinanceCredentials:
    secret = table_text(table, "binance", "secret", where, required=False)
    key_file = table_text(table, "binance", "ed25519_private_key_file", where, required=False)
    path = None
    if key_file is not None:
        path = Path(key_file)
        if base is not None and not path.is_absolute():
            path = base / path
    api_key = table_text(table, "binance", "api_key", where)
    assert api_key is not None
    return BinanceCredentials(api_key=Secret(api_key), hmac_secret=Secret(secret) if secret else None,
                              ed25519_key_file=path, network=table_network(table, "binance", where))


def env_table(env: Mapping[str, str]) -> dict[str, object]:
    table = {"api_key": env.get(ENV_API_KEY), "secret": env.get(ENV_SECRET),
             "ed25519_private_key_file": env.get(ENV_ED25519_KEY_FILE), "network": env.get(ENV_NETWORK)}
    if not table["api_key"]:
        raise CredentialsError(f"{ENV_API_KEY} is not set")
    if not table["secret"] and not table["ed25519_private_key_file"]:
        raise CredentialsError(f"set {ENV_SECRET} (HMAC) or {ENV_ED25519_KEY_FILE} (Ed25519)")
    return {k: v for k, v in table.items() if v}
