"""Post-configure verification: kernel command line, isolated CPUs, chrony synchronised (and its offset),
the rendered files in place. Each check reports ok / fail / pending-reboot with what was observed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from caerus.plan import FleetPlan, format_cpu_list
from infra import tuning
from infra.chrony import TrackingParseError, parse_tracking
from infra.facts import HostFacts
from infra.kernel import kernel_args, missing_args
from infra.remote import shell_words
from infra.steps import Step


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | fail | pending-reboot | planned (plan mode: the command that fixes it was not run)
    observed: str
    expected: str


def verify(host: Any, facts: HostFacts, plan: FleetPlan, steps: list[Step], chronyc: str,
           reboot_pending: bool, live: bool = True) -> tuple[list[Check], dict | None]:
    """Checks plus the parsed chrony tracking record (None when chronyc gave nothing parseable)."""
    checks: list[Check] = []
    wanted = kernel_args(plan)
    missing = missing_args(facts.cmdline, wanted)
    later = "pending-reboot" if reboot_pending else "fail"
    checks.append(Check("kernel cmdline", "ok" if not missing else later,
                        facts.cmdline, " ".join(f"{k}={v}" if v else k for k, v in wanted.items())))
    iso_ok = tuple(facts.isolated) == tuple(plan.hot)
    checks.append(Check("isolated cpus", "ok" if iso_ok else later,
                        format_cpu_list(facts.isolated) or "(none)", format_cpu_list(plan.hot)))
    # runtime state the tune script sets: in plan mode it was only planned, so "planned" rather than "fail"
    not_applied = "fail" if live else "planned"
    drift = tuning.tune_drift(facts)
    checks.append(Check("runtime tuning (THP, ENA moderation, governor, C-states)",
                        "ok" if not drift else not_applied, "; ".join(drift) or "as wanted",
                        "THP never, ENA adaptive-rx off rx/tx-usecs 0, governor performance, deep C-states off"))
    for step in steps:
        for spec in step.files:
            have = host.read_text(spec.path)
            checks.append(Check(f"file {spec.path}", "ok" if have == spec.content else "fail",
                                "matches" if have == spec.content else ("missing" if have is None else "differs"),
                                "rendered content"))
    tracking = None
    r = host.run(f"{shell_words(chronyc, 'chronyc command')} -c tracking", check=False)
    try:
        t = parse_tracking(r.stdout)
        tracking = t.to_dict()
        checks.append(Check("chrony synchronised", "ok" if t.synchronised else "fail",
                            f"ref {t.refname or t.refid} stratum {t.stratum} leap {t.leap} "
                            f"offset {t.last_offset_s:+.9f} s rms {t.rms_offset_s:.9f} s",
                            "synchronised to the configured source"))
    except TrackingParseError as exc:
        checks.append(Check("chrony synchronised", "fail", f"{exc} (exit {r.exited}: {r.stderr.strip()[:200]})",
                            "chronyc -c tracking output"))
    return checks, tracking


def checks_to_dicts(checks: list[Check]) -> list[dict[str, str]]:
    return [asdict(c) for c in checks]
