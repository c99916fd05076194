"""The fleet plan a host was tuned for, as stored by configure (``.state/hosts/<name>/plan.json``).

deploy and bench must pin to the cores configure isolated; when configure never ran, the plan is derived from
the host's current isolation (and says so in its notes). :func:`unit_plan` is the plan the systemd units are
written from: the stored one, with each venue split across feed processes when the units' instrument list needs it.
"""

from __future__ import annotations

from typing import Any

from caerus.plan import BOOK_RATE_HZ, MAX_FEED_BOOKS_PER_S, FleetPlan, feed_shares, plan_fleet
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


def unit_plan(stored: FleetPlan, facts: HostFacts, instruments: int,
              max_books_per_s: float = MAX_FEED_BOOKS_PER_S) -> FleetPlan:
    """The plan the units run: ``stored`` unchanged while each venue's estimated books/s (``instruments`` x the live
    venues' rates, caerus.plan.BOOK_RATE_HZ) fits one feed process; else the plan derived again on the stored
    housekeeping and hot CPUs (the cores configure isolated, whatever the kernel has applied yet) with the venue
    split (caerus.plan.plan_fleet: a further share gets a hot core nobody uses, one thread per physical core)."""
    if all(len(feed_shares(instruments, rate, max_books_per_s)) == 1 for rate in BOOK_RATE_HZ.values()):
        return stored
    plan = plan_fleet((*stored.housekeeping, *stored.hot), isolated=stored.hot, siblings=facts.siblings or None,
                      instruments=instruments, book_rate_hz=BOOK_RATE_HZ, max_feed_books_per_s=max_books_per_s)
    return FleetPlan(plan.housekeeping, plan.hot, plan.placements, plan.isolated,
                     (*plan.notes, *(n for n in stored.notes if n not in plan.notes)), plan.feed_split)
