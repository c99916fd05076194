"""`invoke configure`: tune a host for the fleet plan over Fabric: plan -> apply -> (reboot) -> verify -> record.

Mode: ``live`` runs service restarts, bootloader updates, runtime sysfs/NIC commands and the reboot;
``plan`` only renders files (under the host's prefix) and reports those commands as planned. ``auto`` is live
only on an EC2 host with systemd and no prefix, i.e. never on a test host or this machine.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from caerus.plan import FleetPlan, format_cpu_list
from infra import chrony, kernel, tuning
from infra.facts import HostFacts, gather
from infra.hosts import HostRecord, HostStore
from infra.remote import HostKeyMismatch, RemoteHost, open_host, remember_console_fingerprints, shell_words
from infra.steps import ApplyResult, Command, FileSpec, Step, apply
from infra.verify import checks_to_dicts, verify

MODES = ("auto", "live", "plan")


class ConfigureError(RuntimeError):
    """Configure could not reach or verify the requested state."""


def decide_live(mode: str, facts: HostFacts, record: HostRecord) -> bool:
    if mode not in MODES:
        raise ConfigureError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "plan":
        return False
    suitable = facts.systemd and not record.remote_prefix
    if mode == "live":
        if not suitable:
            raise ConfigureError("--mode live needs a systemd host without a test prefix")
        return True
    return suitable and facts.ec2


def build_steps(facts: HostFacts, plan: FleetPlan) -> list[Step]:
    pkg = ("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q"
           if facts.os_id in ("debian", "ubuntu") else "dnf install -y -q")
    steps: list[Step] = []

    s = Step("chrony")
    if not facts.chrony:
        s.commands.append(Command(f"{pkg} chrony", "chrony is not installed", "package"))
    s.files.append(FileSpec(facts.chrony_conf, chrony.render_chrony_conf(facts), notify=("restart",)))
    s.handlers["restart"] = Command(f"systemctl restart {shlex.quote(facts.chrony_service)}", "chrony.conf changed",
                                    "service")
    s.notes.append(f"time source: {chrony.time_source(facts)}"
                   + (f" ({chrony.PHC_DEVICE})" if facts.ptp0 else f" ({chrony.AMAZON_TIME_SYNC}, no /dev/ptp0)"))
    if facts.ec2 and facts.ena_nics and not facts.ptp0:
        s.notes.append("ENA NIC without /dev/ptp0: the ENA PHC is off on this host (upstream driver: devlink param "
                       "enable_phc; amzn-drivers: module option phc_enable=1); enable it, reboot and re-run "
                       "configure to switch chrony to the PHC")
    steps.append(s)

    s = Step("kernel")
    wanted = kernel.kernel_args(plan)
    args = kernel.format_args(wanted)
    if facts.bootloader == "grub.d":
        s.files.append(FileSpec(kernel.GRUB_DROPIN, kernel.render_grub_dropin(plan), notify=("update-grub",)))
        s.handlers["update-grub"] = Command("update-grub", "kernel arguments changed", "bootloader")
    elif facts.bootloader == "grubby":
        if kernel.missing_args(facts.grubby_args, wanted):
            s.commands.append(Command(f"grubby --update-kernel=ALL --args={shlex.quote(args)}",
                                      "default boot entry lacks the isolation arguments", "bootloader"))
    else:
        s.notes.append(f"no grubby or grub.d on this host: kernel arguments planned only ({args})")
    s.notes += kernel.smt_notes(facts, plan)
    missing = kernel.missing_args(facts.cmdline, wanted)
    if missing:
        s.commands.append(Command("systemctl reboot", f"running kernel lacks {sorted(missing)}", "reboot"))
    steps.append(s)

    s = Step("irqbalance")
    if not facts.irqbalance:
        s.commands.append(Command(f"{pkg} irqbalance", "irqbalance is not installed", "package"))
    s.files.append(FileSpec(facts.irqbalance_conf, tuning.render_irqbalance(plan), notify=("restart",)))
    s.handlers["restart"] = Command("systemctl restart irqbalance", "banned CPU list changed", "service")
    if facts.systemd and facts.irqbalance_active not in ("active", ""):
        s.commands.append(Command("systemctl enable --now irqbalance",
                                  f"irqbalance is {facts.irqbalance_active}: ban the hot CPUs, keep it running",
                                  "service"))
    steps.append(s)

    s = Step("sysctl")
    s.files.append(FileSpec(tuning.SYSCTL_FILE, tuning.render_sysctl(), notify=("reload",)))
    s.handlers["reload"] = Command("sysctl --system", "sysctl file changed", "runtime")
    steps.append(s)

    s = Step("tune")
    s.files.append(FileSpec(tuning.TUNE_SCRIPT, tuning.render_tune_script(facts), mode=0o755, notify=("run",)))
    s.files.append(FileSpec(tuning.TUNE_UNIT, tuning.render_tune_unit(), notify=("enable",)))
    s.handlers["enable"] = Command("systemctl daemon-reload && systemctl enable caerus-tune.service",
                                   "boot-time tuning unit changed", "service")
    s.handlers["run"] = Command(tuning.TUNE_SCRIPT, "tune script changed", "nic" if facts.ena_nics else "runtime")
    drift = tuning.tune_drift(facts)
    if drift:
        s.commands.append(Command(tuning.TUNE_SCRIPT, "; ".join(drift), "nic" if facts.ena_nics else "runtime"))
    s.notes += tuning.capability_notes(facts)
    steps.append(s)
    return steps


BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _boot_id(host: RemoteHost) -> str:
    # through host.path: on a real host that is /proc itself; a test host fakes it under its prefix
    return host.run(f"cat {shlex.quote(host.path(BOOT_ID))}").stdout.strip()


def reboot_and_wait(host: RemoteHost, record: HostRecord, store: HostStore, say: Callable[[str], None],
                    timeout_s: float = 900.0, first_wait_s: float = 15.0, poll_s: float = 10.0,
                    host_key: str = "") -> RemoteHost:
    """Reboot, then reconnect (host key still pinned) until the host reports a different boot id. The console's
    host key fingerprints are kept in the record first: after the reboot cloud-init's block may be gone."""
    remember_console_fingerprints(record, store, store.known_hosts, say)
    before = _boot_id(host)
    command = shell_words(record.extra.get("reboot_command", "systemctl reboot"), "reboot command")
    say("rebooting for the new kernel command line")
    try:
        host.run(command, sudo=True, check=False, timeout=10)
    except Exception:  # the connection dropping under us is the expected outcome
        pass
    host.close()
    deadline = time.monotonic() + timeout_s
    time.sleep(first_wait_s)
    while time.monotonic() < deadline:
        try:
            new = open_host(record, store.known_hosts, say, host_key=host_key)
        except HostKeyMismatch:
            raise  # a different machine answered at this address: never trust it
        except Exception as exc:  # refused / timed out while the host boots: keep polling
            say(f"  waiting for {record.host} to come back ({type(exc).__name__})")
            time.sleep(poll_s)
            continue
        if _boot_id(new) != before:
            say("host is back")
            return new
        new.close()
        time.sleep(poll_s)
    raise ConfigureError(f"{record.host} did not come back within {timeout_s:.0f} s after reboot")


