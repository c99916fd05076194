"""`invoke collect` does not trust the host's file names: a listing that steps out of the local folder is refused
(a fake SFTP server answering with hostile names; the real-sshd copies are in tests/integration/infra)."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.collect import UnsafeRemoteName, collect_from, pull_tree


@dataclass
class Attr:
    filename: str
    st_mode: int
    st_size: int = 5


class FakeSftp:
    """Serves a fixed tree: {remote folder: [entries]}; files hold b"hello"."""

    def __init__(self, tree: dict[str, list[Attr]]) -> None:
        self.tree = tree
        self.fetched: list[tuple[str, str]] = []

    def listdir_attr(self, path: str) -> list[Attr]:
        return self.tree[path]

    def get(self, remote: str, local: str) -> None:
        self.fetched.append((remote, local))
        Path(local).write_bytes(b"hello")


FILE, DIR = stat.S_IFREG | 0o644, stat.S_IFDIR | 0o755


@pytest.mark.parametrize("name", ["../../x", "..", ".", "/etc/cron.d/x", "a/../../b", "sub/x", "a\\..\\b", "",
                                  "x\0y"])
def test_pull_tree_refuses_a_hostile_file_name(tmp_path: Path, name: str) -> None:
    out = tmp_path / "sessions" / "s1"
    sftp = FakeSftp({"/r/s1": [Attr("ok.txt", FILE), Attr(name, FILE)]})
    with pytest.raises(UnsafeRemoteName, match="is not a plain file name") as exc:
        pull_tree(sftp, "/r/s1", out)
    assert repr(name) in str(exc.value) and "/r/s1" in str(exc.value)  # names the bad name and where it was
    assert not (tmp_path / "x").exists() and not (tmp_path / "b").exists()
    assert all(p.is_relative_to(out) for p in tmp_path.rglob("*") if p.is_file())


def test_pull_tree_refuses_a_hostile_name_in_a_subfolder(tmp_path: Path) -> None:
    sftp = FakeSftp({"/r/s1": [Attr("hist", DIR)], "/r/s1/hist": [Attr("../../../escaped", FILE)]})
    with pytest.raises(UnsafeRemoteName, match=r"'\.\./\.\./\.\./escaped'"):
        pull_tree(sftp, "/r/s1", tmp_path / "sessions" / "s1")
    assert sftp.fetched == [] and not (tmp_path / "escaped").exists()


def test_pull_tree_refuses_a_name_resolving_outside_through_a_symlink(tmp_path: Path) -> None:
    out = tmp_path / "sessions" / "s1"
    out.mkdir(parents=True)
    (out / "link").symlink_to(tmp_path)  # left by anything: a name that resolves outside is refused all the same
    sftp = FakeSftp({"/r/s1": [Attr("link", DIR)], "/r/s1/link": [Attr("x", FILE)]})
    with pytest.raises(UnsafeRemoteName, match="outside"):
        pull_tree(sftp, "/r/s1", out)
    assert not (tmp_path / "x").exists()


def test_pull_tree_copies_plain_names(tmp_path: Path) -> None:
    sftp = FakeSftp({"/r/s1": [Attr("env.json", FILE), Attr("..hidden", FILE), Attr("h", DIR)],
                     "/r/s1/h": [Attr("a.hlog", FILE)]})
    copied, skipped = pull_tree(sftp, "/r/s1", tmp_path / "s1")
    assert (copied, skipped) == (3, 0)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "s1/..hidden", "s1/env.json", "s1/h/a.hlog"]


@dataclass
class FakeHost:
    sftp_obj: FakeSftp
    prefix: str = ""

    @property
    def conn(self) -> FakeHost:
        return self

    def sftp(self) -> FakeSftp:
        return self.sftp_obj

    def path(self, absolute: str) -> str:
        return absolute


@pytest.mark.parametrize("given", [None, ["good", "x/../../../y"]])
def test_collect_refuses_a_hostile_session_name(tmp_path: Path, given: list[str] | None) -> None:
    """Listed by the host (every session collected) or named by the operator: refused before any copy."""
    sftp = FakeSftp({"/var/lib/caerus/sessions": [Attr("good", DIR), Attr("x/../../../y", DIR)],
                     "/var/lib/caerus/sessions/good": [Attr("a", FILE)],
                     "/var/lib/caerus/sessions/x/../../../y": [Attr("a", FILE)]})
    with pytest.raises(UnsafeRemoteName, match=r"session folder name 'x/\.\./\.\./\.\./y'"):
        collect_from(FakeHost(sftp), tmp_path / "sessions", given, say=lambda s: None)  # type: ignore[arg-type]
    assert sftp.fetched == [] and not (tmp_path / "sessions").exists()
