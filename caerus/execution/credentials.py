"""Venue credentials for the live transports: where they come from, how they are checked, and that they never leak.

Generic part: the venue's own credentials module (``caerus.venues.<venue>.credentials``, found through the venue
registry) says which table keys and environment variables it reads and builds its credentials object.

Sources, in order: a credentials file (TOML, must be mode 0600 or stricter and owned by this user) when a path is
given, else environment variables. File layout (one table per venue)::

    [binance]
    api_key = "..."
    secret = "..."                      # HMAC key; or:
    ed25519_private_key_file = "/path"  # PEM, unencrypted, itself mode 0600

    network = "testnet"                 # or "mainnet": the network these keys are for (default testnet)

    [hyperliquid]
    private_key = "0x..."               # 32-byte hex (the API/agent wallet key)
    vault_address = "0x..."             # optional
    network = "testnet"

Environment: ``CAERUS_BINANCE_API_KEY``, ``CAERUS_BINANCE_SECRET`` or ``CAERUS_BINANCE_ED25519_KEY_FILE``,
``CAERUS_BINANCE_NETWORK``, ``CAERUS_HL_PRIVATE_KEY``, ``CAERUS_HL_VAULT_ADDRESS``, ``CAERUS_HL_NETWORK``.

Credentials are bound to a network: without ``network`` they are testnet credentials, and a live transport
refuses credentials bound to another network than the one it was asked for (caerus.execution.transports.live).

Secret values live only inside :class:`Secret`, whose ``repr``/``str`` are ``<redacted>`` and which refuses to be
pickled; errors name the variable, key or file that was wrong, never the value. A secret that has to travel inside
a plain string (the Binance listen key is part of the user-data stream's URL) is taken out of any text that is
logged, raised or reported with :func:`redact`, which leaves the same ``<redacted>`` marker.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caerus.runtime.private_file import PrivateFileError, read_private_text

if TYPE_CHECKING:
    from caerus.venues.spec import CredentialSpec


class CredentialsError(ValueError):
    """Credentials missing, malformed or stored unsafely. The message never contains a secret."""


REDACTED = "<redacted>"


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every occurrence of each non-empty secret replaced by ``<redacted>`` (for log lines, errors
    and reports that carry a URL or a message a secret may be part of)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


class Secret:
    """A secret string. ``reveal()`` is the only way to the value; printing shows ``<redacted>``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return REDACTED

    def __reduce__(self):  # no pickling a secret into a file or a queue by accident
        raise TypeError("Secret values cannot be pickled")

    def __bool__(self) -> bool:
        return bool(self._value)


def read_private_file(path: Path, what: str) -> str:
    """The text of a file holding a secret: only this user's own regular file with mode 0600 (or stricter), checked
    on the descriptor that is read (caerus.runtime.private_file: the one definition of that rule)."""
    try:
        return read_private_text(path, what)
    except PrivateFileError as exc:
        raise CredentialsError(str(exc)) from None


def table_text(table: Mapping[str, object], venue: str, name: str, where: str,
               required: bool = True) -> str | None:
    """A non-empty string setting ``name`` of ``venue``'s table (None when absent and not required)."""
    v = table.get(name)
    if v is None:
        if required:
            raise CredentialsError(f"{where}: missing {name!r} for {venue}")
        return None
    if not isinstance(v, str) or not v:
        raise CredentialsError(f"{where}: {venue}.{name} must be a non-empty string")
    return v


CREDENTIAL_NETWORKS = ("testnet", "mainnet")


def table_network(table: Mapping[str, object], venue: str, where: str) -> str:
    """The network a venue table's credentials are for: ``network`` when set, else testnet."""
    v = table.get("network", "testnet")
    if v not in CREDENTIAL_NETWORKS:
        raise CredentialsError(f"{where}: {venue}.network must be \"testnet\" or \"mainnet\", got {str(v)[:20]!r}")
    return str(v)


def _spec(venue: str) -> CredentialSpec:
    from caerus.venues import registry

    try:
        entry = registry.get(venue).order_entry
    except registry.UnknownVenue as exc:
        raise CredentialsError(str(exc)) from None
    if entry is None:
        raise CredentialsError(f"venue {venue!r} has no order entry, so no credentials")
    return entry.credentials


def load_from_file(venue: str, path: str | Path) -> Any:
    """Credentials for ``venue`` from a 0600 TOML file (its ``[<venue>]`` table)."""
    spec = _spec(venue)
    path = Path(path)
    text = read_private_file(path, "credentials file")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Keep only the decoder's "(at line L, column C)" position: never echo file content.
        msg = str(exc)
        where = msg[msg.rfind("(at "):] if "(at " in msg else ""
        raise CredentialsError(f"credentials file {path} is not valid TOML {where}".rstrip()) from None
    table = doc.get(venue)
    if not isinstance(table, dict):
        raise CredentialsError(f"credentials file {path} has no [{venue}] table")
    return spec.from_table(table, f"credentials file {path}", path.parent)


def load_from_env(venue: str, env: Mapping[str, str] | None = None) -> Any:
    """Credentials for ``venue`` from its environment variables (named in the venue's credentials module)."""
    spec = _spec(venue)
    env = os.environ if env is None else env
    return spec.from_table(spec.env_table(env), "environment", None)


def load_credentials(venue: str, path: str | Path | None = None,
                     env: Mapping[str, str] | None = None) -> Any:
    """From ``path`` when given (never falls back silently), else from the environment."""
    return load_from_file(venue, path) if path is not None else load_from_env(venue, env)
