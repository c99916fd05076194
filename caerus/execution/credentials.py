"""Venue credentials for the live transports: where they come from, how they are checked, and that they never leak.

Sources, in order: a credentials file (TOML, must be mode 0600 or stricter and owned by this user) when a path is
given, else environment variables. File layout::

    [binance]
    api_key = "..."
    secret = "..."                      # HMAC key; or:
    ed25519_private_key_file = "/path"  # PEM, unencrypted, itself mode 0600

    [hyperliquid]
    private_key = "0x..."               # 32-byte hex (the API/agent wallet key)
    vault_address = "0x..."             # optional

Environment: ``CAERUS_BINANCE_API_KEY``, ``CAERUS_BINANCE_SECRET`` or ``CAERUS_BINANCE_ED25519_KEY_FILE``,
``CAERUS_HL_PRIVATE_KEY``, ``CAERUS_HL_VAULT_ADDRESS``.

Secret values live only inside :class:`Secret`, whose ``repr``/``str`` are ``<redacted>`` and which refuses to be
pickled; errors name the variable, key or file that was wrong, never the value.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_BINANCE_API_KEY = "CAERUS_BINANCE_API_KEY"
ENV_BINANCE_SECRET = "CAERUS_BINANCE_SECRET"
ENV_BINANCE_ED25519_KEY_FILE = "CAERUS_BINANCE_ED25519_KEY_FILE"
ENV_HL_PRIVATE_KEY = "CAERUS_HL_PRIVATE_KEY"
ENV_HL_VAULT_ADDRESS = "CAERUS_HL_VAULT_ADDRESS"


class CredentialsError(ValueError):
    """Credentials missing, malformed or stored unsafely. The message never contains a secret."""


class Secret:
    """A secret string. ``reveal()`` is the only way to the value; printing shows ``<redacted>``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "<redacted>"

    def __reduce__(self):  # no pickling a secret into a file or a queue by accident
        raise TypeError("Secret values cannot be pickled")

    def __bool__(self) -> bool:
        return bool(self._value)


