"""Hyperliquid nonces stay strictly increasing across restarts (the venue refuses a reused or older nonce).

A nonce is the order's millisecond timestamp, or the last one + 1; within a process the signer keeps them
increasing. Across a restart (or a clock stepped back) only a record on disk can: at start the transport reads the
highest nonce the last run may have used and *reserves* a range above it by writing ``max(now, stored) +
RESERVE_MS``; orders use nonces inside the reservation, and the engine's idle work extends it well before it runs
out, so the file is written every few minutes and never on an order's path. A crash leaves the reservation on
disk: the next start begins above it. An order that would need a nonce past the reservation (idle work stalled for
minutes) is refused and counted, never signed with a nonce that could repeat.

The file (one per network and account) is written atomically, mode 0600.
"""

from __future__ import annotations

import os
from pathlib import Path

RESERVE_MS = 600_000  # 10 min of nonces reserved ahead (the venue accepts nonces up to a day ahead)


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/caerus``, else ``~/.local/state/caerus``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "caerus"


class NonceReservation:
    """The reserved nonce range of one account on one network, kept in ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reserved = 0  # nonces up to this one may be used
        self.writes = 0

    def start(self, now_ms: int) -> int:
        """Reserve a range; returns the floor: every nonce of this run must be above it."""
        stored = self._read()
        floor = max(stored, 0)
        self._write(max(now_ms, floor) + RESERVE_MS)
        return floor

    def extend_if_due(self, last_nonce: int) -> None:
        """Idle work: keep at least half a reservation ahead of the last nonce used."""
        if last_nonce > self.reserved - RESERVE_MS // 2:
            self._write(last_nonce + RESERVE_MS)

    def close(self, last_nonce: int) -> None:
        """A clean stop records the last nonce used (the next run starts just above it)."""
        if last_nonce:
            self._write(last_nonce)

    def _read(self) -> int:
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return 0
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"hyperliquid nonce file {self.path} is not a number: refusing to guess where nonces "
                             "stand (fix or remove it only if no other process trades this account)") from None

    def _write(self, value: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"{value}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self.reserved = value
        self.writes += 1
