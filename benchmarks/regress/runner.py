"""`invoke regress`: run the suite on base and head interleaved, compare, write the report, pick the exit code.

Exit codes: 0 no regression (or ``report_only``), 1 a regression in the deciding signal, 2 usage or setup error
(bad options, unknown base revision, unreadable suite, and - unless ``report_only`` - a suite member that never
produced a sample on head, or an unreadable baseline file). The deciding signal is base vs head when ``base`` is
given (same machine, same job, interleaved), otherwise the stored baseline. With ``base`` the baseline is still
compared and reported as a second signal; ``baseline_gate`` makes its regressions fail the run too.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

import msgspec
from rich.console import Console

from benchmarks.regress import baselines as bl
from benchmarks.regress.calibrate import calibration_ns
from benchmarks.regress.render import print_report, write_outputs
from benchmarks.regress.stats import (
    CHANGED,
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    IMPROVEMENT,
    MIN_SAMPLES,
    REGRESSION,
    UNKNOWN,
    compare,
    gate_family,
)
from benchmarks.regress.suite import (
    DEFAULT_SUITE,
    Member,
    RunOutcome,
    SuiteError,
    gating_predicate,
    load_suite,
    normalize,
    run_member,
    threshold_for,
)
from benchmarks.regress.worktree import RevisionError, base_worktree, head_state

MIN_REPETITIONS = 9  # 9 vs 9: the smallest two-sided Mann-Whitney p is 2/C(18,9) ~ 4.1e-5, far below 0.01

EXIT_OK, EXIT_REGRESSION, EXIT_SETUP = 0, 1, 2


@dataclass
class RegressOptions:
    """Everything `invoke regress` can be told (the first six fields are the tasks.py contract)."""

    base: str | None
    quick: bool
    report_only: bool
    repetitions: int
    out: Path
    repo: Path
    only: Sequence[str] = ()  # suite member names; empty = the whole suite
    threshold: float = DEFAULT_THRESHOLD  # default per-metric threshold (fraction)
    thresholds: dict[str, float] = field(default_factory=dict)  # fnmatch pattern on metric id -> fraction
    alpha: float = DEFAULT_ALPHA
    update_baseline: bool = False
    baseline_gate: bool = False  # with base: a baseline regression also fails the run
    no_baseline: bool = False  # skip the stored-baseline signal entirely
    baselines_dir: Path | None = None  # default: <repo>/benchmarks/baselines
    suite: Path | None = None  # default: benchmarks/regress/suite.toml
    machine_key: str | None = None  # default: derived from CPU model, cores, kernel
    confirm: bool = True  # re-measure flagged gating metrics before failing
    confirm_repetitions: int = 0  # per side in the confirm pass; 0 = twice ``repetitions``


class UsageError(ValueError):
    pass


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """``["ipc_hop/*.p99=0.2", "session/*=0.3"]`` -> {pattern: fraction}; UsageError on a bad spec."""
    out: dict[str, float] = {}
    for spec in specs:
        pattern, sep, value = spec.rpartition("=")
        try:
            frac = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
        except ValueError:
            frac = -1.0
        if not sep or not pattern or not frac >= 0:
            raise UsageError(f"threshold {spec!r} must look like PATTERN=FRACTION (e.g. 'session/*.p99=0.25' "
                             f"or 'session/*.p99=25%')")
        out[pattern] = frac
    return out


def _validate(opts: RegressOptions) -> None:
    if opts.repetitions < MIN_REPETITIONS:
        raise UsageError(f"--repetitions must be >= {MIN_REPETITIONS} (got {opts.repetitions}); --quick shortens "
                         f"each repetition instead")
    if not (0 < opts.alpha < 1):
        raise UsageError(f"alpha must be between 0 and 1, got {opts.alpha}")
    if not opts.threshold >= 0:
        raise UsageError(f"threshold must be >= 0, got {opts.threshold}")
    for k, v in opts.thresholds.items():
        if not v >= 0:
            raise UsageError(f"threshold for {k!r} must be >= 0, got {v}")
    if not opts.repo.is_dir():
        raise UsageError(f"repository {opts.repo} is not a folder")


@dataclass
class _SideData:
    """Samples collected for one side: metric id -> one value per successful repetition."""

    values: dict[str, list[float]] = field(default_factory=dict)
    normalized: dict[str, list[float]] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)
    status: dict[str, dict] = field(default_factory=dict)  # member -> {status, runs_ok, failures}
    runs: list[dict] = field(default_factory=list)  # every run in the order it happened (shared by all sides)

    def add(self, outcome: RunOutcome) -> None:
        st = self.status[outcome.member]
        if not outcome.ok or outcome.sample is None:
            st["failures"].append(f"rep {outcome.repetition}: {outcome.error}")
            return
        st["runs_ok"] += 1
        s = outcome.sample
        for mid, v in s.values.items():
            self.values.setdefault(mid, []).append(v)
            self.directions.setdefault(mid, s.directions.get(mid, UNKNOWN))
        for mid, v in s.normalized.items():
            self.normalized.setdefault(mid, []).append(v)
        if s.reference:
            self.references[outcome.member] = s.reference


def _new_status(members: list[Member]) -> dict[str, dict]:
    return {m.name: {"status": "pending", "runs_ok": 0, "failures": []} for m in members}


def _finish_status(st: dict, repetitions: int) -> None:
    if st["status"] in ("missing",):
        return
    if st["runs_ok"] == 0:
        st["status"] = "failed"
    elif st["runs_ok"] < repetitions:
        st["status"] = "partial"
    else:
        st["status"] = "ok"


def _collect(members: list[Member], roots: dict[str, Path], opts: RegressOptions, work: Path, logs: Path,
             console: Console, repetitions: int | None = None, label: str = "") -> dict[str, _SideData]:
    """Run every member ``repetitions`` times per side, interleaved ABBA (base,head | head,base | ...)."""
    repetitions = repetitions or opts.repetitions
    if label:
        (logs / label).mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    data = {side: _SideData(status=_new_status(members), runs=runs) for side in roots}
    skip: set[tuple[str, str]] = set()
    for side, root in roots.items():
        for m in members:
            if m.module_file(root) is None:
                data[side].status[m.name].update(status="missing")
                data[side].status[m.name]["failures"].append(
                    f"module {m.module} is not in the {side} tree ({root})")
                skip.add((side, m.name))
    order = [s for s in ("base", "head") if s in roots]
    for rep in range(repetitions):
        sides = order if rep % 2 == 0 else order[::-1]
        for m in members:
            for side in sides:
                if (side, m.name) in skip:
                    continue
                calib = calibration_ns() if side == "head" else 0.0
                outcome = run_member(m, root=roots[side], side=side, repetition=rep, quick=opts.quick, work=work,
                                     log_dir=logs / label if label else logs)
                if outcome.ok and outcome.sample is not None and side == "head":
                    normalize(m, outcome.sample, calib)
                data[side].add(outcome)
                runs.append({"rep": rep, "side": side, "member": m.name, "ok": outcome.ok,
                             "seconds": round(outcome.seconds, 3)})
                mark = "ok" if outcome.ok else f"[red]FAILED[/red] {outcome.error}"
                console.print(f"[dim]{label + ' ' if label else ''}rep {rep + 1}/{repetitions}[/dim] {side:4} "
                              f"{m.name}: {mark} "
                              f"({outcome.seconds:.1f} s)", highlight=False)
                if not outcome.ok and rep == 0:
                    skip.add((side, m.name))  # broken from the start: do not pay its timeout 8 more times
    for side in data:
        for st in data[side].status.values():
            _finish_status(st, repetitions)
    return data


def _member_of(metric: str, members: list[Member]) -> Member | None:
    name = metric.split("/", 1)[0]
    return next((m for m in members if m.name == name), None)


def _compare_sides(base: _SideData, head: _SideData, members: list[Member], opts: RegressOptions) -> list[dict]:
    metrics = list(dict.fromkeys([*head.values, *base.values]))
    out = []
    for mid in metrics:
        direction = head.directions.get(mid) or base.directions.get(mid, UNKNOWN)
        thr = threshold_for(mid, _member_of(mid, members), opts.thresholds, opts.threshold)
        out.append(compare(mid, base.values.get(mid, []), head.values.get(mid, []), direction=direction,
                           threshold=thr, alpha=opts.alpha).to_dict())
    return out


def _baseline_signal(head: _SideData | None, members: list[Member], opts: RegressOptions,
                     baselines_dir: Path, key: str, identity: bl.MachineIdentity, head_info: dict,
                     problems: list[str]) -> tuple[dict, bool]:
    """Compare head's normalized samples with the stored baseline; update it when asked.

    Returns (section for the report, True when the baseline file is unreadable).
    """
    mode = "quick" if opts.quick else "full"
    section: dict = {"key": key, "mode": mode, "path": str(bl.baseline_path(baselines_dir, key)),
                     "comparisons": [], "message": "", "updated": None}
    try:
        stored = bl.load_baseline(baselines_dir, key)
    except bl.BaselineError as exc:
        problems.append(str(exc))
        section["message"] = f"unreadable: {exc}"
        if not opts.update_baseline:
            return section, True
        stored = None  # asked to record a new one: replace the unreadable file
    names = {m.name for m in members}
    stored_mode = stored.modes.get(mode) if stored else None
    if stored_mode is None:
        section["message"] = (f"no {mode} baseline for machine {key} in {baselines_dir} "
                              f"(record one with --update-baseline{' --quick' if opts.quick else ''})")
    elif head is not None:
        section["revision"] = stored_mode.revision
        section["created"] = stored_mode.created
        metrics = [m for m in dict.fromkeys([*head.normalized, *stored_mode.metrics])
                   if m.split("/", 1)[0] in names]
        for mid in metrics:
            ref = stored_mode.metrics.get(mid)
            direction = head.directions.get(mid) or (ref.direction if ref else UNKNOWN)
            thr = threshold_for(mid, _member_of(mid, members), opts.thresholds, opts.threshold)
            section["comparisons"].append(compare(mid, ref.samples if ref else [], head.normalized.get(mid, []),
                                                  direction=direction, threshold=thr, alpha=opts.alpha).to_dict())
        section["message"] = (f"compared with the {mode} baseline of {(stored_mode.revision or '?')[:12]} "
                              f"recorded {stored_mode.created}")
    if opts.update_baseline and head is not None:
        kept = {mid: bl.BaselineMetric(direction=head.directions.get(mid, UNKNOWN), samples=v,
                                       median=float(statistics.median(v)))
                for mid, v in head.normalized.items() if len(v) >= MIN_SAMPLES}
        if not kept:
            problems.append("--update-baseline: head produced no metric with enough samples; baseline not written")
        else:
            if stored and stored_mode is not None:  # keep metrics of members not run this time (--only)
                for mid, metric in stored_mode.metrics.items():
                    if mid.split("/", 1)[0] not in names:
                        kept.setdefault(mid, metric)
            mode_doc = bl.BaselineMode(created=bl.utc_now(), revision=head_info.get("sha"),
                                       dirty=head_info.get("dirty"), repetitions=opts.repetitions,
                                       references=dict(head.references), metrics=dict(sorted(kept.items())))
            path = bl.save_baseline(baselines_dir, bl.with_mode(stored, key, identity, mode, mode_doc))
            section["updated"] = str(path)
            section["message"] += f"; updated {path}" if section["message"] else f"updated {path}"
    return section, False


def _confirm(flagged: list[str], flagged_baseline: list[str], members: list[Member], roots: dict[str, Path],
             opts: RegressOptions, work: Path, logs: Path, console: Console, baselines_dir: Path, key: str,
             alpha: float) -> dict:
    """Re-measure the members behind flagged gating metrics with more interleaved repetitions and decide again on
    the fresh samples only (Holm at ``alpha`` over the flagged rows): a one-off disturbance of the first pass does
    not fail the run, a real slowdown shows again. ``flagged`` are base-vs-head rows (decided against fresh base
    samples), ``flagged_baseline`` stored-baseline rows (fresh head samples against the stored ones)."""
    reps = opts.confirm_repetitions or 2 * opts.repetitions
    names = list(dict.fromkeys(m.split("/", 1)[0] for m in [*flagged, *flagged_baseline]))
    rerun = [m for m in members if m.name in names]
    console.print(f"regress: confirming {len(flagged) + len(flagged_baseline)} flagged gating metric(s) with "
                  f"{reps} more repetitions of {', '.join(names)}", highlight=False)
    data = _collect(rerun, roots, opts, work, logs, console, repetitions=reps, label="confirm")
    head = data["head"]
    rows: list[dict] = []
    for mid in flagged if "base" in data else []:
        thr = threshold_for(mid, _member_of(mid, members), opts.thresholds, opts.threshold)
        direction = head.directions.get(mid) or data["base"].directions.get(mid, UNKNOWN)
        rows.append(compare(mid, data["base"].values.get(mid, []), head.values.get(mid, []),
                            direction=direction, threshold=thr, alpha=opts.alpha).to_dict() | {"signal": "base"})
    if flagged_baseline:
        stored = bl.load_baseline(baselines_dir, key)
        mode = stored.modes.get("quick" if opts.quick else "full") if stored else None
        for mid in flagged_baseline:
            ref = mode.metrics.get(mid) if mode else None
            thr = threshold_for(mid, _member_of(mid, members), opts.thresholds, opts.threshold)
            direction = head.directions.get(mid) or (ref.direction if ref else UNKNOWN)
            rows.append(compare(mid, ref.samples if ref else [], head.normalized.get(mid, []),
                                direction=direction, threshold=thr, alpha=opts.alpha).to_dict()
                        | {"signal": "baseline"})
    samples = (data["base"].values, head.values) if "base" in data and not flagged_baseline else None
    gate_family(rows, lambda m: True, alpha, samples=samples)
    return {"repetitions": reps, "members": names, "flagged": flagged, "flagged_baseline": flagged_baseline,
            "comparisons": rows,
            "confirmed": [c["metric"] for c in rows if c["signal"] == "base" and c["verdict"] == REGRESSION],
            "confirmed_baseline": [c["metric"] for c in rows
                                   if c["signal"] == "baseline" and c["verdict"] == REGRESSION]}


def unmatched_gating(members: list[Member], head_values: dict[str, list[float]],
                     head_status: dict[str, dict]) -> list[str]:
    """Declared gating patterns that match no metric head produced (for members that ran on head).

    A renamed benchmark metric must not make the gate silently gate nothing: each is reported as a problem.
    """
    out = []
    for m in members:
        if head_status.get(m.name, {}).get("runs_ok", 0) == 0:
            continue  # a missing/failed member is reported as such already
        for pattern in m.gating:
            if not any(fnmatch.fnmatchcase(mid, pattern) for mid in head_values):
                out.append(f"gating metric {pattern!r} of member {m.name} matched no metric head produced "
                           f"(renamed or dropped?): the gate cannot see it; fix `gating` in the suite file")
    return out


def _verdicts(comparisons: list[dict], verdict: str) -> list[str]:
    return [c["metric"] for c in comparisons if c["verdict"] == verdict]


def run_regress(opts: RegressOptions, console: Console | None = None) -> int:
    """Run the regression check described by ``opts``; returns the exit code (see the module docstring)."""
    # CI logs are not terminals: rich would wrap the table at 80 columns
    console = console or Console(width=None if sys.stdout.isatty() else 150)
    repo = opts.repo.resolve()
    problems: list[str] = []
    try:
        _validate(opts)
        members = load_suite(opts.suite or DEFAULT_SUITE, list(opts.only) or None)
        if not members:
            raise UsageError("the suite selects no members")
    except (UsageError, SuiteError) as exc:
        console.print(f"[red]regress: {exc}[/red]", highlight=False)
        return EXIT_SETUP
    identity = bl.machine_identity()
    key = opts.machine_key or bl.machine_key(identity)
    baselines_dir = opts.baselines_dir or repo / "benchmarks" / "baselines"
    head_info = head_state(repo)
    out = opts.out if opts.out.is_absolute() else Path.cwd() / opts.out
    logs = out / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        roots: dict[str, Path] = {"head": repo}
        base_info = None
        if opts.base:
            try:
                base_root, sha = stack.enter_context(base_worktree(repo, opts.base))
            except RevisionError as exc:
                console.print(f"[red]regress: {exc}[/red]", highlight=False)
                return EXIT_SETUP
            roots = {"base": base_root, "head": repo}
            base_info = {"rev": opts.base, "sha": sha}
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="caerus-regress-")))
        console.print(f"regress: {len(members)} member(s) x {opts.repetitions} repetitions x {len(roots)} side(s)"
                      f" ({'quick' if opts.quick else 'full'}); logs in {logs}", highlight=False)
        data = _collect(members, roots, opts, work, logs, console)
        gates = gating_predicate(members)
        head = data["head"]
        comparisons = _compare_sides(data["base"], head, members, opts) if "base" in data else []
        baseline: dict = {"key": key, "mode": "quick" if opts.quick else "full", "comparisons": [],
                    "message": "disabled (--no-baseline)", "updated": None}
        baseline_broken = False
        if not opts.no_baseline:
            baseline, baseline_broken = _baseline_signal(head, members, opts, baselines_dir, key, identity,
                                                         head_info, problems)
        # both signals gate (--base with --baseline-gate and a stored baseline): each is decided at alpha / 2, so
        # the chance of any false gating regression in the run stays <= alpha (Bonferroni over the two families)
        both = bool(opts.base and opts.baseline_gate and baseline["comparisons"])
        family_alpha = opts.alpha / 2 if both else opts.alpha
        if comparisons:
            gate_family(comparisons, gates, family_alpha, samples=(data["base"].values, head.values))
        if baseline["comparisons"]:
            gate_family(baseline["comparisons"], gates, family_alpha)
        deciding = comparisons if opts.base else baseline["comparisons"]
        flagged = [c["metric"] for c in deciding if c["gating"] and c["verdict"] == REGRESSION]
        flagged_baseline = [c["metric"] for c in baseline["comparisons"] if c["gating"]
                            and c["verdict"] == REGRESSION] if (both or not opts.base) else []
        if not opts.base:
            flagged_baseline, flagged = flagged, []  # the baseline is the deciding signal
        confirm = _confirm(flagged, flagged_baseline, members, roots, opts, work, logs, console, baselines_dir,
                           key, family_alpha) if (flagged or flagged_baseline) and opts.confirm else None

    problems += unmatched_gating(members, head.values, head.status)
    broken_head = [n for n, st in head.status.items() if st["status"] in ("missing", "failed")]
    for side, d in data.items():
        for n, st in d.status.items():
            if st["status"] in ("missing", "failed", "partial"):
                problems.append(f"{side} {n}: {st['status']} ({st['runs_ok']}/{opts.repetitions} runs ok): "
                                f"{st['failures'][0] if st['failures'] else ''}")
    for c in comparisons:
        if c["verdict"] == "no-head":
            problems.append(f"{c['metric']}: measured on base but not on head")

    gating_signal = deciding + (baseline["comparisons"] if both else [])
    first_pass = list(dict.fromkeys(c["metric"] for c in gating_signal
                                    if c["gating"] and c["verdict"] == REGRESSION))
    if confirm is not None:
        still = set(confirm["confirmed"]) | set(confirm["confirmed_baseline"])
        regressions = [m for m in first_pass if m in still]
    else:
        regressions = first_pass
    signals = comparisons + baseline["comparisons"]
    summary = {
        "regressions": regressions,
        "first_pass_regressions": first_pass,
        "confirmed": None if confirm is None else confirm["confirmed"] + confirm["confirmed_baseline"],
        "information_regressions": [c["metric"] for c in deciding
                                    if not c["gating"] and c["raw_verdict"] == REGRESSION],
        "improvements": list(dict.fromkeys(_verdicts(deciding, IMPROVEMENT))),
        "changed": list(dict.fromkeys(_verdicts(deciding, CHANGED))),
        "baseline_regressions": _verdicts(baseline["comparisons"], REGRESSION),
        "all_signals_regressions": list(dict.fromkeys(_verdicts(signals, REGRESSION))),
    }
    setup_broken = bool(broken_head) or baseline_broken or bool(unmatched_gating(members, head.values, head.status))
    if regressions:
        verdict = "regression"
    elif setup_broken:
        verdict = "incomplete"
    else:
        verdict = "ok"
    if opts.report_only:
        code = EXIT_OK
    elif setup_broken:
        code = EXIT_SETUP
    elif regressions:
        code = EXIT_REGRESSION
    else:
        code = EXIT_OK
    if regressions and setup_broken and not opts.report_only:
        code = EXIT_REGRESSION  # a measured regression is the more useful signal; the problems are listed too

    report = {
        "schema": 1,
        "created": bl.utc_now(),
        "verdict": verdict,
        "exit_code": code,
        "deciding_signal": "base-vs-head" if opts.base else "baseline",
        "options": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()},
                    "only": list(opts.only), "suite": str(opts.suite or DEFAULT_SUITE)},
        "machine": {"key": key, **msgspec.structs.asdict(identity)},
        "python": sys.version.split()[0],
        "head": head_info,
        "base": base_info,
        "members": {m.name: {side: data[side].status[m.name] for side in data} for m in members},
        "references": head.references,
        "comparisons": comparisons,
        "confirm": confirm,
        "gating": [c["metric"] for c in deciding if c["gating"]],
        "family_alpha": family_alpha,
        "baseline": baseline,
        "runs": head.runs,
        "summary": summary,
        "problems": problems,
        "samples": {side: d.values for side, d in data.items()} | {"head_normalized": head.normalized},
    }
    print_report(report, console)
    jpath, mpath = write_outputs(report, out)
    console.print(f"wrote {jpath} and {mpath}", highlight=False)
    return code


def run_aa(opts: RegressOptions, runs: int, console: Console | None = None) -> int:
    """A/A mode: ``runs`` complete regression checks of one revision against itself; prints the false-alarm rate.

    Every flagged regression in an A/A run is false by construction, so the share of runs that flag one (first
    pass) and that fail (after the confirm pass) is the gate's observed false-alarm rate on this machine.
    """
    console = console or Console(width=None if sys.stdout.isatty() else 150)
    if runs < 1:
        console.print(f"[red]regress: --aa needs at least 1 run, got {runs}[/red]", highlight=False)
        return EXIT_SETUP
    out = opts.out if opts.out.is_absolute() else Path.cwd() / opts.out
    results = []
    for i in range(runs):
        run_opts = RegressOptions(**{**asdict(opts), "base": opts.base or "HEAD", "out": out / f"aa-{i + 1}",
                                     "report_only": True, "update_baseline": False})
        console.print(f"regress --aa: run {i + 1}/{runs} ({run_opts.base} vs itself)", highlight=False)
        code = run_regress(run_opts, console)
        if code == EXIT_SETUP:
            return code
        report = json.loads((run_opts.out / "regress.json").read_text())
        s = report["summary"]
        results.append({"run": i + 1, "first_pass": s.get("first_pass_regressions") or [],
                        "failed": s["regressions"], "information": s.get("information_regressions") or []})
    first = sum(1 for r in results if r["first_pass"])
    failed = sum(1 for r in results if r["failed"])
    info = sum(1 for r in results if r["information"])
    doc = {"runs": runs, "alpha": opts.alpha, "first_pass_alarm_runs": first, "false_alarm_runs": failed,
           "information_alarm_runs": info, "false_alarm_rate": failed / runs, "results": results}
    out.mkdir(parents=True, exist_ok=True)
    (out / "aa.json").write_text(json.dumps(doc, indent=2) + "\n")
    console.print(f"A/A: {runs} run(s); runs failing on a (false) gating regression: {failed} "
                  f"(rate {failed / runs:.0%}; first pass flagged {first}); runs with an information-only "
                  f"regression: {info}. Wrote {out / 'aa.json'}", highlight=False)
    return EXIT_OK
