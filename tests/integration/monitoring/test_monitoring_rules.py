"""promtool on monitoring/: rules.yml checks and its unit tests pass (a blunted rule fails them); every dashboard
panel's expression parses."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.unit.monitoring.test_monitoring_dashboard import DASHBOARD, exprs

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "monitoring" / "rules.yml"
RULE_TESTS = ROOT / "monitoring" / "tests" / "rules_test.yml"


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is not installed (Debian package prometheus; scripts/install-test-deps.sh installs it)"
    return path


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd,
                          check=False)


def test_rules_check() -> None:
    res = run("check", "rules", RULES)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 10 rules found" in res.stdout


def test_rule_unit_tests_pass_with_the_stale_feed_alert_firing() -> None:
    res = run("test", "rules", RULE_TESTS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "CaerusFeedStale" in RULE_TESTS.read_text()


def test_rule_unit_tests_fail_when_the_stale_feed_rule_is_blunted(tmp_path: Path) -> None:
    """The test series would catch a stale-feed rule that waits too long (it is not vacuous)."""
    rules = RULES.read_text()
    metric = "caerus_feed_last_receive_timestamp_seconds"
    blunted = rules.replace(f"{metric} > 5", f"{metric} > 600")
    assert blunted != rules
    (tmp_path / "rules.yml").write_text(blunted)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "rules_test.yml").write_text(RULE_TESTS.read_text())
    res = run("test", "rules", tmp_path / "tests" / "rules_test.yml")
    assert res.returncode != 0
    assert "CaerusFeedStale" in res.stdout + res.stderr


def test_every_panel_expression_parses(tmp_path: Path) -> None:
    dash = json.loads(DASHBOARD.read_text())
    """promtool parses each expression (as a recording rule), with the $session variable filled in."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (Debian package prometheus; scripts/install-test-deps.sh)"
    rules = [{"record": f"panel:{i}", "expr": e.replace("$session", ".*")} for i, e in enumerate(exprs(dash)[:-1])]
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr
