"""What every venue's credentials are made of, and that they never leak: :class:`Secret`, :func:`redact`, the
0600 file rule, and the readers of a venue's credentials table.

A venue's own credentials module (``caerus.venues.<venue>.credentials``) builds its credentials object with these;
finding a venue's credentials by name (file or environment) is caerus.execution.credentials.

Credentials are bound to a network: without ``network`` they are testnet credentials, and a live transport
refuses credentials bound to another network than the one it was asked for (caerus.venuekit.order_session).

Secret values live only inside :class:`Secret`, whose ``repr``/``str`` are ``<redacted>`` and which refuses to be
pickled; errors name the variable, key or file that was wrong, never the value. A secret that has to travel inside
a plain string (the Binance listen key is part of the user-data stream's URL) is taken out of any text that is
logged, raised or reported with :func:`redact`, which leaves the same ``<redacted>`` marker.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from caerus.runtime.private_file import PrivateFileError, read_private_text


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
