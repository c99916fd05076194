"""Runtime tuning that is not a kernel argument: irqbalance ban, sysctls, and the boot-time tune script
(THP off, ENA interrupt moderation off, performance governor, deep C-states off, where the instance has them)."""

from __future__ import annotations

import shlex
from importlib import resources
from string import Template

from caerus.plan import FleetPlan, format_cpu_list
from infra.facts import HostFacts
from infra.kernel import irqbalance_banned_mask

TUNE_SCRIPT = "/usr/local/sbin/caerus-tune"
TUNE_UNIT = "/etc/systemd/system/caerus-tune.service"
SYSCTL_FILE = "/etc/sysctl.d/99-caerus.conf"
ENA_OFF = {"adaptive-rx": "off", "rx-usecs": "0", "tx-usecs": "0"}
SHALLOW_CSTATES = ("POLL", "C1", "C1_ACPI", "C1E")


def _template(name: str, **values: str) -> str:
    text = resources.files("infra").joinpath(f"templates/{name}").read_text()
    return Template(text).substitute(**values)


def render_irqbalance(plan: FleetPlan) -> str:
    return _template("irqbalance.env.tmpl", hot=format_cpu_list(plan.hot), mask=irqbalance_banned_mask(plan.hot))


def render_sysctl() -> str:
    return _template("sysctl-caerus.conf.tmpl")


def render_tune_unit() -> str:
    return _template("caerus-tune.service.tmpl", script=TUNE_SCRIPT)


def deep_cstates(facts: HostFacts) -> list[str]:
    return [name for name in facts.cstates if name not in SHALLOW_CSTATES]


def render_tune_script(facts: HostFacts) -> str:
    lines = [
        "#!/bin/sh",
        "# Managed by caerus (invoke configure). Idempotent; run at boot by caerus-tune.service.",
        "set -u",
        "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
        "echo never > /sys/kernel/mm/transparent_hugepage/defrag",
    ]
    q = shlex.quote  # interface and C-state names are the host's own words: quoted, never shell syntax
    for nic in facts.ena_nics:
        refused = q(f"ethtool -C {nic} refused")
        lines.append(f"ethtool -C {q(nic)} adaptive-rx off rx-usecs 0 tx-usecs 0 || echo {refused}")
    if facts.governor:
        lines.append("for g in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do "
                     "echo performance > \"$g\" || true; done")
    deep = deep_cstates(facts)
    if deep:
        names = "|".join(q(n) for n in deep)
        lines.append(
            "for s in /sys/devices/system/cpu/cpu*/cpuidle/state*; do "
            f"case \"$(cat \"$s/name\")\" in {names}) echo 1 > \"$s/disable\" || true;; esac; done"
        )
    return "\n".join(lines) + "\n"


def tune_drift(facts: HostFacts) -> list[str]:
    """What the tune script would change on this host right now (empty = already tuned)."""
    drift = []
    if facts.thp and facts.thp != "never":
        drift.append(f"transparent hugepages are {facts.thp!r}, want 'never'")
    for nic in facts.ena_nics:
        have = facts.coalesce.get(nic, {})
        wrong = {k: have.get(k) for k, v in ENA_OFF.items() if have.get(k) != v}
        if wrong:
            drift.append(f"{nic} interrupt moderation {wrong}, want {ENA_OFF}")
    if facts.governor and facts.governor != "performance":
        drift.append(f"governor {facts.governor!r}, want 'performance'")
    enabled_deep = [n for n in deep_cstates(facts) if not facts.cstates[n]]
    if enabled_deep:
        drift.append(f"deep C-states enabled: {', '.join(enabled_deep)}")
    return drift


def capability_notes(facts: HostFacts) -> list[str]:
    """What this instance lets us control, recorded rather than assumed."""
    notes = []
    if not facts.ena_nics:
        nics = ", ".join(f"{n} ({d})" for n, d in sorted(facts.nics.items())) or "none"
        notes.append(f"no ENA NIC (interfaces: {nics}): interrupt moderation step not applicable")
    if not facts.governor:
        notes.append("no cpufreq governor exposed: frequency is the hypervisor's (recorded, not tuned)")
    if not facts.cstates:
        notes.append(f"no cpuidle states exposed (driver {facts.cpuidle_driver or 'none'}): C-states not tunable")
    elif not deep_cstates(facts):
        notes.append(f"only shallow C-states ({', '.join(facts.cstates)}): nothing to disable")
    return notes
