"""The gate as CI uses it: gating metrics only, a confirm pass before failing, A/A runs; real subprocess members."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from benchmarks.regress.runner import RegressOptions, run_aa, run_regress
from tests.fixtures.regress import SUITE, RegressRepo

GATED_SUITE = SUITE.replace('reference = "reference"\n', 'reference = "reference"\ngating = ["fake/steady.p50"]\n')


def _opts(repo: RegressRepo, out: Path, **kw: object) -> RegressOptions:
    return RegressOptions(base=kw.pop("base", None), quick=True, report_only=kw.pop("report_only", False),
                          repetitions=9, out=out, repo=repo.path, suite=kw.pop("suite", repo.suite),
                          machine_key="test-machine", baselines_dir=out.parent / "baselines",
                          no_baseline=kw.pop("no_baseline", True), only=("fake",), **kw)  # type: ignore[arg-type]


def _run(opts: RegressOptions) -> tuple[int, dict, str]:
    buf = io.StringIO()
    code = run_regress(opts, console=Console(file=buf, width=200))
    return code, json.loads((opts.out / "regress.json").read_text()), buf.getvalue()


def _head(repo: RegressRepo) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(repo.path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_real_slowdown_is_flagged_then_confirmed(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={"hop": 1.5})
    code, report, text = _run(_opts(regress_repo, tmp_path / "out", base=base))
    assert code == 1, text
    assert "fake/hop.p50" in report["summary"]["first_pass_regressions"]
    assert "fake/hop.p50" in report["confirm"]["confirmed"]
    assert report["confirm"]["repetitions"] == 18
    assert "fake/hop.p50" in report["summary"]["regressions"]
    md = (tmp_path / "out" / "regress.md").read_text()
    assert "## Confirm pass" in md and "p (Holm)" in md


def test_the_confirm_pass_removes_a_one_off_outlier(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    # head is the same code, but its first 9 runs (the whole first pass) are 50% slower on `hop`
    regress_repo.write(one_off={"hop": 1.5}, one_off_runs=9)
    code, report, text = _run(_opts(regress_repo, tmp_path / "out", base=base))
    assert "fake/hop.p50" in report["summary"]["first_pass_regressions"], text  # the first pass saw it
    assert report["confirm"] is not None and report["confirm"]["confirmed"] == [], report["confirm"]
    assert report["summary"]["regressions"] == []
    assert code == 0, text
    assert report["verdict"] == "ok"


def test_only_declared_gating_metrics_fail_a_run(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    suite = tmp_path / "gated.toml"
    suite.write_text(GATED_SUITE)
    regress_repo.write(scale={"hop": 1.5})  # hop is information in this suite; steady gates
    code, report, text = _run(_opts(regress_repo, tmp_path / "out", base=base, suite=suite))
    assert code == 0, text
    rows = {c["metric"]: c for c in report["comparisons"]}
    assert rows["fake/hop.p50"]["gating"] is False and rows["fake/hop.p50"]["raw_verdict"] == "regression"
    assert rows["fake/steady.p50"]["gating"] is True and rows["fake/steady.p50"]["mde"] is not None
    assert report["gating"] == ["fake/steady.p50"]
    assert "fake/hop.p50" in report["summary"]["information_regressions"]
    assert "(info)" in text


def test_aa_mode_runs_the_revision_against_itself_and_reports_the_false_alarm_rate(
        regress_repo: RegressRepo, tmp_path: Path) -> None:
    buf = io.StringIO()
    out = tmp_path / "aa"
    code = run_aa(_opts(regress_repo, out, base="HEAD"), 2, console=Console(file=buf, width=200))
    assert code == 0, buf.getvalue()
    doc = json.loads((out / "aa.json").read_text())
    assert doc["runs"] == 2 and len(doc["results"]) == 2
    assert doc["false_alarm_runs"] == 0, doc
    for i in (1, 2):
        report = json.loads((out / f"aa-{i}" / "regress.json").read_text())
        assert report["base"]["sha"] == report["head"]["sha"]
    assert "A/A: 2 run(s)" in buf.getvalue()


def test_a_gating_metric_that_matches_nothing_is_a_setup_error(regress_repo: RegressRepo, tmp_path: Path) -> None:
    suite = tmp_path / "renamed.toml"
    suite.write_text(SUITE.replace('reference = "reference"\n',
                                   'reference = "reference"\ngating = ["fake/hop.p50", "fake/renamed.p50"]\n'))
    code, report, text = _run(_opts(regress_repo, tmp_path / "out", base="HEAD", suite=suite))
    assert code == 2, text
    assert report["verdict"] == "incomplete"
    assert any("'fake/renamed.p50'" in p and "matched no metric" in p for p in report["problems"]), report
    assert report["gating"] == ["fake/hop.p50"]


def test_the_stored_baseline_gates_too_with_alpha_split_and_its_own_confirm_pass(
        regress_repo: RegressRepo, tmp_path: Path) -> None:
    suite = tmp_path / "gated.toml"
    suite.write_text(SUITE.replace('reference = "reference"\n', 'reference = "reference"\ngating = ["fake/hop.p50"]\n'))
    baselines = tmp_path / "baselines"
    code, _, text = _run(_opts(regress_repo, baselines.parent / "rec", suite=suite, no_baseline=False,
                               update_baseline=True))
    assert code == 0, text
    # the slowdown lands in the previous revision already: base vs head sees nothing, the baseline sees it
    regress_repo.write(scale={"hop": 1.5})
    regress_repo.commit("slower hop")
    opts = _opts(regress_repo, baselines.parent / "gate", base="HEAD", suite=suite, no_baseline=False,
                 baseline_gate=True)
    code, report, text = _run(opts)
    assert code == 1, text
    assert report["family_alpha"] == 0.005  # two gating signals, alpha split between them
    assert {c["metric"]: c["verdict"] for c in report["comparisons"]}["fake/hop.p50"] == "same"
    assert report["confirm"]["flagged_baseline"] == ["fake/hop.p50"]
    assert report["confirm"]["confirmed_baseline"] == ["fake/hop.p50"]
    assert report["summary"]["regressions"] == ["fake/hop.p50"]
    assert "confirm pass vs baseline" in text
    # without --baseline-gate the baseline is reported, base vs head decides alone
    code, report, text = _run(_opts(regress_repo, baselines.parent / "report", base="HEAD", suite=suite,
                                    no_baseline=False))
    assert code == 0, text
    assert report["family_alpha"] == 0.01 and "fake/hop.p50" in report["summary"]["baseline_regressions"]
