"""Which wheels a host can take: the target from its facts, the manylinux tags its glibc accepts, the pip command;
and two deploys sharing a wheelhouse cache build it once (pip download replaced: unit tests start no process)."""

from __future__ import annotations

import fcntl
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from infra import wheelhouse
from infra.facts import parse_facts
from infra.locks import FLEET_LOCK
from infra.wheelhouse import Target, WheelhouseError, build_wheelhouse, download_command
from tests.unit.infra.test_infra_units import EC2_PROBE


def test_target_from_ec2_facts_and_its_tags() -> None:
    target = Target.of(parse_facts(EC2_PROBE))
    assert target == Target("3.11", "x86_64", "2.34") and target.key == "cp311-x86_64-glibc2.34"
    tags = target.platform_tags()
    assert tags[0] == "manylinux_2_34_x86_64" and "manylinux_2_35_x86_64" not in tags
    assert {"manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64",
            "manylinux_2_28_x86_64", "manylinux_2_5_x86_64"} <= set(tags)
    assert tags[-1] == "linux_x86_64" and len(tags) == len(set(tags))


def test_graviton_target_never_takes_x86_wheels() -> None:
    tags = Target("3.12", "aarch64", "2.39").platform_tags()
    assert all(t.endswith("_aarch64") for t in tags) and tags[0] == "manylinux_2_39_aarch64"


@pytest.mark.parametrize("drop,named", [("python3_version", "python3_version"), ("machine", "machine"),
                                        ("glibc", "glibc")])
def test_target_names_the_missing_fact(drop: str, named: str) -> None:
    facts = parse_facts(EC2_PROBE)
    setattr(facts, drop, "")
    with pytest.raises(WheelhouseError, match=named):
        Target.of(facts)


@pytest.mark.parametrize("glibc", ["musl", "3.1", ""])
def test_a_host_without_glibc_2_has_no_manylinux_wheels(glibc: str) -> None:
    with pytest.raises(WheelhouseError, match="glibc"):
        Target("3.11", "x86_64", glibc).platform_tags()


def test_download_command_takes_binary_wheels_with_hashes_for_the_target(tmp_path: Path) -> None:
    cmd = download_command(FLEET_LOCK, Target("3.11", "x86_64", "2.34"), tmp_path)
    assert cmd[1:4] == ["-m", "pip", "download"]
    for flag in ("--require-hashes", "--no-deps", "--only-binary=:all:"):
        assert flag in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.11" and cmd[cmd.index("--abi") + 1] == "cp311"
    assert cmd[cmd.index("-r") + 1] == str(FLEET_LOCK) and cmd[cmd.index("-d") + 1] == str(tmp_path)
    platforms = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"]
    assert platforms == Target("3.11", "x86_64", "2.34").platform_tags()


def _fake_download(calls: list[Path], hold: threading.Event) -> Callable[..., subprocess.CompletedProcess[str]]:
    """pip download's stand-in: writes one wheel into ``-d`` and holds (the lock) until ``hold`` is set."""
    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        dest = Path(cmd[cmd.index("-d") + 1])
        calls.append(dest)
        (dest / "msgpack-1.2.4-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"wheel")
        assert hold.wait(30), "the test never let the download finish"
        return subprocess.CompletedProcess(cmd, 0, "", "")
    return run


def test_two_deploys_sharing_a_cache_download_the_wheelhouse_once(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    hold, waiting = threading.Event(), threading.Event()
    monkeypatch.setattr(wheelhouse.subprocess, "run", _fake_download(calls, hold))
    real_sleep = time.sleep

    def sleep(s: float) -> None:  # the second builder polls the lock: it is waiting for the first
        waiting.set()
        real_sleep(min(s, 0.01))

    monkeypatch.setattr(wheelhouse.time, "sleep", sleep)
    target, cache = Target("3.11", "x86_64", "2.34"), tmp_path / "cache"
    got: list[Path] = []
    builders = [threading.Thread(target=lambda: got.append(build_wheelhouse(FLEET_LOCK, target, cache)))
                for _ in range(2)]
    builders[0].start()
    for _ in range(3000):  # the first is downloading (it holds the lock) before the second starts
        if calls:
            break
        real_sleep(0.01)
    builders[1].start()
    assert waiting.wait(30), "the second builder never waited for the lock"
    hold.set()
    for b in builders:
        b.join(30)
    assert not any(b.is_alive() for b in builders)
    assert len(calls) == 1 and len(got) == 2 and got[0] == got[1]
    assert (got[0] / "msgpack-1.2.4-cp311-cp311-manylinux_2_17_x86_64.whl").read_bytes() == b"wheel"
    assert (got[0] / "fleet.txt").read_bytes() == FLEET_LOCK.read_bytes()


def test_a_builder_waits_for_another_at_most_its_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    hold = threading.Event()
    hold.set()
    monkeypatch.setattr(wheelhouse.subprocess, "run", _fake_download(calls, hold))
    target, cache = Target("3.11", "x86_64", "2.34"), tmp_path / "cache"
    cache.mkdir()
    lock = cache / f"{target.key}-{wheelhouse.lock_digest(FLEET_LOCK)[:16]}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another deploy is building it
        with pytest.raises(WheelhouseError, match=r"another deploy has been building cp311-x86_64-glibc2\.34-"):
            build_wheelhouse(FLEET_LOCK, target, cache, timeout_s=0.3)
        assert calls == []
    build_wheelhouse(FLEET_LOCK, target, cache, timeout_s=0.3)  # released: this one builds it
    assert len(calls) == 1
