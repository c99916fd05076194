"""The fleet plan a host was tuned for, as stored by configure (``.state/hosts/<name>/plan.json``).

deploy and bench must pin to the cores configure isolated; when configure never ran, the plan is derived from
the host's current isolation (and says so in its notes).
"""

from __future__ import annotations

from typing import Any

from caerus.plan import FleetPlan, Placement, plan_fleet
from infra.facts import HostFacts
from infra.hosts import HostStore


def plan_from_dict(data: dict[str, Any]) -> FleetPlan:
    """Inverse of FleetPlan.to_dict."""
    return FleetPlan(
        housekeeping=tuple(data["housekeeping"]),
        hot=tuple(data["hot"]),
        placements={
            name: Placement(name, tuple(p["cpus"]), p["wait_policy"], bool(p["dedicated"]))
            for name, p in data["placements"].items()
        },
        isolated=bool(data.get("isolated", False)),
        notes=tuple(data.get("notes", ())),
    )


def host_plan(store: HostStore, name: str, facts: HostFacts) -> FleetPlan:
    stored = store.load_json(name, "plan")
    if stored:
        return plan_from_dict(stored)
    plan = plan_fleet(facts.cpus, isolated=facts.isolated)
    return FleetPlan(plan.housekeeping, plan.hot, plan.placements, plan.isolated,
                     (*plan.notes, "derived at deploy time: configure has not recorded a plan for this host"))
