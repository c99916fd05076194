"""The fleet plan a host was tuned for, as stored by configure (``.state/hosts/<name>/plan.json``).

deploy and bench must pin to the cores configure isolated; when configure never ran, the plan is derived from
the host's current isolation (and says so in its notes).
"""

from __future__ import annotations

from typing import Any

from caerus.plan import FleetPlan, plan_fleet
from infra.facts import HostFacts
from infra.hosts import HostStore


def plan_from_dict(data: dict[str, Any]) -> FleetPlan:
    """Inverse of FleetPlan.to_dict."""
    return FleetPlan.from_dict(data)


def host_plan(store: HostStore, name: str, facts: HostFacts) -> FleetPlan:
    stored = store.load_json(name, "plan")
    if stored:
        return plan_from_dict(stored)
    plan = plan_fleet(facts.cpus, isolated=facts.isolated, siblings=facts.siblings or None)
    return FleetPlan(plan.housekeeping, plan.hot, plan.placements, plan.isolated,
                     (*plan.notes, "derived at deploy time: configure has not recorded a plan for this host"))
