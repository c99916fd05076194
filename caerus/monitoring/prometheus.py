"""A real Prometheus (Debian's package) on loopback, scraping caerus exporters: for `invoke bench --monitor`,
`invoke monitor` and the integration test. Its data folder is the caller's (a session folder keeps its metrics).

Prometheus's HTTP API has no authentication, and any local user can reach a loopback port: so the lifecycle API
(``POST /-/quit``, ``/-/reload``) is off unless the caller asks for it (``lifecycle=True``; ``invoke bench --monitor
--prometheus-lifecycle``, ``invoke monitor --prometheus-lifecycle``). Nothing here needs it: Prometheus is stopped
by its PID (:func:`stop`) and restarted to read a new configuration.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from caerus.runtime.children import stop_child

RULES = Path(__file__).resolve().parents[2] / "monitoring" / "rules.yml"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class PrometheusError(RuntimeError):
    """Prometheus is missing, did not start, or answered an error."""


def prometheus_binary() -> str:
    path = shutil.which("prometheus")
    if not path:
        raise PrometheusError("prometheus is not installed: apt-get install prometheus "
                              "(scripts/install-test-deps.sh installs it)")
    return path


def write_config(path: Path, targets: list[str], scrape_interval_s: float = 1.0, rules: Path | None = RULES) -> None:
    for t in targets:
        host = t.rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost", "[::1]"):
            raise PrometheusError(f"scrape target {t} is not on loopback")
    doc: dict[str, Any] = {
        "global": {"scrape_interval": f"{scrape_interval_s:g}s", "evaluation_interval": f"{scrape_interval_s:g}s"},
        "scrape_configs": [{"job_name": "caerus", "static_configs": [{"targets": targets}]}] if targets else [],
    }
    if rules is not None:
        doc["rule_files"] = [str(rules)]
    path.write_text(json.dumps(doc, indent=1))  # JSON is YAML: no YAML writer needed


def command(binary: str, data_dir: Path, port: int, retention: str = "30d", lifecycle: bool = False) -> list[str]:
    """Prometheus's argv: on 127.0.0.1:port, its config and TSDB in data_dir; the lifecycle API only when asked."""
    argv = [binary, f"--config.file={data_dir / 'prometheus.yml'}", f"--storage.tsdb.path={data_dir / 'prometheus'}",
            f"--storage.tsdb.retention.time={retention}", f"--web.listen-address=127.0.0.1:{port}"]
    if lifecycle:  # POST /-/quit and /-/reload from any local user: off unless the operator asks
        argv.append("--web.enable-lifecycle")
    return argv


def start(data_dir: Path, targets: list[str], port: int, scrape_interval_s: float = 1.0,
          retention: str = "30d", lifecycle: bool = False) -> subprocess.Popen[bytes]:
    """Prometheus on 127.0.0.1:port with its TSDB in data_dir/prometheus, ready (bounded wait) when returned; the
    lifecycle API (unauthenticated quit and reload) only with ``lifecycle``."""
    binary = prometheus_binary()
    data_dir.mkdir(parents=True, exist_ok=True)
    write_config(data_dir / "prometheus.yml", targets, scrape_interval_s)
    log = open(data_dir / "prometheus.log", "ab")  # noqa: SIM115 -- the child holds it
    proc = subprocess.Popen(command(binary, data_dir, port, retention, lifecycle), stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1.0) as r:
                if r.status == 200:
                    return proc
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    stop(proc)
    tail = (data_dir / "prometheus.log").read_text(errors="replace").strip().splitlines()
    raise PrometheusError(f"prometheus did not become ready on 127.0.0.1:{port}: {tail[-1] if tail else 'no output'}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    stop_child(proc, STOP_TIMEOUT_S)


def query(port: int, promql: str, at_s: float | None = None) -> list[dict[str, Any]]:
    """An instant query's result vector ({"metric": labels, "value": [t, "v"]} each)."""
    params = {"query": promql, **({"time": f"{at_s:.3f}"} if at_s is not None else {})}
    url = f"http://127.0.0.1:{port}/api/v1/query?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=10.0) as r:
            doc = json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise PrometheusError(f"query {promql!r} failed: {exc}") from None
    if doc.get("status") != "success":
        raise PrometheusError(f"query {promql!r}: {doc.get('error')}")
    return list(doc["data"]["result"])
