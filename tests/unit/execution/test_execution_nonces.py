"""Hyperliquid nonces across restarts (caerus.venues.hyperliquid.nonces): the reservation on disk keeps every
nonce of a new run above every nonce an earlier run may have used, even after a crash or a clock stepped back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from caerus.venues.hyperliquid.nonces import RESERVE_MS, NonceReservation

NOW = 1_790_000_000_000


def test_a_restart_after_a_crash_starts_above_the_whole_reservation(tmp_path: Path) -> None:
    path = tmp_path / "state" / "hl.nonce"
    first = NonceReservation(path)
    assert first.start(NOW) == 0 and first.reserved == NOW + RESERVE_MS
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    # ... the run signs nonces up to NOW + 1000 and crashes without close(): the next start is above the
    # reservation, whatever the clock says (here: stepped back an hour).
    second = NonceReservation(path)
    assert second.start(NOW - 3_600_000) == NOW + RESERVE_MS


def test_idle_work_extends_the_reservation_only_when_due_and_a_clean_stop_records_the_last(tmp_path: Path) -> None:
    r = NonceReservation(tmp_path / "hl.nonce")
    r.start(NOW)
    writes = r.writes
    r.extend_if_due(NOW + 1000)  # far from the end: no write
    assert r.writes == writes
    r.extend_if_due(NOW + RESERVE_MS // 2 + 1)  # past half: extended a full reservation beyond the last nonce
    assert r.writes == writes + 1 and r.reserved == NOW + RESERVE_MS // 2 + 1 + RESERVE_MS
    r.close(NOW + 5000)
    assert NonceReservation(tmp_path / "hl.nonce").start(NOW) == NOW + 5000


def test_an_unreadable_nonce_file_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "hl.nonce"
    path.write_text("garbage")
    with pytest.raises(ValueError, match="is not a number"):
        NonceReservation(path).start(NOW)