def configure(record: HostRecord, store: HostStore, *, mode: str = "auto", allow_reboot: bool = True,
              housekeeping: Sequence[int] | None = None, wait_policy: str | None = None,
              chronyc: str = "", say: Callable[[str], None] = print, host_key: str = "") -> dict[str, Any]:
    host = open_host(record, store.known_hosts, say, host_key=host_key)
    try:
        facts = gather(host)
        live = decide_live(mode, facts, record)
        plan = kernel.target_plan(facts, housekeeping, wait_policy)
        say(f"configure {record.name}: {'live' if live else 'plan-only'} mode; housekeeping "
            f"{format_cpu_list(plan.housekeeping)}, hot {format_cpu_list(plan.hot)}")
        steps = build_steps(facts, plan)
        result: ApplyResult = apply(host, steps, live, say)
        rebooted = False
        if result.reboot_needed and live and allow_reboot:
            host = reboot_and_wait(host, record, store, say, host_key=host_key)
            rebooted = True
        facts = gather(host)  # what the host looks like now (after runtime commands / the reboot)
        reboot_pending = result.reboot_needed and not rebooted
        chronyc_cmd = chronyc or record.extra.get("chronyc", "chronyc")
        checks, tracking = verify(host, facts, plan, steps, chronyc_cmd, reboot_pending, live)
    finally:
        host.close()
    summary = {
        "host": record.name,
        "at": datetime.now(UTC).isoformat(),
        "mode": "live" if live else "plan",
        "plan": plan.to_dict(),
        "steps": [s.describe() for s in steps],
        "result": result.to_dict(),
        "rebooted": rebooted,
        "verification": checks_to_dicts(checks),
        "chrony_tracking": tracking,
        "facts": facts.to_dict(),
    }
    store.save_json(record.name, "plan", plan.to_dict())
    store.save_json(record.name, "configure", summary)
    for c in checks:
        say(f"  verify {c.name}: {c.status} ({c.observed[:120]})")
    for p in result.planned:
        say(f"  planned [{p['kind']}] {p['command']}  -- {p['why']}")
    say(f"changed {len(result.changed)} file(s), ran {len(result.executed)} command(s), "
        f"{len(result.planned)} planned only")
    failed = [c.name for c in checks if c.status == "fail"]
    if failed and live:
        raise ConfigureError(f"verification failed on {record.name}: {', '.join(failed)}")
    return summary
