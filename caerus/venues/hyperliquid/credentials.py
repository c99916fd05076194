"""Hyperliquid order-entry credentials: the API/agent wallet's private key and an optional vault address.

TOML table ``[hyperliquid]``: ``private_key`` (32-byte hex, optionally 0x-prefixed), ``vault_address``,
``network`` (testnet | mainnet, default testnet). Environment: ``CAERUS_HL_PRIVATE_KEY``,
``CAERUS_HL_VAULT_ADDRESS``, ``CAERUS_HL_NETWORK``. The key stays inside :class:`Secret`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from caerus.venuekit.credentials import CredentialsError, Secret, table_network, table_text

if TYPE_CHECKING:
    from caerus.venues.hyperliquid.signing import HyperliquidSigner

ENV_PRIVATE_KEY = "CAERUS_HL_PRIVATE_KEY"
ENV_VAULT_ADDRESS = "CAERUS_HL_VAULT_ADDRESS"
ENV_NETWORK = "CAERUS_HL_NETWORK"


@dataclass(frozen=True, repr=False)
class HyperliquidCredentials:
    private_key: Secret
    vault_address: str | None = None
    network: str = "testnet"  # the network this key is for

    def __post_init__(self) -> None:
        raw = self.private_key.reveal()
        hexpart = raw[2:] if raw.startswith("0x") else raw
        if len(hexpart) != 64 or any(c not in "0123456789abcdefABCDEF" for c in hexpart):
            raise CredentialsError("Hyperliquid private_key must be 64 hex digits (optionally 0x-prefixed)")
        if self.vault_address is not None:
            v = self.vault_address
            if not (v.startswith("0x") and len(v) == 42):
                raise CredentialsError("Hyperliquid vault_address must be a 0x-prefixed 20-byte hex address")

    @property
    def account_id(self) -> str:
        """The account orders are for: the vault when one is set, else the wallet's address (both public)."""
        if self.vault_address is not None:
            return self.vault_address.lower()
        from eth_account import Account

        return str(Account.from_key(self.private_key.reveal()).address).lower()

    def signer(self, *, is_mainnet: bool) -> HyperliquidSigner:
        from caerus.venues.hyperliquid.signing import HyperliquidSigner

        return HyperliquidSigner(self.private_key.reveal(), is_mainnet=is_mainnet, vault_address=self.vault_address)

    def __repr__(self) -> str:
        return f"HyperliquidCredentials(private_key=<redacted>, vault_address={self.vault_address})"


def from_table(table: Mapping[str, object], where: str, base: Path | None) -> HyperliquidCredentials:
    key = table_text(table, "hyperliquid", "private_key", where)
    assert key is not None
    return HyperliquidCredentials(private_key=Secret(key),
                                  vault_address=table_text(table, "hyperliquid", "vault_address", where,
                                                           required=False),
                                  network=table_network(table, "hyperliquid", where))


def env_table(env: Mapping[str, str]) -> dict[str, object]:
    table = {"private_key": env.get(ENV_PRIVATE_KEY), "vault_address": env.get(ENV_VAULT_ADDRESS),
             "network": env.get(ENV_NETWORK)}
    if not table["private_key"]:
        raise CredentialsError(f"{ENV_PRIVATE_KEY} is not set")
    return {k: v for k, v in table.items() if v}
