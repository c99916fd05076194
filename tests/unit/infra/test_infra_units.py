"""Pure pieces of the orchestrator: durations, CIDR policy, kernel args from the fleet plan, facts parsing,
chrony rendering and tracking parsing, tune drift, user data, RunInstances request, units, state folder."""

from __future__ import annotations

import base64
import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from caerus.durations import parse_duration
from caerus.plan import FleetPlan, plan_fleet
from infra import chrony, kernel, tuning
from infra.aws import instances as I
from infra.aws.ami import AL2023_PARAM, UBUNTU_2404_PARAM, ssh_user_for
from infra.aws.clients import AwsError
from infra.aws.network import validate_cidr
from infra.aws.pricing import format_cost, hourly_estimate
from infra.aws.tags import is_ours, project_tags
from infra.aws.userdata import render_ttl_user_data
from infra.configure import build_steps, decide_live
from infra.deploy import process_command, units_step
from infra.facts import parse_facts
from infra.fleetplan import plan_from_dict, unit_plan
from infra.hosts import HostRecord, HostStore, StateError
from infra.remote_bench import session_command

# What the probe prints on a c7i.2xlarge running Amazon Linux 2023 with the ENA PHC enabled (hand-made sample).
EC2_PROBE = """\
uid=1000
os_id=amzn
os_version=2023
kernel=6.1.112-122.189.amzn2023.x86_64
machine=x86_64
glibc=2.34
cpus_online=0-7
cpu0_siblings=0,4
isolated=
siblings=0:0,4;1:1,5;2:2,6;3:3,7;4:0,4;5:1,5;6:2,6;7:3,7;
nohz_full=(null)
cmdline=BOOT_IMAGE=(hd0,gpt1)/boot/vmlinuz root=UUID=abc ro console=ttyS0,115200n8 nvme_core.io_timeout=4294967295
ptp0=yes
ptp0_name=ena-ptp-00
systemd=yes
sys_vendor=Amazon EC2
asset_tag=i-0123456789abcdef0
thp=always madvise [never]
governor=
cpuidle_driver=intel_idle
cstates=POLL:0,C1:0,C1E:0,C6:0,
nic.ens5=ena
coalesce.ens5=Adaptive RX: on  TX: off;rx-usecs: 20;tx-usecs: 64;
chrony_conf=/etc/chrony.conf
chrony=yes
bootloader=grubby
grubby_args=ro console=ttyS0,115200n8
irqbalance_conf=/etc/sysconfig/irqbalance
irqbalance=yes
irqbalance_active=active
python3=/usr/bin/python3
python3_version=3.11
"""

# Real `chronyc -c tracking` output from a chronyd synchronised to a local-stratum chronyd on loopback.
TRACKING = ("7F000001,127.0.0.1,9,1796211350.168316140,-0.000002631,0.000000354,0.000000354,3.313,0.000,"
            "58.709,0.000008582,0.000008578,0.1,Normal\n")
UNSYNCED = "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,1.000000000,1.000000000,0.0,Not synchronised\n"  # noqa: E501


@pytest.mark.parametrize("text,seconds", [("4h", 14400), ("30m", 1800), ("90s", 90), ("30", 30), ("1h30m", 5400),
                                          ("2.5", 2.5)])
def test_infra_durations_accept_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "4x", "h", "-5", "0", "4h junk"])
def test_infra_durations_reject_garbage_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_infra_cidr_only_single_address() -> None:
    assert validate_cidr("203.0.113.7") == "203.0.113.7/32"
    assert validate_cidr("203.0.113.7/32") == "203.0.113.7/32"
    for wide in ("0.0.0.0/0", "203.0.113.0/24", "203.0.113.6/31"):
        with pytest.raises(AwsError, match="only a single /32"):
            validate_cidr(wide)
    with pytest.raises(AwsError, match="not a valid"):
        validate_cidr("not-an-ip")


def test_infra_facts_parse_ec2_sample() -> None:
    f = parse_facts(EC2_PROBE)
    assert f.cpus == tuple(range(8)) and f.cpu0_siblings == (0, 4)
    assert f.ptp0 and f.ec2 and f.systemd and f.uid == 1000
    assert f.thp == "never"
    assert f.ena_nics == ["ens5"]
    assert f.machine == "x86_64" and f.glibc == "2.34"  # the wheelhouse target
    assert f.coalesce["ens5"] == {"adaptive-rx": "on", "rx-usecs": "20", "tx-usecs": "64"}
    assert f.cstates == {"POLL": False, "C1": False, "C1E": False, "C6": False}
    assert f.chrony_service == "chronyd" and f.bootloader == "grubby"


