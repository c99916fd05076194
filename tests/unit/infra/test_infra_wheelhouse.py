"""Which wheels a host can take: the target from its facts, the manylinux tags its glibc accepts, the pip command."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.facts import parse_facts
from infra.locks import FLEET_LOCK
from infra.wheelhouse import Target, WheelhouseError, download_command
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
