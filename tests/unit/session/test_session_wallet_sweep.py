"""The emulator session's throwaway wallet folders: named after their runner (pid and start time), removed at the
next start when that runner is gone (dead pid, or a pid since reused by another process), kept while it runs;
nothing but our own real folders with a name we made is ever touched."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import psutil
import pytest

from caerus.session import order_desk
from caerus.session.order_desk import PREFIX, EmulatorOrderDesk, sweep_stale


def _dead_pid() -> int:
    # above the kernel's pid_max: no process can have it
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def _wallet(base: Path, pid: int, stamp: int) -> Path:
    d = base / f"{PREFIX}{pid}-{stamp}-abc_123"
    d.mkdir(mode=0o700)
    (d / "credentials.toml").write_text('[hyperliquid]\nprivate_key = "0x00"\n')
    (d / "credentials.toml").chmod(0o600)
    return d


def test_a_desk_names_its_folder_after_its_runner_and_is_private(tmp_path: Path) -> None:
    desk = EmulatorOrderDesk(base=tmp_path)
    try:
        pid, stamp = order_desk._owner(desk.dir.name) or (0, 0)
        assert pid == os.getpid()
        assert abs(stamp - round(psutil.Process().create_time() * 100)) <= 1
        assert stat.S_IMODE(desk.dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(desk.credentials.stat().st_mode) == 0o600
    finally:
        desk.close()
    assert not desk.dir.exists()


def test_a_wallet_whose_runner_is_dead_is_swept_and_a_live_one_kept(tmp_path: Path) -> None:
    stale = _wallet(tmp_path, _dead_pid(), 12345)
    live = EmulatorOrderDesk(base=tmp_path)  # this test process is its runner, alive
    init = psutil.Process(1)
    other_live = _wallet(tmp_path, 1, round(init.create_time() * 100))  # pid 1, its real start time: alive
    try:
        assert sweep_stale(tmp_path) == [stale]
        assert not stale.exists()
        assert live.credentials.is_file() and other_live.is_dir()
    finally:
        live.close()


def test_a_reused_pid_does_not_keep_a_wallet(tmp_path: Path) -> None:
    # Our pid is alive, but it is not the process that made this folder (the start time differs).
    stamp = round(psutil.Process().create_time() * 100)
    reused = _wallet(tmp_path, os.getpid(), stamp - 100_000)
    assert sweep_stale(tmp_path) == [reused]


def test_only_our_own_real_folders_with_our_names_are_touched(tmp_path: Path) -> None:
    dead = _dead_pid()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("x")
    os.symlink(target, tmp_path / f"{PREFIX}{dead}-1-link")  # a symlink named like a stale wallet
    legacy = tmp_path / f"{PREFIX}a1b2c3d4"  # no owner in the name (made before names carried one)
    legacy.mkdir()
    unrelated = tmp_path / "caerus-order-something-1-2-x"
    unrelated.mkdir()
    theirs = _wallet(tmp_path, dead, 7)
    nobody = pwd.getpwnam("nobody")
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)  # the tests run as root; chown fails loudly otherwise
    assert sweep_stale(tmp_path) == []
    assert (target / "keep").is_file() and os.path.islink(tmp_path / f"{PREFIX}{dead}-1-link")
    assert legacy.is_dir() and unrelated.is_dir() and theirs.is_dir()


def test_a_desk_that_fails_half_way_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> None:
        raise RuntimeError("no entropy")

    monkeypatch.setattr(order_desk.Account, "create", boom)
    with pytest.raises(RuntimeError, match="no entropy"):
        EmulatorOrderDesk(base=tmp_path)
    assert list(tmp_path.iterdir()) == []