def check_private_file(path: Path, what: str) -> None:
    """Refuse a file that group or others can read or write, or that another user owns."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise CredentialsError(f"{what} {path} does not exist") from None
    if not stat.S_ISREG(st.st_mode):
        raise CredentialsError(f"{what} {path} is not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise CredentialsError(f"{what} {path} has mode {mode:04o}; it must be 0600 (run: chmod 600 {path})")
    if st.st_uid != os.getuid():
        raise CredentialsError(f"{what} {path} is owned by uid {st.st_uid}, not by this user ({os.getuid()})")


@dataclass(frozen=True, repr=False)
class BinanceCredentials:
    api_key: Secret
    hmac_secret: Secret | None = None
    ed25519_key_file: Path | None = None

    def __post_init__(self) -> None:
        if not self.api_key:
            raise CredentialsError("Binance api_key is empty")
        if (self.hmac_secret is None) == (self.ed25519_key_file is None):
            raise CredentialsError("Binance credentials need exactly one of an HMAC secret or an Ed25519 key file")
        if self.hmac_secret is not None and not self.hmac_secret:
            raise CredentialsError("Binance HMAC secret is empty")

    @property
    def kind(self) -> str:
        return "hmac" if self.hmac_secret is not None else "ed25519"

    def signer(self):
        from caerus.execution.signing.binance import BinanceEd25519Signer, BinanceHmacSigner

        if self.hmac_secret is not None:
            return BinanceHmacSigner(self.hmac_secret.reveal())
        return BinanceEd25519Signer(load_ed25519_private_key(self.ed25519_key_file))

    def __repr__(self) -> str:
        return f"BinanceCredentials(kind={self.kind}, api_key=<redacted>, secret=<redacted>)"


@dataclass(frozen=True, repr=False)
class HyperliquidCredentials:
    private_key: Secret
    vault_address: str | None = None

    def __post_init__(self) -> None:
        raw = self.private_key.reveal()
        hexpart = raw[2:] if raw.startswith("0x") else raw
        if len(hexpart) != 64 or any(c not in "0123456789abcdefABCDEF" for c in hexpart):
            raise CredentialsError("Hyperliquid private_key must be 64 hex digits (optionally 0x-prefixed)")
        if self.vault_address is not None:
            v = self.vault_address
            if not (v.startswith("0x") and len(v) == 42):
                raise CredentialsError("Hyperliquid vault_address must be a 0x-prefixed 20-byte hex address")

    def signer(self, *, is_mainnet: bool):
        from caerus.execution.signing.hyperliquid import HyperliquidSigner

        return HyperliquidSigner(self.private_key.reveal(), is_mainnet=is_mainnet, vault_address=self.vault_address)

    def __repr__(self) -> str:
        return f"HyperliquidCredentials(private_key=<redacted>, vault_address={self.vault_address})"


Credentials = BinanceCredentials | HyperliquidCredentials


def load_ed25519_private_key(path: Path | None):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    if path is None:
        raise CredentialsError("no Ed25519 key file configured")
    check_private_file(path, "Binance Ed25519 key file")
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise CredentialsError(f"Binance Ed25519 key file {path} is not an unencrypted PEM private key "
                               f"({type(exc).__name__})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CredentialsError(f"Binance key file {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def _from_table(venue: str, table: Mapping[str, object], where: str, base: Path | None) -> Credentials:
    def text(name: str, required: bool = True) -> str | None:
        v = table.get(name)
        if v is None:
            if required:
                raise CredentialsError(f"{where}: missing {name!r} for {venue}")
            return None
        if not isinstance(v, str) or not v:
            raise CredentialsError(f"{where}: {venue}.{name} must be a non-empty string")
        return v

    if venue == "binance":
        secret = text("secret", required=False)
        key_file = text("ed25519_private_key_file", required=False)
        path = None
        if key_file is not None:
            path = Path(key_file)
            if base is not None and not path.is_absolute():
                path = base / path
        return BinanceCredentials(api_key=Secret(text("api_key")), hmac_secret=Secret(secret) if secret else None,
                                  ed25519_key_file=path)
    if venue == "hyperliquid":
        return HyperliquidCredentials(private_key=Secret(text("private_key")),
                                      vault_address=text("vault_address", required=False))
    raise CredentialsError(f"unknown venue {venue!r}; expected 'binance' or 'hyperliquid'")


def load_from_file(venue: str, path: str | Path) -> Credentials:
    """Credentials for ``venue`` from a 0600 TOML file (see the module docstring)."""
    path = Path(path)
    check_private_file(path, "credentials file")
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        # Keep only the decoder's "(at line L, column C)" position: never echo file content.
        msg = str(exc)
        where = msg[msg.rfind("(at "):] if "(at " in msg else ""
        raise CredentialsError(f"credentials file {path} is not valid TOML {where}".rstrip()) from None
    table = doc.get(venue)
    if not isinstance(table, dict):
        raise CredentialsError(f"credentials file {path} has no [{venue}] table")
    return _from_table(venue, table, f"credentials file {path}", path.parent)


def load_from_env(venue: str, env: Mapping[str, str] | None = None) -> Credentials:
    """Credentials for ``venue`` from environment variables (see the module docstring)."""
    env = os.environ if env is None else env
    if venue == "binance":
        table = {"api_key": env.get(ENV_BINANCE_API_KEY), "secret": env.get(ENV_BINANCE_SECRET),
                 "ed25519_private_key_file": env.get(ENV_BINANCE_ED25519_KEY_FILE)}
        if not table["api_key"]:
            raise CredentialsError(f"{ENV_BINANCE_API_KEY} is not set")
        if not table["secret"] and not table["ed25519_private_key_file"]:
            raise CredentialsError(f"set {ENV_BINANCE_SECRET} (HMAC) or {ENV_BINANCE_ED25519_KEY_FILE} (Ed25519)")
    elif venue == "hyperliquid":
        table = {"private_key": env.get(ENV_HL_PRIVATE_KEY), "vault_address": env.get(ENV_HL_VAULT_ADDRESS)}
        if not table["private_key"]:
            raise CredentialsError(f"{ENV_HL_PRIVATE_KEY} is not set")
    else:
        raise CredentialsError(f"unknown venue {venue!r}; expected 'binance' or 'hyperliquid'")
    table = {k: v for k, v in table.items() if v}
    return _from_table(venue, table, "environment", None)


def load_credentials(venue: str, path: str | Path | None = None,
                     env: Mapping[str, str] | None = None) -> Credentials:
    """From ``path`` when given (never falls back silently), else from the environment."""
    return load_from_file(venue, path) if path is not None else load_from_env(venue, env)
