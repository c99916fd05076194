"""`python -m benchmarks.regress`: the same check as `invoke regress`, for CI scripts and debugging."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.regress.runner import (
    MIN_REPETITIONS,
    RegressOptions,
    UsageError,
    parse_thresholds,
    run_aa,
    run_regress,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.regress", description=__doc__.splitlines()[0])
    p.add_argument("--base", help="git revision to compare against (checked out in a temporary worktree)")
    p.add_argument("--quick", action="store_true", help="fewer samples per repetition (not fewer repetitions)")
    p.add_argument("--report-only", action="store_true", help="always exit 0 once the options are valid")
    p.add_argument("--repetitions", type=int, default=MIN_REPETITIONS, help="repetitions per side (>= 9)")
    p.add_argument("--out", type=Path, default=Path("regress-out"), help="folder for regress.json / regress.md")
    p.add_argument("--repo", type=Path, default=Path.cwd(), help="repository (head = its working tree)")
    p.add_argument("--only", action="append", default=[], help="suite member to run (repeatable)")
    p.add_argument("--threshold", type=float, default=0.10, help="default threshold, fraction (0.10 = 10%%)")
    p.add_argument("--metric-threshold", action="append", default=[], metavar="PATTERN=FRACTION",
                   help="per-metric threshold, fnmatch on the metric id, e.g. 'session/*.p99=0.25' (repeatable)")
    p.add_argument("--alpha", type=float, default=0.01, help="Mann-Whitney U significance level")
    p.add_argument("--update-baseline", action="store_true", help="store head's results as this machine's baseline")
    p.add_argument("--baseline-gate", action="store_true",
                   help="with --base: the stored baseline gates too (each signal at alpha / 2)")
    p.add_argument("--no-baseline", action="store_true", help="skip the stored-baseline signal")
    p.add_argument("--baselines-dir", type=Path, help="default: <repo>/benchmarks/baselines")
    p.add_argument("--suite", type=Path, help="suite file (default benchmarks/regress/suite.toml)")
    p.add_argument("--machine-key", help="baseline file stem (default: from CPU model, cores, kernel)")
    p.add_argument("--no-confirm", action="store_true", help="fail on the first pass (skip the confirm pass)")
    p.add_argument("--confirm-repetitions", type=int, default=0,
                   help="repetitions per side in the confirm pass (default: twice --repetitions)")
    p.add_argument("--aa", type=int, default=0, metavar="N",
                   help="A/A mode: N checks of --base (default HEAD) against itself; prints the false-alarm rate")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        thresholds = parse_thresholds(a.metric_threshold)
    except UsageError as exc:
        print(f"regress: {exc}", file=sys.stderr)
        return 2
    opts = RegressOptions(
        base=a.base, quick=a.quick, report_only=a.report_only, repetitions=a.repetitions, out=a.out,
        repo=a.repo, only=tuple(a.only), threshold=a.threshold, thresholds=thresholds, alpha=a.alpha,
        update_baseline=a.update_baseline, baseline_gate=a.baseline_gate, no_baseline=a.no_baseline,
        baselines_dir=a.baselines_dir, suite=a.suite, machine_key=a.machine_key, confirm=not a.no_confirm,
        confirm_repetitions=a.confirm_repetitions)
    return run_aa(opts, a.aa) if a.aa else run_regress(opts)


if __name__ == "__main__":
    sys.exit(main())
