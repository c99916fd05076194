"""The emulator's order desk for a local session (``--transport emulator``): real signed Hyperliquid order entry
over TLS WebSocket to the venue emulator, so a session's orders leave through a real socket (``t_sent`` is the
send syscall, ``t_wire_out`` its kernel transmit stamp) instead of ending in the paper transport's function call.

A throwaway Hyperliquid test wallet is made per session. Its key goes into a 0600 credentials file in a private
0700 folder outside the session folder (a session folder is collected and reported; a key never is), which is
removed when the session ends; the emulator learns only the wallet's address (``CAERUS_SIM_HL_ADDRESS``).

A runner that cannot clean up (SIGKILL, a crash, a power cut) leaves its wallet folder behind. The folder's name
carries its runner's pid and that process's start time (``caerus-order-desk-<pid>-<start>-<random>``), so the
next session start removes every wallet folder of ours whose runner is gone (:func:`sweep_stale`), and keeps one
whose runner is still running. A pid reused by another process does not keep a folder alive: its start time
differs.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import psutil
from eth_account import Account

log = logging.getLogger(__name__)

VENUE = "hyperliquid"  # the strategy's orders go to Hyperliquid (Binance leads, Hyperliquid is traded)
PREFIX = "caerus-order-desk-"


def _start_stamp(create_time_s: float) -> int:
    """A process's start time in the folder name: centiseconds (the kernel's start time has clock-tick, 10 ms,
    resolution, so this is exact for a given process)."""
    return round(create_time_s * 100)


def _runner_alive(pid: int, stamp: int) -> bool:
    """True when process ``pid`` is running and is the one that started at ``stamp`` (not a reused pid)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # exited, not yet reaped: it will never clean up
            return False
        return abs(_start_stamp(proc.create_time()) - stamp) <= 1
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # cannot tell: keep it
        return True


def _owner(name: str) -> tuple[int, int] | None:
    """(pid, start stamp) from a wallet folder's name; None for a name this module did not make."""
    parts = name[len(PREFIX):].split("-", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), int(parts[1])


def sweep_stale(base: Path | None = None) -> list[Path]:
    """Remove wallet folders left by runners that are gone; returns what was removed.

    Only folders this module named, that are real directories (not symlinks) owned by this user, are considered;
    one whose runner is alive is kept."""
    base = Path(tempfile.gettempdir()) if base is None else Path(base)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        log.warning("could not look for stale order-desk wallets in %s: %s", base, exc.strerror or exc)
        return removed
    uid = os.geteuid()
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        owner = _owner(entry.name)
        if owner is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or _runner_alive(*owner):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)  # fd-based on Linux: never follows a symlink inside
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed


class EmulatorOrderDesk:
    """Owns the session's test wallet and its private folder; ``close()`` removes both (idempotent)."""

    def __init__(self, base: Path | None = None) -> None:
        stamp = _start_stamp(psutil.Process().create_time())
        # mkdtemp: 0700, a fresh unpredictable name under ``base`` (default: the temporary folder)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{stamp}-", dir=base))
        try:
            account = Account.create()
            self.address: str = account.address
            self.credentials = self.dir / "credentials.toml"
            fd = os.open(self.credentials, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f'[hyperliquid]\nprivate_key = "{account.key.hex()}"\n')
            self.state_dir = self.dir / "state"  # the transport's nonce reservation
            self.state_dir.mkdir(mode=0o700)
        except BaseException:
            self.close()
            raise

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
