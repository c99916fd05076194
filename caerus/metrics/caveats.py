"""The caveats a session's data implies: what a reader of its numbers must know before comparing them.

Pure functions of ``summary.json`` + ``env.json`` content; used when collecting a session (stored in the summary)
and when rendering (recomputed, so an old summary gets today's rules). Lives under metrics, below both the
session (which collects) and the report (which renders), so neither has to import the other for it.
"""

from __future__ import annotations

from typing import Any

from caerus.metrics.hdr import FLEET_TAGS

#: the fleet tags the strategy and execution record (a record-mode session runs neither)
TRADING_TAGS = frozenset({"tick_to_decision", "tick_to_eval", "queue_transit", "book_hop"})


def caveats(summary: dict[str, Any], env: dict[str, Any] | None) -> list[str]:
    out: list[str] = []
    env = env or {}
    if summary.get("failure"):
        out.append(f"SESSION FAILED: {str(summary['failure']).splitlines()[0]}")
    if summary.get("interrupted"):
        out.append("Session was interrupted before its planned duration.")
    plan = summary.get("plan") or env.get("plan") or {}
    iso = (env.get("isolation") or {}).get("isolated")
    isolated = bool(plan.get("isolated")) if plan else bool(isinstance(iso, str) and iso)
    if not isolated:
        notes = "; ".join(plan.get("notes", [])) if plan else ""
        out.append("NOT ISOLATED: hot processes shared CPUs with the rest of the machine" + (f" ({notes})" if notes
                                                                                             else "") + ".")
    policies = {p.get("wait_policy") for p in (plan.get("placements") or {}).values() if p.get("wait_policy")}
    if plan and policies - {"spin", "sleep"} and "hybrid" in policies:
        out.append("Hybrid wait policy (spin-then-yield) on shared cores: wake-up costs are in the numbers.")
    for name, p in (summary.get("processes") or {}).items():
        status = p.get("status")
        if status in ("died", "failed_to_start"):
            when = p.get("died_after_s")
            code = p.get("exit_code")
            out.append(f"Process {name} {'DIED' if status == 'died' else 'FAILED TO START'}"
                       f"{f' after {when:.1f} s' if isinstance(when, int | float) else ''}"
                       f" (exit code {code}); metrics after that point are missing. See {p.get('log', 'its log')}.")
        if p.get("restarts"):
            at = ", ".join(f"{d.get('at_s', 0):.1f} s ({d.get('signal') or d.get('exit_code')})"
                           for d in p.get("deaths") or [])
            out.append(f"Process {name} was RESTARTED {p['restarts']} time(s) after dying at {at}; its records and "
                       f"metrics have a gap around each death.")
    metrics = summary.get("metrics") or {}
    for tag, m in metrics.items():
        if m.get("clock_artifacts"):
            out.append(f"{tag}: {m['clock_artifacts']} clock artifact(s) (negative intervals, most negative "
                       f"{m.get('min_artifact_ns', 0)} ns) counted, not in the histogram.")
        if m.get("clamped"):
            out.append(f"{tag}: {m['clamped']} sample(s) above the histogram range, recorded at its maximum.")
        if m.get("buffer_full"):
            out.append(f"{tag}: {m['buffer_full']} sample(s) lost because the recording buffer was full.")
        if m.get("sidecar_missing"):
            out.append(f"{tag}: no artifact counts from {', '.join(m['sidecar_missing'])} (process did not "
                       "write its sidecar): artifacts may be undercounted.")
    live = summary.get("venues") == "live"  # no emulator: its lateness is not a metric of this session
    record = bool((summary.get("options") or {}).get("record"))  # record mode: no strategy, no execution
    missing = [t for t in FLEET_TAGS if (t not in metrics or not metrics[t].get("n"))
               and not (live and t.startswith("emulator_lateness."))
               and not (record and t in TRADING_TAGS)]
    if missing:
        out.append(f"No samples for: {', '.join(missing)}.")
    if not any(m.get("n") for t, m in metrics.items() if t.startswith("stack.") or t == "wire_to_decision"):
        out.append("No kernel receive stamps (t_wire) this session: the feeds read with websockets' asyncio client "
                   "(the plan gives the busy client only to a feed with a core of its own), so stack and "
                   "wire-to-decision are absent, not substituted; every latency here starts at t_recv.")
    counts = summary.get("headline_counts") or {}
    if counts.get("ring_losses"):
        out.append(f"{counts['ring_losses']} record(s) lost to ring lapping (readers fell behind).")
    for name, lines in (summary.get("hlog_bad_lines") or {}).items():
        if lines:
            out.append(f"{name}: {len(lines)} unreadable interval line(s) skipped (e.g. torn by a kill).")
    chrony = (env.get("chrony") or {}).get("start")
    if isinstance(chrony, dict) and "unavailable" in chrony:
        out.append(f"Clock discipline unknown ({chrony['unavailable']}): information age compares our clock "
                   "with the venue's and is only as good as the sync.")
    scenario = (summary.get("options") or {}).get("scenario")
    if scenario:
        out.append(f"Emulated venues with scenario {scenario!r}: latencies are loopback, not the internet.")
    elif summary.get("venues") == "live":
        out.append("Live venues, paper orders: nothing was sent to an exchange.")
    elif summary.get("venues", "emulator") == "emulator":
        out.append("Venues were the local emulator over loopback TLS: information age and feed numbers are not "
                   "comparable with live venues.")
    if record:
        out.append("Record mode: the feeds and capture only (no strategy, no execution, no orders).")
    if summary.get("synthetic"):
        out.append("SYNTHETIC session (generated data, no processes ran).")
    return out
