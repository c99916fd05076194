"""Segment files and their folder against a hostile neighbour: what another local user can plant in a shared
``/dev/shm`` (a FIFO, a symlink, a file of theirs, a loose folder) is refused with a clear error, never followed,
never waited on, and a failed create leaves nothing behind.

Every create/attach that a planted FIFO could block runs in a thread joined with a timeout; if the call is stuck
the test opens the FIFO's other end to release it and fails.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from caerus import wire
from caerus.ipc import segment
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from tests.kit.bounded import bounded_call


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _nobody() -> tuple[int, int]:
    import pwd

    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def test_create_refuses_a_fifo_at_the_segment_name(shm_dir: Path) -> None:
    fifo = segment.shm_path("fifo")
    os.mkfifo(fifo, 0o600)
    exc = bounded_call(lambda: SwmrWriter.create("fifo", wire.BOOK, 8), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc
    assert "is not a regular file (a FIFO)" in str(exc) and str(fifo) in str(exc)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left alone, not replaced
    assert _leftovers(shm_dir) == []


def test_create_refuses_a_symlink_at_the_segment_name(shm_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_bytes(b"precious")
    os.symlink(target, segment.shm_path("link"))
    exc = bounded_call(lambda: SwmrWriter.create("link", wire.BOOK, 8))
    assert isinstance(exc, segment.SegmentUntrusted), exc
    assert "cannot be opened safely" in str(exc)
    assert target.read_bytes() == b"precious"
    assert os.path.islink(segment.shm_path("link"))
    assert _leftovers(shm_dir) == []


def test_create_refuses_a_symlink_to_a_fifo(shm_dir: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    os.symlink(fifo, segment.shm_path("linkfifo"))
    exc = bounded_call(lambda: SwmrWriter.create("linkfifo", wire.BOOK, 8), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc


def test_create_refuses_another_users_file_and_leaves_no_temporary_file(shm_dir: Path) -> None:
    path = segment.shm_path("theirs")
    path.write_bytes(b"\0" * 4096)
    uid, gid = _nobody()
    os.chown(path, uid, gid)  # the tests run as root, like the fleet on a host
    with pytest.raises(segment.SegmentUntrusted, match=rf"owned by uid {uid}, not by this user"):
        SwmrWriter.create("theirs", wire.BOOK, 8)
    assert os.stat(path).st_uid == uid  # untouched
    assert _leftovers(shm_dir) == []


def test_a_rename_refused_at_the_last_moment_leaves_no_temporary_file(shm_dir: Path) -> None:
    # A directory planted at the name between the checks and the rename (the race window): rename fails, and the
    # temporary file must go with the error.
    path = segment.shm_path("race")

    def plant(_seg: segment.Mapping) -> None:
        path.mkdir()
        (path / "x").write_bytes(b"x")

    with pytest.raises(OSError):
        segment.create("race", wire.BOOK, segment.KIND_SWMR, 8, segment.slot_stride_for(wire.BOOK.size), 4096,
                       init=plant)
    assert _leftovers(shm_dir) == []
    assert path.is_dir()


def test_a_failing_init_leaves_no_temporary_file(shm_dir: Path) -> None:
    def boom(_seg: segment.Mapping) -> None:
        raise RuntimeError("init failed")

    with pytest.raises(RuntimeError, match="init failed"):
        segment.create("boom", wire.BOOK, segment.KIND_SWMR, 8, 64, 4096, init=boom)
    assert list(shm_dir.iterdir()) == []


def test_create_replaces_our_own_stale_file(shm_dir: Path) -> None:
    # The safe open must not refuse what it should take over: our own (dead writer's) segment.
    w = SwmrWriter.create("mine", wire.BOOK, 8)
    old = os.stat(segment.shm_path("mine")).st_ino
    w.close()
    w2 = SwmrWriter.create("mine", wire.BOOK, 8)
    assert os.stat(segment.shm_path("mine")).st_ino != old
    w2.close(unlink=True)


def test_attach_refuses_a_fifo(shm_dir: Path) -> None:
    fifo = segment.shm_path("afifo")
    os.mkfifo(fifo, 0o600)
    exc = bounded_call(lambda: SwmrReader.attach("afifo", wire.BOOK, timeout=1), fifo)
    assert isinstance(exc, segment.SegmentUntrusted), exc
    assert "a FIFO" in str(exc)


# -- the folder ---------------------------------------------------------------------------------------------------


def test_a_fresh_shm_dir_is_created_0700(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "fresh" / "shm"
    monkeypatch.setenv("CAERUS_SHM_DIR", str(folder))
    old = os.umask(0)  # 0700 whatever the umask
    try:
        w = SwmrWriter.create("r", wire.BOOK, 8)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert os.lstat(folder).st_uid == os.geteuid()
    w.close(unlink=True)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707, 0o1777])
def test_a_group_or_world_writable_shm_dir_of_ours_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               mode: int) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    os.chmod(folder, mode)
    monkeypatch.setenv("CAERUS_SHM_DIR", str(folder))
    # 01777 owned by root is the shared-folder case (accepted); make it another owner's so it must be refused
    if mode & stat.S_ISVTX and os.geteuid() == 0:
        uid, gid = _nobody()
        os.chown(folder, uid, gid)
        expected = f"is owned by uid {uid}"
    else:
        expected = f"is writable by group or others \\(mode {mode:04o}; needs 0700\\)"
    with pytest.raises(segment.ShmDirUntrusted, match=rf"segment folder {folder} \(CAERUS_SHM_DIR\) {expected}"):
        SwmrWriter.create("r", wire.BOOK, 8)
    with pytest.raises(segment.ShmDirUntrusted):
        SwmrReader.attach("r", wire.BOOK, timeout=0)
    assert list(folder.iterdir()) == []


def test_a_symlinked_shm_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, tmp_path / "link")
    monkeypatch.setenv("CAERUS_SHM_DIR", str(tmp_path / "link"))
    with pytest.raises(segment.ShmDirUntrusted, match="is a symlink"):
        SwmrWriter.create("r", wire.BOOK, 8)
    assert list(real.iterdir()) == []


def test_another_users_shm_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    uid, gid = _nobody()
    os.chown(folder, uid, gid)
    monkeypatch.setenv("CAERUS_SHM_DIR", str(folder))
    with pytest.raises(segment.ShmDirUntrusted, match=rf"is owned by uid {uid}, not by this user"):
        segment.ensure_shm_dir()


def test_a_file_as_shm_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_bytes(b"")
    monkeypatch.setenv("CAERUS_SHM_DIR", str(tmp_path / "file"))
    with pytest.raises(segment.ShmDirUntrusted, match="is not a directory"):
        segment.ensure_shm_dir()


def test_the_system_dev_shm_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    # /dev/shm: root-owned, 01777. Accepted (the default); its files are checked one by one.
    st = os.lstat("/dev/shm")
    assert st.st_uid == 0 and st.st_mode & stat.S_ISVTX, "this test expects the usual root-owned sticky /dev/shm"
    monkeypatch.setenv("CAERUS_SHM_DIR", "/dev/shm")
    assert segment.ensure_shm_dir() == Path("/dev/shm")