def test_infra_target_plan_keeps_cpu0_core_for_housekeeping() -> None:
    f = parse_facts(EC2_PROBE)
    plan = kernel.target_plan(f)
    assert plan.housekeeping == (0, 4)
    assert plan.hot == (1, 2, 3, 5, 6, 7)
    args = kernel.kernel_args(plan)
    assert args["isolcpus"] == "managed_irq,domain,1-3,5-7"
    assert args["nohz_full"] == args["rcu_nocbs"] == "1-3,5-7"
    assert args["irqaffinity"] == "0,4"
    assert kernel.missing_args(f.cmdline, args).keys() == args.keys()
    full = f.cmdline + " " + kernel.format_args(args)
    assert kernel.missing_args(full, args) == {}
    with pytest.raises(kernel.PlanError, match="not online"):
        kernel.target_plan(f, housekeeping=[9])
    with pytest.raises(kernel.PlanError, match="no CPU left"):
        kernel.target_plan(f, housekeeping=list(range(8)))


def test_infra_chrony_phc_or_ntp_never_both() -> None:
    f = parse_facts(EC2_PROBE)
    phc = chrony.render_chrony_conf(f)
    assert "refclock PHC /dev/ptp0" in phc and chrony.AMAZON_TIME_SYNC not in phc.replace("# ", "#")
    assert not any(ln.startswith(("server", "pool")) for ln in phc.splitlines())
    f.ptp0 = False
    ntp = chrony.render_chrony_conf(f)
    assert f"server {chrony.AMAZON_TIME_SYNC}" in ntp
    assert not any(ln.startswith("refclock") for ln in ntp.splitlines())
    assert "leapsectz" not in [ln.split()[0] for ln in ntp.splitlines() if ln and not ln.startswith("#")]


def test_infra_tracking_parse_real_and_bad() -> None:
    t = chrony.parse_tracking(TRACKING)
    assert t.synchronised and t.stratum == 9 and t.refname == "127.0.0.1"
    assert t.last_offset_s == pytest.approx(3.54e-7)
    assert not chrony.parse_tracking(UNSYNCED).synchronised
    with pytest.raises(chrony.TrackingParseError, match="14 fields"):
        chrony.parse_tracking("506 Cannot talk to daemon\n")
    with pytest.raises(chrony.TrackingParseError, match="bad number"):
        chrony.parse_tracking(TRACKING.replace(",9,", ",nine,"))


def test_infra_steps_on_ec2_sample_are_planned_from_facts() -> None:
    f = parse_facts(EC2_PROBE)
    plan = kernel.target_plan(f)
    steps = {s.name: s for s in build_steps(f, plan)}
    cmds = {c.command: c for s in steps.values() for c in s.commands}
    assert any(c.startswith("grubby --update-kernel=ALL --args='isolcpus=managed_irq,domain,1-3,5-7") for c in cmds)
    assert cmds["systemctl reboot"].kind == "reboot"
    irq = steps["irqbalance"].files[0]
    assert irq.path == "/etc/sysconfig/irqbalance"
    assert "IRQBALANCE_BANNED_CPULIST=1-3,5-7" in irq.content and "IRQBALANCE_BANNED_CPUS=ee" in irq.content
    assert not any("disable" in c or "stop irqbalance" in c for c in cmds)  # banned, never disabled
    script = steps["tune"].files[0].content
    assert "ethtool -C ens5 adaptive-rx off rx-usecs 0 tx-usecs 0" in script
    assert "C6" in script and "C1E" not in script.split("case")[-1]
    drift = tuning.tune_drift(f)
    assert any("ens5" in d for d in drift) and any("C6" in d for d in drift)
    assert steps["chrony"].files[0].path == "/etc/chrony.conf"


def test_infra_decide_live_never_on_prefixed_or_non_ec2() -> None:
    f = parse_facts(EC2_PROBE)
    rec = HostRecord(name="h", host="1.2.3.4", user="ec2-user")
    assert decide_live("auto", f, rec) is True
    assert decide_live("plan", f, rec) is False
    rec_prefixed = HostRecord(name="h", host="1.2.3.4", user="ec2-user", remote_prefix="/tmp/x")
    assert decide_live("auto", f, rec_prefixed) is False
    f.ec2 = False
    assert decide_live("auto", f, rec) is False
    f.systemd = False
    with pytest.raises(RuntimeError, match="systemd"):
        decide_live("live", f, rec)
    with pytest.raises(RuntimeError, match="mode"):
        decide_live("yolo", f, rec)


