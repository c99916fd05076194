"""monitoring/dashboards/caerus.json against Grafana's published schema: the dashboard kind and the timeseries
panel's options from @grafana/schema, type-checked by the TypeScript compiler under node (a real subprocess,
tests/fixtures/grafana_dashboard_check.js); a dashboard broken in each way the schema forbids is refused with the
field's path."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.common import require_binary
from tests.unit.monitoring.test_monitoring_dashboard import DASHBOARD

ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = ROOT / ".cache" / "node" / "node_modules"
CHECKER = ROOT / "tests" / "fixtures" / "grafana_dashboard_check.js"
TIMESERIES_SCHEMA = "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen"


def check(path: Path) -> subprocess.CompletedProcess[str]:
    node = require_binary("node", "nodejs")
    for pkg in ("typescript", "@grafana/schema"):
        if not (NODE_MODULES / pkg).is_dir():
            pytest.fail(f"{pkg} missing under {NODE_MODULES}: run scripts/install-test-deps.sh")
    return subprocess.run([node, str(CHECKER), str(NODE_MODULES), str(path)], capture_output=True, text=True,
                          timeout=120, check=False)


def test_dashboard_matches_grafanas_published_schema() -> None:
    res = check(DASHBOARD)
    assert res.returncode == 0, res.stdout + res.stderr
    checked = json.loads(res.stdout)
    # every panel is a timeseries, so its options were checked against that plugin's schema, not skipped
    assert checked["panel_schemas"] == [TIMESERIES_SCHEMA]
    assert checked["@grafana/schema"] and checked["typescript"]


def _set(*keys: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(dash: dict[str, Any]) -> None:
        node: Any = dash
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return mutate


def _drop(*keys: str | int) -> Callable[[dict[str, Any]], None]:
    def mutate(dash: dict[str, Any]) -> None:
        node: Any = dash
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]
    return mutate


BROKEN = [
    ("wrong-typed gridPos", _set("panels", 2, "gridPos", "w", value="12"),
     "panels[2].gridPos.w: Type 'string' is not assignable to type 'number'"),
    ("gridPos without its height", _drop("panels", 2, "gridPos", "h"),
     "panels[2].gridPos: Property 'h' is missing"),
    ("a field the panel schema lacks", _set("panels", 4, "maxDatapoints", value=500),
     "panels[4].maxDatapoints: Object literal may only specify known properties"),
    ("an unknown panel type", _set("panels", 1, "type", value="timeseriez"),
     'panels[1].type: panel type "timeseriez" has no panel schema in @grafana/schema'),
    ("a legend mode outside the enum", _set("panels", 0, "options", "legend", "displayMode", value="grid"),
     "panels[0].options.legend.displayMode: Type '\"grid\"' is not assignable"),
    ("a timeseries option of the wrong type", _set("panels", 0, "fieldConfig", "defaults", "custom",
                                                   value={"lineWidth": "2"}),
     "panels[0].fieldConfig.defaults.custom.lineWidth: Type 'string' is not assignable to type 'number'"),
    ("a required timeseries option missing", _drop("panels", 3, "options", "tooltip"),
     "panels[3].options: Property 'tooltip' is missing"),
    ("schemaVersion as a string", _set("schemaVersion", value="39"),
     "schemaVersion: Type 'string' is not assignable to type 'number'"),
]


@pytest.mark.parametrize(("mutate", "expected"), [(m, e) for _, m, e in BROKEN], ids=[n for n, _, _ in BROKEN])
def test_a_broken_dashboard_is_refused_naming_the_field(tmp_path: Path, mutate: Callable[[dict[str, Any]], None],
                                                        expected: str) -> None:
    dash = json.loads(DASHBOARD.read_text())
    mutate(dash)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(dash))
    res = check(broken)
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), res.stdout
