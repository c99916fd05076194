"""configure / deploy / bench / collect over Fabric against a real sshd on 127.0.0.1 (and a real chronyd).

The host is this machine, so every host path is rendered under a scratch prefix and commands that need
systemd, a bootloader, a reboot or an ENA NIC run in plan mode: they are reported, never executed here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from invoke import Context
from packaging.utils import canonicalize_name

from infra import invoke_tasks
from infra.collect import collect
from infra.configure import configure
from infra.deploy import (
    SESSIONS_DIR,
    DeployError,
    DeployOptions,
    build_wheel,
    deploy,
    ensure_writable_dirs,
    wheel_digest,
)
from infra.hosts import HostRecord, HostStore
from infra.locks import FLEET_LOCK
from infra.remote import HostKeyMismatch, connect, forget_host
from infra.remote_bench import BenchError, run_remote_bench
from tasks import TEST_WHEELHOUSE_ENV
from tests.fixtures.infra_moto import MotoServer
from tests.fixtures.infra_sshd import InfraHost, make_key


def _sha(path: str) -> str | None:
    p = Path(path)
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None


def test_infra_host_key_pinned_then_mismatch_refused(own_infra_test_host: InfraHost) -> None:
    h = own_infra_test_host  # it re-keys sshd: a server of its own
    said: list[str] = []
    connect(h.record, h.store.known_hosts, said.append).close()
    kh = h.store.known_hosts
    assert stat.S_IMODE(kh.stat().st_mode) == 0o600
    line = kh.read_text().strip()
    assert line.startswith(f"[127.0.0.1]:{h.record.port} ssh-ed25519 ")
    assert any("pinned SSH host key" in s for s in said)
    said.clear()
    connect(h.record, h.store.known_hosts, said.append).close()  # same key: accepted silently
    assert said == [] and kh.read_text().strip() == line
    h.server.restart_with(make_key(h.server.dir / "other_host_key"))
    with pytest.raises(HostKeyMismatch, match=r"changed: pinned ssh-ed25519 .* Refusing to connect"):
        connect(h.record, h.store.known_hosts, said.append)
    assert kh.read_text().strip() == line  # the pin was not replaced
    forget_host(kh, h.record.host, h.record.port)
    connect(h.record, h.store.known_hosts, said.append).close()  # explicit forget -> pinned again
    assert kh.read_text().strip() != line


def _moto_instance(h: InfraHost, moto_server: MotoServer) -> str:
    """Make the test host's record name an instance in moto's EC2 (so first contact asks moto for its console)."""
    from infra.aws.clients import AwsTarget

    ec2 = AwsTarget.resolve("ap-northeast-1", moto_server.endpoint).client("ec2")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    iid = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="c7i.2xlarge")["Instances"][0][
        "InstanceId"]
    h.record.instance_id, h.record.region, h.record.endpoint_url = iid, "ap-northeast-1", moto_server.endpoint
    return iid


def test_infra_verified_policy_refuses_moto_console_without_fingerprints(infra_test_host: InfraHost,
                                                                         moto_server: MotoServer) -> None:
    """The host record names an EC2 instance (in moto's server): first contact asks GetConsoleOutput for its
    fingerprints. moto's console has none, so the default policy for an instance (verified) refuses before
    connecting, in one line naming why, and pins nothing."""
    h = infra_test_host
    _moto_instance(h, moto_server)
    said: list[str] = []
    with pytest.raises(HostKeyMismatch) as exc:
        connect(h.record, h.store.known_hosts, said.append)
    msg = str(exc.value)
    assert msg.startswith(f"host key of 127.0.0.1:{h.record.port} not verified: no host key fingerprints in the "
                          "console output") and msg.endswith("— use --host-key tofu to trust on first use")
    assert "\n" not in msg
    assert not h.store.known_hosts.exists() and h.store.load_json("loop", "host_key") is None


def test_infra_verified_policy_refuses_an_unknown_instance_console(infra_test_host: InfraHost,
                                                                   moto_server: MotoServer) -> None:
    """moto refuses GetConsoleOutput for an instance it does not have: the console is unreadable, and the AWS
    error code is what the refusal names."""
    h = infra_test_host
    h.record.instance_id, h.record.region, h.record.endpoint_url = ("i-0123456789abcdef0", "ap-northeast-1",
                                                                    moto_server.endpoint)
    with pytest.raises(HostKeyMismatch, match=r"not verified: console output unreadable "
                                              r"\(InvalidInstanceID\.(NotFound|Malformed)\) — use --host-key tofu"):
        connect(h.record, h.store.known_hosts, lambda s: None, host_key="verified")
    assert not h.store.known_hosts.exists()


def test_infra_tofu_policy_trusts_moto_console_without_fingerprints_and_says_so(infra_test_host: InfraHost,
                                                                               moto_server: MotoServer) -> None:
    h = infra_test_host
    _moto_instance(h, moto_server)
    said: list[str] = []
    connect(h.record, h.store.known_hosts, said.append, host_key="tofu").close()
    check = h.store.load_json("loop", "host_key")
    assert check["status"] == "trusted-on-first-use"
    assert check["detail"].startswith("--host-key tofu: no host key fingerprints in the console output")
    assert check["fingerprint"].startswith("SHA256:") and check["key_type"] == "ssh-ed25519"
    assert any(check["fingerprint"] in s and "trusted-on-first-use" in s and "--host-key tofu" in s for s in said)


def test_infra_verified_policy_refuses_a_host_that_is_no_instance(infra_test_host: InfraHost) -> None:
    h = infra_test_host  # no instance id: no console exists; the default for such a host is tofu
    with pytest.raises(HostKeyMismatch, match="not verified: not an EC2 instance: no console to check — use "
                                              "--host-key tofu"):
        connect(h.record, h.store.known_hosts, lambda s: None, host_key="verified")
    connect(h.record, h.store.known_hosts, lambda s: None).close()
    assert h.store.load_json("loop", "host_key")["status"] == "trusted-on-first-use"


def test_infra_first_contact_checks_the_real_sshd_key_against_a_console(infra_test_host: InfraHost) -> None:
    """A real handshake through the pinning policy: the sshd's key listed on the console is verified and pinned;
    a console listing another key refuses the connection and pins nothing, under either policy."""
    import paramiko

    from infra.hostkeys import parse_console
    from infra.remote import PinOnFirstContact

    h = infra_test_host
    pub = (h.server.dir / "host_ed25519.pub").read_text().split()
    other = make_key(h.server.dir / "impostor_ed25519").with_suffix(".pub").read_text().split()

    def console(key: list[str]) -> str:
        return f"ec2: -----BEGIN SSH HOST KEY KEYS-----\r\n{key[0]} {key[1]} root@ip-10-0-0-1\r\n" \
               "ec2: -----END SSH HOST KEY KEYS-----\r\n"

    def handshake(text: str, known_hosts: Path, policy_name: str = "verified") -> PinOnFirstContact:
        client = paramiko.SSHClient()
        policy = PinOnFirstContact(known_hosts, lambda s: None, parse_console(text), policy=policy_name)
        client.set_missing_host_key_policy(policy)
        try:
            client.connect("127.0.0.1", port=h.record.port, username=h.record.user, key_filename=h.record.key_path,
                           look_for_keys=False, allow_agent=False, timeout=15)
        finally:
            client.close()
        return policy

    for policy_name in ("verified", "tofu"):
        refused = h.store.root / f"kh-refused-{policy_name}"
        with pytest.raises(HostKeyMismatch, match="console output does not list"):
            handshake(console(other), refused, policy_name)
        assert not refused.exists() or refused.read_text() == ""  # nothing pinned
    verified = h.store.root / "kh-verified"
    policy = handshake(console(pub), verified)
    assert policy.check is not None and policy.check.status == "verified"
    assert verified.read_text().split()[1:3] == pub[:2]


def test_infra_configure_plan_mode_renders_verifies_and_is_idempotent(infra_test_host: InfraHost,
                                                                      chronyd_synced) -> None:
    h = infra_test_host
    h.record.extra["chronyc"] = chronyd_synced.chronyc
    real_chrony_conf = _sha("/etc/chrony/chrony.conf")
    first = configure(h.record, h.store, say=lambda s: None)
    assert first["mode"] == "plan"
    plan = first["plan"]
    hot = ",".join(str(c) for c in plan["hot"])
    # files rendered under the prefix, not in this machine's /etc
    conf = (h.prefix / "etc/chrony/chrony.conf").read_text()
    assert "server 169.254.169.123" in conf and "refclock" not in conf.replace("# ", "")  # no /dev/ptp0 here
    irq = (h.prefix / "etc/default/irqbalance").read_text()
    assert f"IRQBALANCE_BANNED_CPULIST={hot}" in irq
    tune = h.prefix / "usr/local/sbin/caerus-tune"
    assert stat.S_IMODE(tune.stat().st_mode) == 0o755
    assert _sha("/etc/chrony/chrony.conf") == real_chrony_conf
    assert not Path("/etc/sysctl.d/99-caerus.conf").exists()
    result = first["result"]
    assert len(result["changed"]) == 5 and result["executed"] == []
    kinds = {p["kind"] for p in result["planned"]}
    assert "reboot" in kinds and "service" in kinds
    reboot = next(p for p in result["planned"] if p["kind"] == "reboot")
    assert "isolcpus" in reboot["why"]
    checks = {c["name"]: c for c in first["verification"]}
    assert checks["kernel cmdline"]["status"] == "pending-reboot"
    assert f"isolcpus=managed_irq,domain,{hot}" in checks["kernel cmdline"]["expected"]
    assert checks["chrony synchronised"]["status"] == "ok"
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    runtime = checks["runtime tuning (THP, ENA moderation, governor, C-states)"]
    assert runtime["status"] in ("ok", "planned")  # plan mode never reports it as failed
    assert (runtime["status"] == "ok") == (runtime["observed"] == "as wanted")
    assert ("transparent hugepages" in runtime["observed"]) == ("[never]" not in thp)
    assert first["chrony_tracking"]["synchronised"] is True
    assert abs(first["chrony_tracking"]["last_offset_s"]) < 1.0
    assert checks["file /etc/chrony/chrony.conf"]["status"] == "ok"
    saved = h.store.load_json("loop", "configure")
    assert saved["verification"] == first["verification"]
    assert h.store.load_json("loop", "plan") == plan
    # second run, through the invoke task: nothing changes, only still-pending system commands are planned again
    invoke_tasks.configure(Context(), host="loop", chronyc=chronyd_synced.chronyc, state_dir=str(h.store.root))
    second = h.store.load_json("loop", "configure")
    assert second["at"] != first["at"]
    assert second["result"]["changed"] == [] and second["result"]["executed"] == []
    assert {p["kind"] for p in second["result"]["planned"]} <= {"reboot", "package", "runtime"}
    assert not any(p["kind"] == "service" for p in second["result"]["planned"])


def test_infra_configure_reports_unsynchronised_chrony(infra_test_host: InfraHost, tmp_path: Path) -> None:
    h = infra_test_host
    h.record.extra["chronyc"] = f"chronyc -h {tmp_path}/no-such.sock"
    summary = configure(h.record, h.store, say=lambda s: None)
    check = next(c for c in summary["verification"] if c["name"] == "chrony synchronised")
    assert check["status"] == "fail" and "14 fields" in check["observed"]
    assert summary["chrony_tracking"] is None


@pytest.fixture(scope="module")
def caerus_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def wheelhouse_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One download of the fleet lock's wheels for every deploy of this module (the hosts share a target): for the
    whole `invoke test` run when it names a folder (both passes and every worker; the download took 13-34 s here),
    else per test process. The deploys only read it; build_wheelhouse serialises its building."""
    shared = os.environ.get(TEST_WHEELHOUSE_ENV)
    return Path(shared) if shared else tmp_path_factory.mktemp("wheelhouse-cache")


def _opts(wheel: Path, cache: Path, **kw: object) -> DeployOptions:
    return DeployOptions(wheel=wheel, wheelhouse_cache=cache, **kw)  # type: ignore[arg-type]


def _locked_pins() -> dict[str, str]:
    from caerus.metrics.deps import parse_lock

    return {p.name: p.version for p in parse_lock(FLEET_LOCK.read_text()) if p.applies()}


# Two deploys, each building a venv from the pinned wheelhouse over the loopback sshd: about 2 min on a calm
# machine, over the suite's 300 s default at load 9-12 (seen in a fresh-clone run beside other suites).
@pytest.mark.timeout(900)
def test_infra_deploy_installs_wheel_and_pinned_units_idempotently(infra_test_host: InfraHost, caerus_wheel: Path,
                                                                   wheelhouse_cache: Path) -> None:
    h = infra_test_host
    configure(h.record, h.store, say=lambda s: None, chronyc="true")
    plan = h.store.load_json("loop", "plan")
    with zipfile.ZipFile(caerus_wheel) as z:  # the host gets the fleet only: no infra/, no benchmarks/
        assert {n.split("/")[0] for n in z.namelist()} == {"caerus", "caerus-0.1.0.dist-info"}
    first = deploy(h.record, h.store, _opts(caerus_wheel, wheelhouse_cache), say=lambda s: None)
    assert first["wheel_changed"] is True and first["mode"] == "plan"
    assert first["dirs_changed"] == ["/var/lib/caerus/sessions", "/var/lib/caerus/metrics"]
    assert (h.prefix / "var/lib/caerus/sessions").is_dir() and first["python"]
    deps = first["dependencies"]
    assert deps["matches"] is True and deps["changed"] is True and deps["pinned"] == len(_locked_pins())
    assert deps["uploaded"] == len(list((h.prefix / "opt/caerus/wheelhouse").glob("*.whl"))) + 1  # + the lock
    assert deps["lock_sha256"] == hashlib.sha256(FLEET_LOCK.read_bytes()).hexdigest()
    record = h.store.load("loop")  # the host record says what is deployed, verified
    assert record.deployed["lock_sha256"] == deps["lock_sha256"] and record.deployed["verified"] is True
    assert record.deployed["wheel_digest"] == wheel_digest(caerus_wheel)
    venv_py = h.prefix / "opt/caerus/venv/bin/python"
    marker = (h.prefix / "opt/caerus/venv/.caerus-wheel").read_text().strip()
    assert marker == wheel_digest(caerus_wheel)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(venv_py), "-c", "import caerus.plan; print(caerus.plan.__file__)"],
                           capture_output=True, text=True, check=True, cwd=h.prefix, env=env)
    assert "/opt/caerus/venv/" in probe.stdout  # imported from the venv, not the checkout
    frozen = subprocess.run([str(venv_py), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True,
                            check=True, env=env)
    installed = {canonicalize_name(d["name"]): d["version"] for d in json.loads(frozen.stdout)}
    assert {n: v for n, v in installed.items() if n not in ("pip", "caerus")} == _locked_pins()
    for absent in ("infra", "matplotlib", "boto3", "fabric", "scipy"):  # automation and reports stay home
        assert subprocess.run([str(venv_py), "-c", f"import {absent}"], capture_output=True, cwd=h.prefix,
                              env=env).returncode != 0, absent
    unit = (h.prefix / "etc/systemd/system/caerus-strategy.service").read_text()
    cpus = " ".join(str(c) for c in plan["placements"]["strategy"]["cpus"])
    assert f"CPUAffinity={cpus}" in unit and "ExecStart=/opt/caerus/venv/bin/caerus strategy" in unit
    assert any(p["command"] == "systemctl daemon-reload" for p in first["result"]["planned"])
    invoke_tasks.deploy(Context(), host="loop", wheel=str(caerus_wheel), state_dir=str(h.store.root))
    second = h.store.load_json("loop", "deploy")
    assert second["wheel_changed"] is False and second["dirs_changed"] == []
    assert second["dependencies"]["changed"] is False and second["dependencies"]["uploaded"] == 0
    assert second["dependencies"]["matches"] is True
    assert second["result"]["changed"] == [] and second["result"]["planned"] == []
    # the venv drifts (a package removed by hand): the next deploy sees it and rebuilds the venv from the lock
    subprocess.run([str(venv_py), "-m", "pip", "uninstall", "-q", "-y", "msgpack"], check=True, env=env)
    said: list[str] = []
    third = deploy(h.record, h.store, _opts(caerus_wheel, wheelhouse_cache), say=said.append)
    assert any("drifted from its lock (missing msgpack==" in s for s in said)
    assert third["dependencies"]["changed"] is True and third["dependencies"]["matches"] is True


FAKE_CAERUS = """#!{python}
# Stand-in for `caerus session` on the test host: writes a session folder like the real runner would.
import json, os, sys, time
args = sys.argv[1:]
assert args[0] == "session", args
if "--help" in args:
    print("usage: caerus session [--duration D] [--out DIR] {live_flag}[--progress MODE] [--no-report]")
    sys.exit(0)
dur = float(args[args.index("--duration") + 1]); out = args[args.index("--out") + 1]
sid = "20261202T000000Z-test"
d = os.path.join(out, sid, "metrics"); os.makedirs(d, exist_ok=True)
print("session starting", flush=True)
time.sleep(dur)
open(os.path.join(d, "feed-binance.hlog"), "w").write("#[StartTime: 0]\\nTag=feed_internal.binance,0.0,1.0,1\\n")
json.dump({{"argv": args, "affinity": sorted(os.sched_getaffinity(0))}}, open(os.path.join(out, sid, "env.json"), "w"))
print("session done", flush=True)
sys.exit(int(os.environ.get("FAKE_RC", "{rc}")))
"""


def _fake_caerus(path: Path, rc: int = 0, live: bool = True) -> str:
    path.write_text(FAKE_CAERUS.format(python=sys.executable, rc=rc, live_flag="[--live] " if live else ""))
    path.chmod(0o755)
    return str(path)


def test_infra_remote_bench_runs_pinned_and_collects(infra_test_host: InfraHost, tmp_path: Path,
                                                     chronyd_synced) -> None:
    h = infra_test_host
    h.record.extra.update(caerus_bin=_fake_caerus(tmp_path / "caerus"), chronyc=chronyd_synced.chronyc)
    h.store.save(h.record)
    said: list[str] = []
    out = tmp_path / "sessions"
    [path] = run_remote_bench(None, host="loop", duration="2s", emulator=False, out=out,
                              state_dir=str(h.store.root), say=said.append, poll_s=0.5)
    assert path == out / "20261202T000000Z-test"
    assert (path / "metrics" / "feed-binance.hlog").read_text().startswith("#[StartTime")
    env = json.loads((path / "env.json").read_text())
    assert "--live" in env["argv"] and env["argv"][env["argv"].index("--duration") + 1] == "2"
    assert env["argv"][-3:] == ["--progress", "lines", "--no-report"]
    host = json.loads((path / "host.json").read_text())
    assert env["affinity"] == host["plan"]["housekeeping"]  # the runner sat on the housekeeping CPUs
    assert host["chrony_tracking"]["synchronised"] is True and host["duration_s"] == 2
    assert any("bench 0:00:0" in s for s in said)  # progress lines while it ran
    # collect again: everything already present, nothing copied
    said.clear()
    collect(h.record, h.store, out, say=said.append)
    assert any("0 file(s) copied, 2 already present" in s for s in said)
    # an interrupted copy (truncated file) is fetched again, the complete one is not
    hlog = path / "metrics" / "feed-binance.hlog"
    full = hlog.read_text()
    hlog.write_text(full[:5])
    said.clear()
    collect(h.record, h.store, out, say=said.append)
    assert any("1 file(s) copied, 1 already present" in s for s in said) and hlog.read_text() == full
    # invoke collect of a session that is not there: clear error, exit 1
    with pytest.raises(SystemExit):
        invoke_tasks.collect(Context(), host="loop", session=["nope"], out=str(out), state_dir=str(h.store.root))


def test_infra_remote_bench_failure_shows_log(infra_test_host: InfraHost, tmp_path: Path) -> None:
    h = infra_test_host
    h.record.extra.update(caerus_bin=_fake_caerus(tmp_path / "caerus", rc=3), chronyc="true")
    h.store.save(h.record)
    with pytest.raises(BenchError, match=r"exited 3:[\s\S]*session done"):
        run_remote_bench(None, host="loop", duration="1", emulator=True, out=tmp_path / "s",
                         state_dir=str(h.store.root), say=lambda s: None, poll_s=0.5)
    with pytest.raises(ValueError, match="duration"):
        run_remote_bench(None, host="loop", duration="soon", emulator=True, out=tmp_path / "s",
                         state_dir=str(h.store.root))


def test_infra_second_host_in_netns_pinned_separately_and_configured(infra_test_host: InfraHost,
                                                                     sshd_netns_server, tmp_path: Path) -> None:
    h = infra_test_host
    ns = sshd_netns_server
    prefix = tmp_path / "nsroot"
    prefix.mkdir()
    second = HostRecord(name="ns2", host=ns.host, port=22, user=ns.user, key_path=str(ns.client_key),
                        remote_prefix=str(prefix), extra={"chronyc": "true"})
    h.store.save(second)
    connect(h.record, h.store.known_hosts, lambda s: None).close()
    summary = configure(second, h.store, say=lambda s: None)
    pins = [ln.split(" ", 1)[0] for ln in h.store.known_hosts.read_text().splitlines()]
    assert sorted(pins) == sorted([f"[127.0.0.1]:{h.record.port}", ns.host])
    # facts came from inside the namespace: its only NIC is the veth end (no device driver), not ENA
    [(nic, driver)] = summary["facts"]["nics"].items()
    assert nic.startswith("ci") and nic.endswith("n") and driver == "virtual"
    assert any("no ENA NIC" in n and nic in n for n in summary["result"]["notes"])
    assert (prefix / "etc/chrony/chrony.conf").exists()
    assert set(h.store.names()) == {"ns2", "loop"}
    # the loopback host's pin is unaffected by the second host
    connect(h.record, h.store.known_hosts, lambda s: None).close()


def test_infra_apply_live_runs_handlers_once_and_only_on_change(infra_test_host: InfraHost) -> None:
    from infra.remote import RemoteError, open_host
    from infra.steps import Command, FileSpec, Step, apply

    h = infra_test_host
    log = h.prefix / "handler.log"
    step = Step("demo")
    step.files += [FileSpec("/etc/demo/a.conf", "a=1\n", notify=("reload",)),
                   FileSpec("/etc/demo/b.conf", "b=1\n", mode=0o600, notify=("reload",))]
    step.handlers["reload"] = Command(f"echo reload >> {log}", "demo config changed", "service")
    step.commands.append(Command("systemctl reboot", "would reboot", "reboot"))
    host = open_host(h.record, h.store.known_hosts, lambda s: None)
    try:
        first = apply(host, [step], live=True, say=lambda s: None)
        assert first.changed == ["/etc/demo/a.conf", "/etc/demo/b.conf"]
        assert first.executed == [f"echo reload >> {log}"]
        assert log.read_text() == "reload\n"  # two files notified, the handler ran once
        assert first.reboot_needed and first.planned[0]["command"] == "systemctl reboot"  # never run by apply
        assert stat.S_IMODE((h.prefix / "etc/demo/b.conf").stat().st_mode) == 0o600
        second = apply(host, [step], live=True, say=lambda s: None)
        assert second.changed == [] and second.executed == [] and log.read_text() == "reload\n"
        (h.prefix / "etc/demo/a.conf").write_text("a=2\n")  # drift: someone edited the file
        third = apply(host, [step], live=True, say=lambda s: None)
        assert third.changed == ["/etc/demo/a.conf"] and log.read_text() == "reload\nreload\n"
        (h.prefix / "etc/demo/b.conf").chmod(0o644)  # same text, wider permissions
        fourth = apply(host, [step], live=True, say=lambda s: None)
        assert fourth.changed == ["/etc/demo/b.conf"]
        assert stat.S_IMODE((h.prefix / "etc/demo/b.conf").stat().st_mode) == 0o600
        bad = Step("bad", commands=[Command("false", "always fails", "runtime")])
        with pytest.raises(RemoteError, match="`false` exited 1"):
            apply(host, [bad], live=True, say=lambda s: None)
    finally:
        host.close()


def test_infra_reboot_wait_reconnects_after_new_boot(own_infra_test_host: InfraHost) -> None:
    """The reboot path for real over SSH: the "reboot" stops sshd, the host comes back with a new boot id."""
    import threading
    import time

    from infra.configure import BOOT_ID, reboot_and_wait
    from infra.remote import open_host

    h = own_infra_test_host  # the "reboot" kills sshd: a server of its own
    boot = h.prefix / BOOT_ID.lstrip("/")
    boot.parent.mkdir(parents=True)
    boot.write_text("boot-1\n")
    server = h.server
    pid = server.proc.pid
    h.record.extra["reboot_command"] = f"kill {pid}"
    host_key = server.dir / "host_ed25519"

    def come_back() -> None:
        while server.proc.alive():  # the "reboot" killed sshd
            time.sleep(0.1)
        time.sleep(1.0)
        boot.write_text("boot-2\n")
        server.restart_with(host_key)

    t = threading.Thread(target=come_back)
    host = open_host(h.record, h.store.known_hosts, lambda s: None)
    t.start()
    said: list[str] = []
    new = reboot_and_wait(host, h.record, h.store, said.append, timeout_s=60, first_wait_s=0.2, poll_s=0.3)
    t.join(10)
    try:
        assert new.run(f"cat {boot}").stdout.strip() == "boot-2"
        assert said[-1] == "host is back"
    finally:
        new.close()


def test_infra_remote_bench_refuses_live_when_build_lacks_it(infra_test_host: InfraHost, tmp_path: Path) -> None:
    h = infra_test_host
    h.record.extra.update(caerus_bin=_fake_caerus(tmp_path / "caerus", live=False), chronyc="true")
    h.store.save(h.record)
    with pytest.raises(BenchError, match=r"no `caerus session --live`.*--emulator"):
        run_remote_bench(None, host="loop", duration="1", emulator=False, out=tmp_path / "s",
                         state_dir=str(h.store.root), say=lambda s: None, poll_s=0.5)
    assert not (tmp_path / "s").exists()
    [path] = run_remote_bench(None, host="loop", duration="1", emulator=True, out=tmp_path / "s",
                              state_dir=str(h.store.root), say=lambda s: None, poll_s=0.5)
    assert "--live" not in json.loads((path / "env.json").read_text())["argv"]


@pytest.mark.serial("a whole-fleet session on the test host, pinned by its plan (taskset)")
def test_infra_e2e_deploy_then_emulator_session_on_host_then_report(infra_test_host: InfraHost, caerus_wheel: Path,
                                                                    wheelhouse_cache: Path, tmp_path: Path) -> None:
    """The real chain on the test host: deployed wheel -> `caerus session` (emulator) run over SSH, detached and
    pinned -> collected -> rendered by the report engine, as `invoke bench --host X --emulator` + `invoke report`."""
    from caerus.report.render import render_sessions

    h = infra_test_host
    h.record.extra["chronyc"] = "true"
    h.store.save(h.record)
    deploy(h.record, h.store, _opts(caerus_wheel, wheelhouse_cache), say=lambda s: None)
    out = tmp_path / "sessions"
    [path] = run_remote_bench(None, host="loop", duration="3", emulator=True, out=out,
                              state_dir=str(h.store.root), say=lambda s: None, poll_s=2)
    summary = json.loads((path / "summary.json").read_text())
    assert summary.get("failure") in (None, "")
    assert list(path.glob("**/*.hlog")), "no histogram logs collected"
    host = json.loads((path / "host.json").read_text())
    assert host["emulator"] is True and host["duration_s"] == 3
    lock = json.loads((path / "env.json").read_text())["python"]["lock"]  # the session ran on the locked venv
    assert lock["matches"] is True and lock["lock"].endswith("/opt/caerus/venv/caerus-lock.txt")
    assert lock["lock_sha256"] == hashlib.sha256(FLEET_LOCK.read_bytes()).hexdigest()
    remote = h.prefix / "var/lib/caerus/sessions" / path.name
    assert sorted(p.relative_to(remote) for p in remote.rglob("*") if p.is_file()) == sorted(
        p.relative_to(path) for p in path.rglob("*") if p.is_file() and p.name != "host.json")
    result = render_sessions([path], out_dir=tmp_path / "reports")
    assert Path(result["sessions"][0]).exists()


def test_infra_bench_wait_survives_a_dropped_connection(own_infra_test_host: InfraHost, tmp_path: Path) -> None:
    """sshd goes away mid-session (and our connection with it); polling retries, reconnects, and finishes."""
    import threading
    import time

    from infra.remote import open_host
    from infra.remote_bench import start_detached, wait_finished

    h = own_infra_test_host  # it stops and restarts sshd: a server of its own
    server = h.server
    caerus = _fake_caerus(tmp_path / "caerus")
    run_dir = str(tmp_path / "run")
    out = tmp_path / "out"
    host = open_host(h.record, h.store.known_hosts, lambda s: None)
    start_detached(host, f"{caerus} session --duration 3 --out {out}", run_dir, "0")
    said: list[str] = []
    dropped = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if not dropped.is_set() and line.startswith("  bench"):
            dropped.set()
            server.stop()  # sshd down ...
            host.close()  # ... and our connection gone

            def back() -> None:
                time.sleep(1.5)
                server.restart_with(server.dir / "host_ed25519")

            threading.Thread(target=back).start()

    try:
        rc = wait_finished(host, run_dir, 3, say, poll_s=0.5, grace_s=60)
    finally:
        host.close()
    assert rc == 0
    assert any("connection lost" in s for s in said)
    assert (out / "20261202T000000Z-test" / "env.json").exists()  # the session ran to the end on the host


def test_infra_tasks_bench_host_goes_through_remote_bench(infra_test_host: InfraHost, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`invoke bench --host loop --duration 2s --emulator` as tasks.py wires it (state folder from the env)."""
    import tasks

    h = infra_test_host
    h.record.extra.update(caerus_bin=_fake_caerus(tmp_path / "caerus"), chronyc="true")
    h.store.save(h.record)
    monkeypatch.setenv("CAERUS_STATE_DIR", str(h.store.root))
    out = tmp_path / "sessions"
    tasks.bench(Context(), host="loop", duration="2s", emulator=True, out=str(out))
    env = json.loads((out / "20261202T000000Z-test" / "env.json").read_text())
    assert "--live" not in env["argv"] and (out / "20261202T000000Z-test" / "host.json").exists()


def test_configure_and_deploy_as_a_non_root_sudo_login_like_ec2_user(ec2_user_host: InfraHost, caerus_wheel: Path,
                                                                      wheelhouse_cache: Path) -> None:
    """The login a real EC2 host gives (ec2-user / ubuntu): not root, passwordless sudo. /opt and /var/lib under
    the prefix are root-owned, so deploy must create them with sudo and hand the app folder to the *login* user
    (the old `chown -R $(id -un)` ran inside `sudo sh -c` and handed it to root, and the wheel upload failed)."""
    h = ec2_user_host
    uid = int(subprocess.run(["id", "-u", h.record.user], capture_output=True, text=True, check=True).stdout)
    configure(h.record, h.store, say=lambda s: None, chronyc="true")
    first = deploy(h.record, h.store, _opts(caerus_wheel, wheelhouse_cache), say=lambda s: None)
    assert first["wheel_changed"] is True and first["python"]
    app = h.prefix / "opt/caerus"
    assert app.stat().st_uid == uid and (app / "venv").stat().st_uid == uid  # the login user's, not root's
    for d in ("var/lib/caerus/sessions", "var/lib/caerus/metrics"):
        assert (h.prefix / d).stat().st_uid == uid  # the sessions write there as the login user
    assert (h.prefix / "etc/systemd/system/caerus-strategy.service").stat().st_uid == 0  # system files: root's
    assert (app / "venv/.caerus-wheel").read_text().strip() == wheel_digest(caerus_wheel)
    assert first["dependencies"]["matches"] is True  # installed by the login user, no index, hashes checked
    assert (app / "venv/caerus-lock.txt").read_bytes() == FLEET_LOCK.read_bytes()
    again = deploy(h.record, h.store, _opts(caerus_wheel, wheelhouse_cache), say=lambda s: None)
    assert again["wheel_changed"] is False and again["dirs_changed"] == []


def test_deploy_installs_only_from_the_uploaded_wheelhouse(ec2_user_host: InfraHost, caerus_wheel: Path,
                                                          wheelhouse_cache: Path, tmp_path: Path) -> None:
    """The host never reaches a package index: with one locked wheel missing from the wheelhouse the install fails
    naming it (an index would have supplied it), and a wheel whose bytes differ from the lock's hash is refused."""
    import shutil

    from infra.facts import gather
    from infra.remote import open_host
    from infra.wheelhouse import Target, build_wheelhouse

    h = ec2_user_host
    configure(h.record, h.store, say=lambda s: None, chronyc="true")
    host = open_host(h.record, h.store.known_hosts, lambda s: None)
    try:
        target = Target.of(gather(host))
    finally:
        host.close()
    good = build_wheelhouse(FLEET_LOCK, target, wheelhouse_cache)
    bad_cache = tmp_path / "bad"
    bad = bad_cache / good.name
    shutil.copytree(good, bad)
    [msgpack] = bad.glob("msgpack-*.whl")
    msgpack.unlink()
    with pytest.raises(DeployError, match=r"no index: only the uploaded wheelhouse.*msgpack"):
        deploy(h.record, h.store, _opts(caerus_wheel, bad_cache), say=lambda s: None)
    shutil.copy2(good / msgpack.name, msgpack)
    [msgspec] = bad.glob("msgspec-*.whl")
    with zipfile.ZipFile(msgspec, "a") as z:  # still a valid wheel, no longer the locked bytes
        z.writestr("msgspec/extra.txt", "tampered")
    with pytest.raises(DeployError, match=r"(?i)hash.*msgspec|msgspec.*hash"):
        deploy(h.record, h.store, _opts(caerus_wheel, bad_cache), say=lambda s: None)
    assert not (h.prefix / "opt/caerus/venv/.caerus-deps").exists()  # nothing claims to be installed
    assert h.store.load("ec2").deployed == {}


def test_remote_bench_and_collect_as_a_non_root_sudo_login(ec2_user_host: InfraHost, tmp_path: Path) -> None:
    h = ec2_user_host
    fake = h.prefix.parent / "caerus"  # where the login can run it (pytest's tmp is root-only)
    fake.write_text(FAKE_CAERUS.format(python="/usr/bin/python3", rc=0, live_flag="[--live] "))
    fake.chmod(0o755)
    h.record.extra.update(caerus_bin=str(fake), chronyc="true")
    h.store.save(h.record)
    out = tmp_path / "sessions"
    with pytest.raises(BenchError, match=f"not writable by the login user {h.record.user}; run `invoke deploy"):
        run_remote_bench(None, host="ec2", duration="2s", emulator=False, out=out, state_dir=str(h.store.root),
                         say=lambda s: None, poll_s=0.5)  # the data folders are deploy's job: it says so
    from infra.remote import open_host

    rh = open_host(h.record, h.store.known_hosts, lambda s: None)
    try:
        ensure_writable_dirs(rh, (SESSIONS_DIR,), lambda s: None)  # what deploy does for the login user
    finally:
        rh.conn.close()
    [path] = run_remote_bench(None, host="ec2", duration="2s", emulator=False, out=out,
                              state_dir=str(h.store.root), say=lambda s: None, poll_s=0.5)
    assert (path / "metrics" / "feed-binance.hlog").read_text().startswith("#[StartTime")
    env = json.loads((path / "env.json").read_text())
    host = json.loads((path / "host.json").read_text())
    assert env["affinity"] == host["plan"]["housekeeping"]  # pinned as the login user, through sudo where needed


def test_the_operators_ssh_config_is_never_read(infra_test_host: InfraHost, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~/.ssh/config with agent forwarding, another identity and a proxy that cannot work: had Fabric read it,
    the connection would go through `false` and fail, or forward the agent to the host."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host *\n  ForwardAgent yes\n  IdentityFile /nonexistent/other_key\n"
                                          "  ProxyCommand false\n")
    monkeypatch.setenv("HOME", str(home))
    h = infra_test_host
    conn = connect(h.record, h.store.known_hosts, lambda s: None)
    try:
        assert conn.forward_agent is False
        assert not {"forwardagent", "identityfile", "proxycommand"} & set(conn.ssh_config)  # nothing from the file
        assert conn.run("echo ok", hide=True, in_stream=False).stdout.strip() == "ok"
    finally:
        conn.close()


def test_bench_refuses_a_session_longer_than_the_ttl_and_extend_gives_the_host_more(
        infra_test_host: InfraHost, moto_server, tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from infra.aws.clients import AwsTarget
    from infra.provision import ProvisionRequest, provision

    h = infra_test_host
    aws = provision(ProvisionRequest(name="loop", cidr="198.51.100.7/32", owner="alice", ttl_hours=1.0),
                    HostStore(tmp_path / "aws-state"), lambda s: None)
    assert aws is not None
    soon = (datetime.now(UTC) + timedelta(minutes=40)).replace(microsecond=0)
    h.record.instance_id, h.record.region, h.record.endpoint_url = aws.instance_id, aws.region, aws.endpoint_url
    h.record.expires_at = soon.strftime("%Y-%m-%dT%H:%M:%SZ")
    h.record.extra.update(caerus_bin=_fake_caerus(tmp_path / "caerus"), chronyc="true")
    h.store.save(h.record)
    # 1 h of session + collection does not fit in 40 min: refused before anything runs, naming the fix.
    with pytest.raises(BenchError, match=r"Run `invoke extend --host loop --hours 1` first"):
        run_remote_bench(None, host="loop", duration="1h", emulator=True, out=tmp_path / "s",
                         state_dir=str(h.store.root), say=lambda s: None)
    # moto's console prints no host keys: the instance's key can only be trusted on first use, and must be asked for
    with pytest.raises(SystemExit):
        invoke_tasks.extend(Context(), host="loop", hours=2, mode="plan", state_dir=str(h.store.root))
    invoke_tasks.extend(Context(), host="loop", hours=2, mode="plan", host_key="tofu", state_dir=str(h.store.root))
    record = h.store.load("loop")
    new = datetime.fromisoformat(record.expires_at.replace("Z", "+00:00"))
    assert new == soon + timedelta(hours=2)
    assert (h.prefix / "etc/caerus/expiry").read_text().strip() == str(int(new.timestamp()))
    assert f"OnCalendar={new:%Y-%m-%d %H:%M:%S} UTC" in (h.prefix / "etc/systemd/system/caerus-ttl.timer").read_text()
    ec2 = AwsTarget.resolve(aws.region, aws.endpoint_url).client("ec2")
    [inst] = [i for r in ec2.describe_instances(InstanceIds=[aws.instance_id])["Reservations"] for i in r["Instances"]]
    assert {t["Key"]: t["Value"] for t in inst["Tags"]}["expiry"] == record.expires_at
    # now it fits (the fake runner ends at once)
    run_remote_bench(None, host="loop", duration="1s", emulator=True, out=tmp_path / "s2",
                     state_dir=str(h.store.root), say=lambda s: None, poll_s=0.5)
