"""Venue credentials for the live transports: read from a 0600 TOML file or the environment.

The caller hands the venue's spec down (the execution app resolved it from the venue registry; nothing here looks
a venue up). Its order entry's :class:`~caerus.venuekit.spec.CredentialSpec` (the venue's own credentials module,
``caerus.venues.<venue>.credentials``) says which table keys and environment variables it reads and builds its
credentials object; the secret handling they share is caerus.venuekit.credentials.

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
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caerus.venuekit.credentials import CredentialsError, read_private_file

if TYPE_CHECKING:
    from caerus.venuekit.spec import CredentialSpec, VenueSpec


def _spec(venue: VenueSpec) -> CredentialSpec:
    entry = venue.order_entry
    if entry is None:
        raise CredentialsError(f"venue {venue.name!r} has no order entry, so no credentials")
    return entry.credentials


def load_from_file(venue: VenueSpec, path: str | Path) -> Any:
    """Credentials for ``venue`` from a 0600 TOML file (its ``[<venue name>]`` table)."""
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
    table = doc.get(venue.name)
    if not isinstance(table, dict):
        raise CredentialsError(f"credentials file {path} has no [{venue.name}] table")
    return spec.from_table(table, f"credentials file {path}", path.parent)


def load_from_env(venue: VenueSpec, env: Mapping[str, str] | None = None) -> Any:
    """Credentials for ``venue`` from its environment variables (named in the venue's credentials module)."""
    spec = _spec(venue)
    env = os.environ if env is None else env
    return spec.from_table(spec.env_table(env), "environment", None)


def load_credentials(venue: VenueSpec, path: str | Path | None = None,
                     env: Mapping[str, str] | None = None) -> Any:
    """From ``path`` when given (never falls back silently), else from the environment."""
    return load_from_file(venue, path) if path is not None else load_from_env(venue, env)
