"""caerus exporter's bad input: one line naming what is wrong, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.common import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


def exporter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "exporter", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)


def test_a_non_loopback_bind_is_refused(tmp_path: Path) -> None:
    res = exporter(str(tmp_path), "--bind", "0.0.0.0")
    assert res.returncode == 2
    assert res.stderr.strip() == ("caerus exporter: --bind 0.0.0.0 is not a loopback address (the exporter stays "
                                  "on loopback)")


def test_a_folder_that_is_not_a_session_is_named(tmp_path: Path) -> None:
    res = exporter(str(tmp_path), "--wait", "0", "--port", str(free_port()))
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last == f"caerus exporter: {tmp_path}/config.toml does not exist (not a session folder, or the fleet " \
                   "has not started)"
    assert "Traceback" not in res.stderr
