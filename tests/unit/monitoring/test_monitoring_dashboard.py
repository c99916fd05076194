"""monitoring/dashboards/caerus.json: every panel's PromQL names only metrics the exporter serves (promtool parses
them in tests/integration/monitoring/test_monitoring_rules.py; Grafana's published schema checks the dashboard in
tests/integration/monitoring/test_monitoring_dashboard_schema.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from caerus.monitoring import names

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "monitoring" / "dashboards" / "caerus.json"
METRIC_RE = re.compile(r"\bcaerus_[a-z0-9_]+\b")
# what the dashboard shows, by issue 31 (a panel removed fails here)
REQUIRED_METRICS = {"caerus_latency_window_seconds", "caerus_books_total", "caerus_fires_total",
                    "caerus_untradeable_seconds_total", "caerus_process_resident_memory_bytes",
                    "caerus_orders_total"}


def exprs(dash: dict[str, Any]) -> list[str]:
    out = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    out += [v["query"]["query"] for v in dash["templating"]["list"] if isinstance(v.get("query"), dict)]
    return out


def unknown_metrics(dash: dict[str, Any]) -> set[str]:
    exported = names.exported()
    return {m for e in exprs(dash) for m in METRIC_RE.findall(e)} - exported


@pytest.fixture(scope="module")
def dash() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def test_every_panel_names_only_exported_metrics(dash: dict[str, Any]) -> None:
    assert all(p.get("targets") for p in dash["panels"])
    assert unknown_metrics(dash) == set()
    named = {m for e in exprs(dash) for m in METRIC_RE.findall(e)}
    assert named >= REQUIRED_METRICS


def test_a_misspelt_metric_is_caught(dash: dict[str, Any]) -> None:
    dash["panels"][0]["targets"][0]["expr"] = "rate(caerus_book_total[1m])"
    assert unknown_metrics(dash) == {"caerus_book_total"}


def test_dashboard_shape(dash: dict[str, Any]) -> None:
    assert dash["uid"] == "caerus" and isinstance(dash["schemaVersion"], int)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        assert p["datasource"]["uid"] == "caerus-prometheus", p["title"]
        assert {"x", "y", "w", "h"} <= set(p["gridPos"]), p["title"]


def test_provisioning_points_at_the_dashboard_uid() -> None:
    ds = yaml.safe_load((ROOT / "monitoring" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    assert ds["datasources"][0]["uid"] == "caerus-prometheus"
    prov = yaml.safe_load((ROOT / "monitoring" / "provisioning" / "dashboards" / "caerus.yml").read_text())
    assert prov["providers"][0]["type"] == "file"