def test_infra_ttl_user_data() -> None:
    launched = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    text = render_ttl_user_data("tokyo", launched, timedelta(hours=4))
    assert text.startswith("#!/bin/bash")
    assert "shutdown -h +240 " in text
    assert "OnCalendar=2026-12-02 14:00:00 UTC" in text and "Persistent=true" in text
    assert str(int((launched + timedelta(hours=4)).timestamp())) in text
    with pytest.raises(ValueError):
        render_ttl_user_data("tokyo", launched, timedelta(0))


def test_infra_run_instances_request() -> None:
    spec = I.LaunchSpec(ami="ami-1", instance_type="c7i.2xlarge", key_name="k", security_group_id="sg-1",
                        root_device="/dev/xvda", user_data="#!/bin/bash\n", tags=project_tags("s", "me", "x"),
                        placement_group="pg", threads_per_core=1, core_count=4, volume_gb=40)
    args = I.run_instances_args(spec)
    assert args["MetadataOptions"]["HttpTokens"] == "required"
    assert args["InstanceInitiatedShutdownBehavior"] == "terminate"
    assert args["BlockDeviceMappings"][0]["Ebs"]["VolumeType"] == "gp3"
    assert args["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 40
    assert args["CpuOptions"] == {"CoreCount": 4, "ThreadsPerCore": 1}
    assert args["Placement"] == {"GroupName": "pg"}
    types = {t["ResourceType"] for t in args["TagSpecifications"]}
    assert types == {"instance", "volume"}
    no_pg = I.run_instances_args(I.LaunchSpec(**{**spec.__dict__, "placement_group": "", "threads_per_core": None}))
    assert "Placement" not in no_pg and "CpuOptions" not in no_pg


def test_infra_tags_and_ami_user() -> None:
    tags = project_tags("tokyo", "alice", "2026-12-02T14:00:00Z")
    assert tags["project"] == "caerus" and tags["owner"] == "alice" and tags["session"] == "tokyo"
    lst = [{"Key": k, "Value": v} for k, v in tags.items()]
    assert is_ours(lst) and is_ours(lst, "tokyo") and not is_ours(lst, "osaka")
    assert not is_ours([{"Key": "project", "Value": "other"}])
    assert ssh_user_for(AL2023_PARAM) == "ec2-user" and ssh_user_for(UBUNTU_2404_PARAM) == "ubuntu"


def test_infra_pricing() -> None:
    assert hourly_estimate("ap-northeast-1", "c7i.2xlarge") == pytest.approx(0.448)
    assert hourly_estimate("nowhere-1", "c7i.2xlarge") is None
    assert "unknown" in format_cost(None)
    assert "so far" in format_cost(0.5, 2.0) and "$1.00" in format_cost(0.5, 2.0)


def test_infra_units_pin_each_process_per_plan() -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    step = units_step(plan, "ec2-user", "live")
    by_path = {f.path: f.content for f in step.files}
    feed = by_path["/etc/systemd/system/caerus-feed-binance.service"]
    p = plan.placement("feed-binance")
    assert f"CPUAffinity={' '.join(map(str, p.cpus))}" in feed
    assert f"--cpus {p.cpus[0]}" in feed and f"--wait-policy {p.wait_policy}" in feed
    assert "--segment ${CAERUS_SESSION}.book.binance" in feed and "User=ec2-user" in feed
    cap = by_path["/etc/systemd/system/caerus-capture.service"]
    assert "CPUAffinity=0 4" in cap
    assert "caerus-execution.service" in by_path["/etc/systemd/system/caerus-fleet.target"]
    assert "CAERUS_SESSION=live" in by_path["/etc/caerus/fleet.env"]
    with pytest.raises(RuntimeError, match="no unit command"):
        process_command("venue-sim", "caerus", plan)


def test_infra_plan_round_trip() -> None:
    plan = plan_fleet([0, 1, 2, 3], isolated=[1, 2, 3])
    again = plan_from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again == plan


def test_infra_session_command() -> None:
    assert session_command("/opt/caerus/venv/bin/caerus", 14400, "/var/lib/caerus/sessions", False) == (
        "/opt/caerus/venv/bin/caerus session --duration 14400 --out /var/lib/caerus/sessions --live")
    assert session_command("c", 30, "/s", True).endswith("--out /s")
    assert session_command("c", 30, "/s", True, "usage: [--progress X] [--no-report]").endswith(
        "--out /s --progress lines --no-report")


def test_infra_state_files_are_private(tmp_path: Path) -> None:
    store = HostStore(tmp_path / "st")
    rec = HostRecord(name="tokyo", host="1.2.3.4", user="ec2-user", hourly_usd=0.4)
    path = store.save(rec)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert store.load("tokyo") == rec and store.names() == ["tokyo"]
    with pytest.raises(StateError, match="no host named 'osaka'"):
        store.load("osaka")
    with pytest.raises(StateError, match="must be"):
        store.record_path("../etc")
    store.save_json("tokyo", "plan", {"hot": [1]})
    assert store.load_json("tokyo", "plan") == {"hot": [1]}
    store.delete("tokyo")
    assert store.names() == [] and store.load_json("tokyo", "plan") is None
    path.write_text(json.dumps({"name": "tokyo", "host": "x", "user": "u", "bogus": 1}))
    with pytest.raises(StateError, match="unknown fields"):
        store.load("tokyo")


def test_infra_userdata_is_valid_base64_roundtrip() -> None:
    # boto3 base64-encodes UserData itself; the text must survive it unchanged (pure ASCII).
    text = render_ttl_user_data("s", datetime(2026, 1, 1, tzinfo=UTC), timedelta(minutes=90))
    assert base64.b64decode(base64.b64encode(text.encode())).decode() == text
    assert "shutdown -h +90 " in text


def test_infra_ena_without_phc_says_how_to_enable_it() -> None:
    f = parse_facts(EC2_PROBE.replace("ptp0=yes", "ptp0=no"))
    plan = kernel.target_plan(f)
    chrony_step = build_steps(f, plan)[0]
    assert "server 169.254.169.123" in chrony_step.files[0].content
    assert any("enable_phc" in n and "phc_enable=1" in n for n in chrony_step.notes)


def test_infra_deploy_needs_python_311_and_says_how() -> None:
    from infra.deploy import DeployError, ensure_python, python_install_command

    f = parse_facts(EC2_PROBE.replace("python3=/usr/bin/python3\n", "python3=\npython3_system=3.9\n"))
    assert f.python3 == "" and f.python3_system == "3.9"
    assert python_install_command(f) == "dnf install -y -q python3.11 python3.11-pip"
    with pytest.raises(DeployError, match=r"no Python >= 3\.11.*python3 is 3\.9.*dnf install"):
        ensure_python(None, f, live=False, say=lambda s: None)
    f.os_id = "ubuntu"
    assert "python3-venv" in python_install_command(f)
    assert ensure_python(None, parse_facts(EC2_PROBE), live=False, say=lambda s: None).python3 == "/usr/bin/python3"


def test_infra_smt_siblings_sharing_a_core_are_reported() -> None:
    f = parse_facts(EC2_PROBE)
    assert f.siblings[5] == (1, 5)
    plan = kernel.target_plan(f)
    # plan_fleet places hot processes one thread per physical core, so no two share a core...
    assert kernel.smt_notes(f, plan) == []
    hot_cpus = [p.cpus[0] for p in plan.placements.values() if p.dedicated]
    assert len({f.siblings[c] for c in hot_cpus}) == len(hot_cpus) == 3
    # ...and the check still reports a plan that does share one (e.g. an older plan recorded on the host).
    shared = FleetPlan.from_dict({**plan.to_dict(), "placements": {
        **plan.to_dict()["placements"], "execution": {"cpus": [5], "wait_policy": "spin", "dedicated": True}}})
    assert kernel.smt_notes(f, shared) == [
        "feed-binance (CPU 1) and execution (CPU 5) are SMT siblings sharing one "
        "physical core; provision with --one-thread-per-core for a core each"]
    one_tpc = parse_facts(
        EC2_PROBE.replace("cpus_online=0-7", "cpus_online=0-3")
        .replace("cpu0_siblings=0,4", "cpu0_siblings=0")
        .replace("siblings=0:0,4;1:1,5;2:2,6;3:3,7;4:0,4;5:1,5;6:2,6;7:3,7;", "siblings=0:0;1:1;2:2;3:3;")
    )
    assert one_tpc.siblings == {0: (0,), 1: (1,), 2: (2,), 3: (3,)}
    assert kernel.smt_notes(one_tpc, kernel.target_plan(one_tpc)) == []


def test_a_session_must_end_before_the_host_expires_with_room_to_collect() -> None:
    from infra.ttl import COLLECT_MARGIN_S, TtlError, check_fits

    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    rec = HostRecord(name="tokyo", host="h", user="ec2-user", expires_at="2026-12-03T14:00:00Z")
    check_fits(rec, 4 * 3600 - COLLECT_MARGIN_S, now=now)  # exactly fits
    with pytest.raises(TtlError, match=r"--hours 1` first") as exc:
        check_fits(rec, 4 * 3600, now=now)  # the collection would not fit
    assert "4.00 h left" in str(exc.value) and "4.25 h with collection" in str(exc.value)
    with pytest.raises(TtlError, match=r"--hours 3` first"):
        check_fits(rec, 6 * 3600, now=now)
    check_fits(HostRecord(name="own", host="h", user="u"), 10 * 3600, now=now)  # no TTL known: nothing to check


def test_infra_exporter_unit_follows_sessions_on_loopback_off_the_hot_cpus() -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    by_path = {f.path: f.content for f in units_step(plan, "ec2-user", "live").files}
    unit = by_path["/etc/systemd/system/caerus-exporter.service"]
    assert "exporter --latest-in /var/lib/caerus/sessions --port 9465" in unit
    assert "--host-expiry-file /etc/caerus/expiry" in unit and "--bind" not in unit  # default: 127.0.0.1
    assert f"CPUAffinity={' '.join(map(str, plan.housekeeping))}" in unit and "Nice=10" in unit
    assert not set(plan.placement("strategy").cpus) & set(plan.housekeeping)
    assert "caerus-exporter.service" in by_path["/etc/systemd/system/caerus-fleet.target"]


def test_infra_units_split_a_venue_when_the_instruments_need_it() -> None:
    facts = parse_facts(EC2_PROBE)
    stored = kernel.target_plan(facts)
    assert unit_plan(stored, facts, 3) is stored  # 3 instruments fit one feed process per venue
    # 64 instruments x 75 books/s (Binance, live estimate) = 4,800/s: two shares at 3,000 per process; Hyperliquid's
    # 64 x 14.3 = 914/s stays whole
    plan = unit_plan(stored, facts, 64, max_books_per_s=3000)
    assert (plan.housekeeping, plan.hot) == (stored.housekeeping, stored.hot)
    assert plan.feed_split == {"binance": ((0, 32), (32, 64))}
    by_path = {f.path: f.content for f in units_step(plan, "ec2-user", "live", "BTC,ETH").files}
    target = by_path["/etc/systemd/system/caerus-fleet.target"]
    for share, ids in (("feed-binance-1", "0:32"), ("feed-binance-2", "32:64")):
        unit = by_path[f"/etc/systemd/system/caerus-{share}.service"]
        assert f"--segment ${{CAERUS_SESSION}}.book.binance-{share[-1]}" in unit
        assert f"--share {ids} --process-name {share}" in unit
        assert f"--stats-segment ${{CAERUS_SESSION}}.stats.{share}" in unit
        assert f"caerus-{share}.service" in target
    assert "/etc/systemd/system/caerus-feed-binance.service" not in by_path and "caerus-feed-binance.service" \
        not in target
    # every reader of the books reads every share's ring
    for reader, flag in (("strategy", "--segment"), ("execution", "--book-segment"), ("capture", "--segment")):
        unit = by_path[f"/etc/systemd/system/caerus-{reader}.service"]
        for key in ("binance-1", "binance-2", "hyperliquid"):
            assert f"{flag} ${{CAERUS_SESSION}}.book.{key}" in unit, (reader, key)
    # a c7i.2xlarge's three hot cores are taken (Binance feed, strategy, execution): the second share shares the
    # first's core, so neither spins (the plan's rule for shares without a core of their own), and the units say so
    one, two = plan.placement("feed-binance-1"), plan.placement("feed-binance-2")
    assert one.cpus == two.cpus and not set(one.cpus) & set(plan.placement("strategy").cpus)
    assert not one.dedicated and not two.dedicated and one.wait_policy == two.wait_policy == "hybrid"
    assert "--wait-policy hybrid" in by_path["/etc/systemd/system/caerus-feed-binance-2.service"]
