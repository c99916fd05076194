"""`run_regress` end to end: real git worktrees, real benchmark and session subprocesses, planted shifts."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from benchmarks.regress.baselines import load_baseline
from benchmarks.regress.runner import RegressOptions, run_regress
from tests.fixtures.regress import RegressRepo

KEY = "test-machine"


def _run(repo: RegressRepo, out: Path, **kw) -> tuple[int, dict | None, str]:
    buf = io.StringIO()
    opts = RegressOptions(base=kw.pop("base", None), quick=kw.pop("quick", True),
                          report_only=kw.pop("report_only", False), repetitions=kw.pop("repetitions", 9), out=out,
                          repo=repo.path, suite=kw.pop("suite", repo.suite), machine_key=KEY,
                          baselines_dir=kw.pop("baselines_dir", out.parent / "baselines"), **kw)
    code = run_regress(opts, console=Console(file=buf, width=200))
    report = json.loads((out / "regress.json").read_text()) if (out / "regress.json").exists() else None
    return code, report, buf.getvalue()


def _verdicts(comparisons: list[dict]) -> dict[str, str]:
    return {c["metric"]: c["verdict"] for c in comparisons}


def _head(repo: RegressRepo) -> str:
    return subprocess.run(["git", "-C", str(repo.path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_planted_regression_against_base_is_caught(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={"hop": 1.5}, ratio=3.0, t2d_us=8.0)  # head: uncommitted, slower
    code, report, text = _run(regress_repo, tmp_path / "out", base=base, no_baseline=True)
    assert code == 1, text
    v = _verdicts(report["comparisons"])
    assert v["fake/hop.p50"] == "regression"
    assert v["fake/hop.p99"] == "regression"
    assert v["fake/ratio.speedup"] == "regression"  # goal says ">=": lower is worse
    assert v["sess/tick_to_decision.p50"] == "regression"
    for unchanged in ("fake/steady.p50", "fake/steady.p99", "fake/reference.p50", "sess/book_hop.p99"):
        assert v[unchanged] == "same", (unchanged, report["comparisons"])
    assert v["fake/ratio.drift"] == "same"
    assert report["verdict"] == "regression"
    assert "fake/hop.p50" in report["summary"]["regressions"]
    assert report["base"]["sha"] == base
    assert len(report["samples"]["base"]["fake/hop.p50"]) == 9
    assert len(report["samples"]["head"]["fake/hop.p50"]) == 9
    hop = next(c for c in report["comparisons"] if c["metric"] == "fake/hop.p50")
    assert hop["p_value"] < 0.01 and hop["effect"] > 0.3
    md = (tmp_path / "out" / "regress.md").read_text()
    assert "| `fake/hop.p50` |" in md and "**regression**" in md
    assert "regression" in text and "fake/hop.p50" in text
    # the quick flag reached the benchmark; the session got its out dir
    log = (tmp_path / "out" / "logs" / "head-fake-00.log").read_text()
    assert "--quick" in log
    assert json.loads((tmp_path / "out" / "logs" / "head-fake-00.json").read_text())["quick"] is True
    kept = json.loads((tmp_path / "out" / "logs" / "base-sess-03.json").read_text())
    assert kept["session"] == "fake"  # the summary.json a sample came from is kept; the session folder is not
    assert len(regress_repo.worktrees()) == 1, "base worktree not removed"
    # interleaved ABBA per member: rep 0 base first, rep 1 head first, ...
    fake_runs = [(r["rep"], r["side"]) for r in report["runs"] if r["member"] == "fake"]
    assert fake_runs[:4] == [(0, "base"), (0, "head"), (1, "head"), (1, "base")]
    assert len(fake_runs) == 18 and all(r["ok"] for r in report["runs"])


def test_equal_revisions_are_not_flagged(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={}, ratio=4.0)  # same code as base (rewritten, identical)
    code, report, text = _run(regress_repo, tmp_path / "out", base=base, no_baseline=True)
    assert code == 0, text
    assert report["verdict"] == "ok"
    assert set(_verdicts(report["comparisons"]).values()) == {"same"}, report["comparisons"]
    assert len(report["comparisons"]) == 12  # 3 metrics x 2 stats + 2 ratios + 2 session metrics x 2 stats


def test_report_only_never_fails_on_a_regression(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={"hop": 1.5})
    code, report, _ = _run(regress_repo, tmp_path / "out", base=base, report_only=True, no_baseline=True,
                           only=("fake",))
    assert code == 0
    assert report["verdict"] == "regression"
    assert report["exit_code"] == 0
    assert "sess" not in report["members"]


def test_improvement_is_reported_and_passes(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={"hop": 0.6})
    code, report, _ = _run(regress_repo, tmp_path / "out", base=base, no_baseline=True, only=("fake",))
    assert code == 0
    assert _verdicts(report["comparisons"])["fake/hop.p50"] == "improvement"
    assert "fake/hop.p50" in report["summary"]["improvements"]


def test_missing_base_revision_is_a_clear_error(regress_repo: RegressRepo, tmp_path: Path) -> None:
    code, report, text = _run(regress_repo, tmp_path / "out", base="no-such-branch", report_only=True)
    assert code == 2
    assert "no-such-branch" in text and "does not name a commit" in text
    assert report is None  # nothing was measured
    assert len(regress_repo.worktrees()) == 1


def test_baseline_round_trip_catches_a_shift_but_not_a_slower_machine(regress_repo: RegressRepo,
                                                                      tmp_path: Path) -> None:
    baselines = tmp_path / "baselines"
    code, report, text = _run(regress_repo, tmp_path / "rec", update_baseline=True, only=("fake",))
    assert code == 0, text
    stored = load_baseline(baselines, KEY)
    assert stored is not None and set(stored.modes) == {"quick"}
    quick = stored.modes["quick"]
    assert len(quick.metrics["fake/hop.p50"].samples) == 9
    assert "fake/reference.p50" not in quick.metrics  # the reference itself is not stored
    assert abs(quick.metrics["fake/hop.p50"].median - 0.5) < 0.05  # 1000 ns over the 2000 ns reference
    assert quick.metrics["fake/ratio.speedup"].direction == "higher"
    assert report["baseline"]["updated"]

    # everything 1.5x slower, reference included: a slower machine, not a regression
    regress_repo.write(scale={"hop": 1.5, "steady": 1.5, "reference": 1.5})
    code, report, text = _run(regress_repo, tmp_path / "slow-machine", only=("fake",))
    assert code == 0, text
    assert report["deciding_signal"] == "baseline"
    assert set(_verdicts(report["baseline"]["comparisons"]).values()) == {"same"}, report["baseline"]

    # only the hop slower: a real regression, caught by the baseline signal alone
    regress_repo.write(scale={"hop": 1.5})
    code, report, text = _run(regress_repo, tmp_path / "shift", only=("fake",))
    assert code == 1, text
    v = _verdicts(report["baseline"]["comparisons"])
    assert v["fake/hop.p50"] == "regression" and v["fake/steady.p50"] == "same"


def test_broken_member_is_reported_not_fatal_to_the_run(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(fail=True)
    code, report, text = _run(regress_repo, tmp_path / "out", base=base, no_baseline=True)
    assert code == 2, text
    head_fake = report["members"]["fake"]["head"]
    assert head_fake["status"] == "failed" and head_fake["runs_ok"] == 0
    assert "broke on purpose" in head_fake["failures"][0]
    assert len(head_fake["failures"]) == 1  # broken on the first repetition: not retried 8 more times
    assert report["members"]["sess"]["head"]["status"] == "ok"  # the other member still ran and compared
    assert _verdicts(report["comparisons"])["sess/book_hop.p50"] == "same"
    assert any("head fake: failed" in p for p in report["problems"])

    code, report, _ = _run(regress_repo, tmp_path / "out-ro", base=base, no_baseline=True, report_only=True)
    assert code == 0
    assert report["verdict"] == "incomplete"


def test_member_new_in_head_has_no_base(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    suite = tmp_path / "suite-new.toml"
    suite.write_text(regress_repo.suite.read_text() + '\n[[member]]\nname = "newbench"\nkind = "benchmark"\n'
                     'module = "benchmarks.new_bench"\n')
    (regress_repo.path / "benchmarks" / "new_bench.py").write_text(
        (regress_repo.path / "benchmarks" / "fake_bench.py").read_text())
    code, report, text = _run(regress_repo, tmp_path / "out", base=base, no_baseline=True, suite=suite,
                              only=("newbench",))
    assert code == 0, text
    assert report["members"]["newbench"]["base"]["status"] == "missing"
    assert set(_verdicts(report["comparisons"]).values()) == {"no-base"}


def test_too_few_repetitions_is_a_usage_error(regress_repo: RegressRepo, tmp_path: Path) -> None:
    code, report, text = _run(regress_repo, tmp_path / "out", repetitions=5)
    assert code == 2 and ">= 9" in text and report is None


def test_unreadable_baseline_is_a_setup_error_unless_report_only(regress_repo: RegressRepo, tmp_path: Path) -> None:
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / f"{KEY}.json").write_text("{broken")
    code, report, text = _run(regress_repo, tmp_path / "out", only=("fake",))
    assert code == 2, text
    assert any(f"{KEY}.json" in p for p in report["problems"])
    code, report, _ = _run(regress_repo, tmp_path / "out-ro", only=("fake",), report_only=True)
    assert code == 0 and report["verdict"] == "incomplete"
    assert (baselines / f"{KEY}.json").read_text() == "{broken"  # never overwritten behind the user's back
    code, report, text = _run(regress_repo, tmp_path / "out-up", only=("fake",), update_baseline=True)
    assert code == 0, text
    assert load_baseline(baselines, KEY) is not None  # asked to record: the unreadable file is replaced


def test_command_line_entry_point_with_metric_threshold(regress_repo: RegressRepo, tmp_path: Path) -> None:
    base = _head(regress_repo)
    regress_repo.write(scale={"hop": 1.5})
    out = tmp_path / "cli-out"
    root = Path(__file__).resolve().parents[3]
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.regress", "--repo", str(regress_repo.path), "--suite",
         str(regress_repo.suite), "--only", "fake", "--base", base, "--quick", "--no-baseline", "--out", str(out),
         "--metric-threshold", "fake/hop.*=90%"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=240,
        check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads((out / "regress.json").read_text())
    hop = next(c for c in report["comparisons"] if c["metric"] == "fake/hop.p50")
    assert hop["threshold"] == 0.9 and hop["verdict"] == "same" and hop["effect"] > 0.3
    res = subprocess.run([sys.executable, "-m", "benchmarks.regress", "--metric-threshold", "oops"], cwd=root,
                         env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=60,
                         check=False)
    assert res.returncode == 2 and "PATTERN=FRACTION" in res.stderr


HANG = '''import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
open(os.environ["HANG_PIDS"], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(300)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_hanging_member_times_out_and_its_children_are_stopped(regress_repo: RegressRepo, tmp_path: Path,
                                                               monkeypatch) -> None:
    (regress_repo.path / "benchmarks" / "hang_bench.py").write_text(HANG)
    suite = tmp_path / "suite-hang.toml"
    suite.write_text('[[member]]\nname = "hang"\nkind = "benchmark"\nmodule = "benchmarks.hang_bench"\n'
                     'timeout_s = 3\n')
    pids_file = tmp_path / "pids"
    monkeypatch.setenv("HANG_PIDS", str(pids_file))
    code, report, text = _run(regress_repo, tmp_path / "out", suite=suite, no_baseline=True)
    assert code == 2, text
    st = report["members"]["hang"]["head"]
    assert st["status"] == "failed" and "timed out after 3 s" in st["failures"][0]
    parent, child = (int(x) for x in pids_file.read_text().split())
    assert not _alive(parent) and not _alive(child)
