"""Prometheus as `invoke bench --monitor` / `invoke monitor` start it (Debian's real binary on loopback) has no
lifecycle API unless asked for: its HTTP API has no authentication, so with it any local user could stop it with
``POST /-/quit`` (issue 44)."""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from caerus.monitoring import prometheus
from tests.fixtures.common import free_port, require_binary

pytestmark = pytest.mark.integration

WAIT_S = 30.0
LIFECYCLE = "--web.enable-lifecycle"


def _post_quit(port: int) -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/-/quit", data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=WAIT_S) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _ready(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=WAIT_S) as r:
        return r.status == 200


def test_post_quit_is_refused_by_default_and_prometheus_keeps_running(tmp_path: Path) -> None:
    require_binary("prometheus", "prometheus")
    assert LIFECYCLE not in prometheus.command("prometheus", tmp_path, 9090)
    port = free_port()
    proc = prometheus.start(tmp_path / "prom", [], port)
    try:
        assert LIFECYCLE not in proc.args  # type: ignore[operator]
        status, body = _post_quit(port)
        assert status == 403 and "Lifecycle API is not enabled" in body, (status, body)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2.0)  # still running (it would exit at once on an accepted quit)
        assert _ready(port)
    finally:
        prometheus.stop(proc)


def test_asked_for_the_lifecycle_api_is_on(tmp_path: Path) -> None:
    """The explicit option (``--prometheus-lifecycle``) turns it on: the same request then stops Prometheus."""
    require_binary("prometheus", "prometheus")
    port = free_port()
    proc = prometheus.start(tmp_path / "prom", [], port, lifecycle=True)
    try:
        assert LIFECYCLE in proc.args  # type: ignore[operator]
        status, _ = _post_quit(port)
        assert status == 200
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            prometheus.stop(proc)


def test_bench_refuses_the_lifecycle_option_without_monitor(tmp_path: Path) -> None:
    from invoke import Context

    import tasks

    with pytest.raises(SystemExit) as exc:
        tasks.bench(Context(), out=str(tmp_path / "sessions"), prometheus_lifecycle=True)
    assert exc.value.code == 2
    assert not (tmp_path / "sessions").exists()
