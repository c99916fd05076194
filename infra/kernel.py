"""Kernel command line for the fleet plan: which CPUs are isolated and the arguments that do it.

The split: housekeeping = CPU 0 and its hyperthread siblings (or ``--housekeeping``), hot = every other online
CPU. ``plan_fleet(cpus, isolated=hot)`` then places the fleet, and the same plan yields the arguments here, the
irqbalance ban and the systemd CPUAffinity, so the cores tuned are the cores used.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from importlib import resources
from string import Template

from caerus.plan import FleetPlan, format_cpu_list, plan_fleet
from infra.facts import HostFacts

GRUB_DROPIN = "/etc/default/grub.d/99-caerus.cfg"


class PlanError(ValueError):
    """The requested CPU split cannot work on this host."""


def target_plan(facts: HostFacts, housekeeping: Sequence[int] | None = None,
                wait_policy: str | None = None) -> FleetPlan:
    """The fleet plan configure tunes for (hot CPUs = the ones it isolates)."""
    cpus = facts.cpus
    if not cpus:
        raise PlanError("host reported no online CPUs")
    hk = tuple(sorted(set(housekeeping))) if housekeeping else (facts.cpu0_siblings or cpus[:1])
    bad = [c for c in hk if c not in cpus]
    if bad:
        raise PlanError(f"housekeeping CPUs {format_cpu_list(bad)} are not online (online: {format_cpu_list(cpus)})")
    hot = tuple(c for c in cpus if c not in hk)
    if not hot:
        raise PlanError(f"no CPU left to isolate: housekeeping {format_cpu_list(hk)} covers every online CPU")
    return plan_fleet(cpus, isolated=hot, wait_policy=wait_policy, siblings=facts.siblings or None)


def kernel_args(plan: FleetPlan) -> dict[str, str]:
    """Arguments (name -> value) isolating the plan's hot CPUs (per tuned's cpu-partitioning profile)."""
    hot = format_cpu_list(plan.hot)
    hk = format_cpu_list(plan.housekeeping)
    return {
        "isolcpus": f"managed_irq,domain,{hot}",
        "nohz_full": hot,
        "rcu_nocbs": hot,
        "irqaffinity": hk,
        "transparent_hugepage": "never",
        "skew_tick": "1",
        "nosoftlockup": "",
        "tsc": "reliable",
    }


def format_args(args: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" if v else k for k, v in args.items())


def parse_cmdline(cmdline: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for tok in shlex.split(cmdline):
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def missing_args(cmdline: str, wanted: dict[str, str]) -> dict[str, str]:
    """Wanted arguments absent from (or different in) ``cmdline``: non-empty means a reboot is needed."""
    have = parse_cmdline(cmdline)
    return {k: v for k, v in wanted.items() if k not in have or have[k] != v}


def isolation_matches(facts: HostFacts, plan: FleetPlan) -> bool:
    return tuple(facts.isolated) == tuple(plan.hot)


def render_grub_dropin(plan: FleetPlan) -> str:
    text = resources.files("infra").joinpath("templates/grub-caerus.cfg.tmpl").read_text()
    return Template(text).substitute(
        housekeeping=format_cpu_list(plan.housekeeping), hot=format_cpu_list(plan.hot),
        args=format_args(kernel_args(plan)),
    )


def irqbalance_banned_mask(cpus: Sequence[int]) -> str:
    """IRQBALANCE_BANNED_CPUS hex mask (older irqbalance); newer ones read IRQBALANCE_BANNED_CPULIST."""
    mask = 0
    for c in cpus:
        mask |= 1 << c
    return f"{mask:x}"


def smt_notes(facts: HostFacts, plan: FleetPlan) -> list[str]:
    """Dedicated hot placements whose CPUs are SMT siblings of each other share a physical core: say so."""
    notes = []
    dedicated = [(name, p.cpus[0]) for name, p in plan.placements.items() if p.dedicated and len(p.cpus) == 1]
    for i, (a, ca) in enumerate(dedicated):
        for b, cb in dedicated[i + 1:]:
            if cb in facts.siblings.get(ca, ()) and cb != ca:
                notes.append(f"{a} (CPU {ca}) and {b} (CPU {cb}) are SMT siblings sharing one physical core; "
                             f"provision with --one-thread-per-core for a core each")
    return notes
