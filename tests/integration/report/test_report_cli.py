"""The `caerus report` command as a user runs it (a real subprocess)."""


from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def test_report_cli(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, _, b = two_sessions
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "caerus", "report", "--sessions", str(root), "--out",
                         str(tmp_path / "r")], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert ok.returncode == 0, ok.stderr
    assert b.name in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "caerus", "report", str(tmp_path / "missing"), "--out",
                          str(tmp_path / "r")], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert bad.returncode == 2 and "not a session folder" in bad.stderr
