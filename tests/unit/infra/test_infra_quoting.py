"""Values reach the host's shell quoted and the host's files validated: `invoke test -k`, the chronyc command, the
reboot command, the runner's CPUs, the host's interface names, and what `deploy` writes into the units' files;
host facts that name a local cache folder stay inside it. A recording fake host stands in for the connection
(what is checked is the exact command string it is handed, and the words a POSIX shell makes of it, by shlex); the
same commands through a real shell and the real sshd are in tests/integration/infra/test_infra_shell_quoting.py."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from invoke import MockContext, Result

import tasks
from infra import kernel, tuning
from infra.configure import reboot_and_wait
from infra.deploy import DeployError, DeployOptions, deploy, units_step
from infra.facts import parse_facts
from infra.hosts import HostRecord, HostStore
from infra.remote import RemoteError, shell_words
from infra.remote_bench import start_detached
from infra.safenames import UnsafeValue, inside
from infra.verify import verify
from infra.wheelhouse import Target, WheelhouseError, build_wheelhouse
from tests.unit.infra.test_infra_units import EC2_PROBE

HOSTILE = "x' or $(touch PWNED) or 'y"


@dataclass
class Ran:
    stdout: str = ""
    stderr: str = ""
    exited: int = 0


@dataclass
class RecordingHost:
    """Stands in for infra.remote.RemoteHost: records every command, answers nothing."""

    commands: list[str] = field(default_factory=list)
    root: bool = True
    prefix: str = ""

    def run(self, command: str, *, sudo: bool = False, check: bool = True, timeout: float | None = None) -> Any:
        self.commands.append(command)
        return Ran()

    def path(self, absolute: str) -> str:
        return absolute

    def read_text(self, absolute: str) -> str | None:
        return None

    def close(self) -> None:
        pass


def test_invoke_test_k_reaches_pytest_as_one_argument() -> None:
    c = MockContext(run=Result())
    tasks.test(c, k=HOSTILE, no_deps=True, workers=2)
    commands = [call.args[0] for call in c.run.call_args_list]
    assert commands == [
        shlex.join([sys.executable, "-m", "pytest", "tests", "-m", "not serial", "-n", "2", "--dist", "loadgroup",
                    "-k", HOSTILE]),
        shlex.join([sys.executable, "-m", "pytest", "tests", "-m", "serial", "-p", "no:xdist", "-k", HOSTILE])]
    for command in commands:  # the parallel pass and the serial pass alike
        assert shlex.split(command)[-2:] == ["-k", HOSTILE]
        assert f"-k {HOSTILE!r}" not in command  # the old Python-repr form, which a shell would expand


def test_invoke_test_without_k_and_with_deps() -> None:
    c = MockContext(run=Result())
    tasks.test(c, unit=True, workers=1)
    assert [call.args[0] for call in c.run.call_args_list] == [
        shlex.join([sys.executable, "-m", "pytest", "tests/unit"])]


def test_invoke_test_fast_tier_leaves_out_slow_in_both_passes() -> None:
    c = MockContext(run=Result())
    tasks.test(c, fast=True, workers=2)  # the fast tier installs no system packages: one call per pass
    assert [shlex.split(call.args[0])[3:6] for call in c.run.call_args_list] == [
        ["tests", "-m", "not serial and (not slow)"], ["tests", "-m", "serial and (not slow)"]]


@pytest.mark.parametrize(("exits", "code"), [((0, 0), None), ((1, 0), 1), ((0, 1), 1), ((5, 0), None),
                                             ((0, 5), None), ((5, 5), 5), ((2, 1), 2)])
def test_invoke_test_runs_both_passes_and_fails_when_either_failed(exits: tuple[int, int], code: int | None) -> None:
    c = MockContext(run=[Result(exited=e) for e in exits])
    if code is None:
        tasks.test(c, no_deps=True, workers=2)
    else:
        with pytest.raises(SystemExit) as exc:
            tasks.test(c, no_deps=True, workers=2)
        assert exc.value.code == code
    assert len(c.run.call_args_list) == 2  # the serial pass runs even when the parallel one failed


@pytest.mark.parametrize("chronyc", ["chronyc; touch PWNED", "chronyc -h /run/x $(touch PWNED)",
                                     "chronyc | sh", "chronyc -h '/tmp/a b'"])
def test_chronyc_reaches_the_host_as_plain_words(chronyc: str) -> None:
    host = RecordingHost()
    facts = parse_facts(EC2_PROBE)
    verify(host, facts, kernel.target_plan(facts), [], chronyc, reboot_pending=False)
    [command] = [c for c in host.commands if c.endswith(" -c tracking")]
    assert command == shlex.join([*shlex.split(chronyc), "-c", "tracking"])
    assert shlex.split(command) == [*shlex.split(chronyc), "-c", "tracking"]


def test_shell_words_refuses_what_cannot_be_split() -> None:
    with pytest.raises(RemoteError, match="chronyc command \"chronyc 'unterminated\" cannot be split"):
        shell_words("chronyc 'unterminated", "chronyc command")
    with pytest.raises(RemoteError, match="is empty"):
        shell_words("  ")


def test_reboot_command_from_the_record_is_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = HostRecord(name="h", host="127.0.0.1", user="root", extra={"reboot_command": "kill 1; touch PWNED"})
    host = RecordingHost()

    class Refused(Exception):
        pass

    def no_reconnect(*args: Any, **kwargs: Any) -> Any:
        raise Refused

    import infra.configure as configure_mod

    monkeypatch.setattr(configure_mod, "open_host", no_reconnect)  # no host comes back: the deadline ends it
    with pytest.raises(configure_mod.ConfigureError, match="did not come back"):
        reboot_and_wait(host, record, HostStore(tmp_path / "state"), lambda s: None,  # type: ignore[arg-type]
                        timeout_s=0, first_wait_s=0, poll_s=0)
    assert shlex.join(["kill", "1;", "touch", "PWNED"]) in host.commands


def test_runner_cpus_and_command_are_quoted() -> None:
    host = RecordingHost()
    start_detached(host, "caerus session", "/var/lib/caerus/sessions/.runs/r1", "0,4; touch PWNED")  # type: ignore[arg-type]
    inner = shlex.split(host.commands[1])[4]  # setsid nohup sh -c <inner> ...
    assert inner.startswith("taskset -c '0,4; touch PWNED' caerus session > ")


def test_the_hosts_interface_names_are_quoted_in_the_tune_script(tmp_path: Path) -> None:
    facts = parse_facts(EC2_PROBE)
    facts.nics = {"ens5;touch PWNED": "ena"}
    script = tuning.render_tune_script(facts)
    [line] = [ln for ln in script.splitlines() if ln.startswith("ethtool -C")]
    assert line.startswith("ethtool -C 'ens5;touch PWNED' adaptive-rx off")


# --- deploy: what goes into the units' files -------------------------------------------------------------------

@pytest.mark.parametrize("session", ["live\nLD_PRELOAD=/tmp/evil.so", "live\rX=1", "../etc", "", "a b", "-rf",
                                     "x" * 65, "live;reboot", "$(id)"])
def test_units_refuse_an_unsafe_session_naming_it(session: str) -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    with pytest.raises(DeployError, match=r"--session .* is not allowed: letters, digits") as exc:
        units_step(plan, "ec2-user", session)
    assert repr(session) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("user", ["ec2-user\nEnvironment=LD_PRELOAD=/x", "root User=x", "", "-x"])
def test_units_refuse_an_unsafe_login_user(user: str) -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    with pytest.raises(DeployError, match="login user"):
        units_step(plan, user, "live")


@pytest.mark.parametrize("session", ["live", "s-2024.06.01_a", "A" * 64])
def test_units_take_a_safe_session(session: str) -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    env = {f.path: f.content for f in units_step(plan, "ec2-user", session).files}["/etc/caerus/fleet.env"]
    assert f"\nCAERUS_SESSION={session}\n" in env
    assert [ln.split("=")[0] for ln in env.splitlines() if not ln.startswith("#")] == [
        "CAERUS_SESSION", "CAERUS_SYMBOLS", "CAERUS_METRICS_DIR", "CAERUS_SHM_DIR"]


def test_deploy_refuses_an_unsafe_session_before_anything(tmp_path: Path) -> None:
    """No wheel is built, no host is contacted (the record points at a closed port), nothing is written."""
    store = HostStore(tmp_path / "state")
    record = HostRecord(name="h", host="127.0.0.1", port=1, user="ec2-user", key_path=str(tmp_path / "nokey"))
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(DeployError, match=r"'live\\nLD_PRELOAD=/tmp/x\.so'"):
        deploy(record, store, DeployOptions(session="live\nLD_PRELOAD=/tmp/x.so", lock=tmp_path / "missing.txt"))
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_invoke_deploy_refuses_an_unsafe_session_before_opening_the_state(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from infra import invoke_tasks

    state = tmp_path / "state"
    with pytest.raises(SystemExit) as exc:
        invoke_tasks.deploy(MockContext(), host="h", session="live\nLD_PRELOAD=/tmp/x.so", state_dir=str(state))
    assert exc.value.code == 2
    assert "error: --session 'live\\nLD_PRELOAD=/tmp/x.so' is not allowed" in capsys.readouterr().err
    assert not state.exists()


# --- host facts that name a local folder ----------------------------------------------------------------------

@pytest.mark.parametrize("field_name,value", [("machine", "../../../../tmp/evil"), ("machine", "x86_64/../../x"),
                                              ("machine", "X86_64"), ("glibc", "2.34/../../../x"),
                                              ("glibc", "2.34\n"), ("python3_version", "3.11/../../x"),
                                              ("python3_version", "2.7")])
def test_hostile_host_facts_never_become_a_path(field_name: str, value: str, tmp_path: Path) -> None:
    facts = parse_facts(EC2_PROBE)
    setattr(facts, field_name, value)
    with pytest.raises(WheelhouseError, match=r"the host's .* is not allowed") as exc:
        Target.of(facts)
    assert repr(value) in str(exc.value)
    with pytest.raises(WheelhouseError):  # nor when built by hand
        build_wheelhouse(tmp_path / "fleet.txt", Target(**{**{"python": "3.11", "machine": "x86_64",
                                                               "glibc": "2.34"},
                                                            **{{"python3_version": "python"}.get(field_name,
                                                                                                 field_name): value}}),
                         tmp_path / "cache")
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


def test_a_resolved_path_outside_its_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "link").symlink_to(tmp_path)
    assert inside(tmp_path / "cache", tmp_path / "cache" / "cp311-x86_64-glibc2.34-ab", "w")
    for bad in (tmp_path / "cache" / ".." / "x", tmp_path / "cache" / "link" / "x", Path("/etc")):
        with pytest.raises(UnsafeValue, match="outside"):
            inside(tmp_path / "cache", bad, "wheelhouse folder")
