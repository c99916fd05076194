"""The emulator's order desk for a local session (``--transport emulator``): real signed Hyperliquid order entry
over TLS WebSocket to the venue emulator, so a session's orders leave through a real socket (``t_sent`` is the
send syscall, ``t_wire_out`` its kernel transmit stamp) instead of ending in the paper transport's function call.

A throwaway Hyperliquid test wallet is made per session. Its key goes into a 0600 credentials file in a private
0700 folder outside the session folder (a session folder is collected and reported; a key never is), which is
removed when the session ends; the emulator learns only the wallet's address (``CAERUS_SIM_HL_ADDRESS``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from eth_account import Account

VENUE = "hyperliquid"  # the strategy's orders go to Hyperliquid (Binance leads, Hyperliquid is traded)


class EmulatorOrderDesk:
    """Owns the session's test wallet and its private folder; ``close()`` removes both (idempotent)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="caerus-order-desk-"))  # 0700, created by mkdtemp
        account = Account.create()
        self.address: str = account.address
        self.credentials = self.dir / "credentials.toml"
        fd = os.open(self.credentials, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f'[hyperliquid]\nprivate_key = "{account.key.hex()}"\n')
        self.state_dir = self.dir / "state"  # the transport's nonce reservation
        self.state_dir.mkdir(mode=0o700)

    def sim_env(self) -> tuple[tuple[str, str], ...]:
        """What the emulator needs to accept this wallet's signatures (an address: nothing secret)."""
        return (("CAERUS_SIM_HL_ADDRESS", self.address), ("CAERUS_SIM_HL_NETWORK", "testnet"))

    def execution_args(self, urls: dict[str, Any]) -> list[str]:
        """`caerus execution` transport arguments: the live Hyperliquid transport, pointed at the emulator."""
        return ["--transport", VENUE, "--enable-live", "--network", "testnet", "--credentials", str(self.credentials),
                "--state-dir", str(self.state_dir), "--url", str(urls[f"{VENUE}_url"]), "--ca-file",
                str(urls["ca_file"])]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
