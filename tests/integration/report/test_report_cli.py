"""The `caerus report` command as a user runs it (a real subprocess)."""


from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_report_cli(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, _, b = two_sessions
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "caerus", "report", "--sessions-dir", str(root), "--out",
                         str(tmp_path / "r")], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert ok.returncode == 0, ok.stderr
    assert b.name in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "caerus", "report", str(tmp_path / "missing"), "--out",
                          str(tmp_path / "r")], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert bad.returncode == 2 and "not a session folder" in bad.stderr


def test_invoke_report_takes_comma_separated_sessions_and_names_bad_ones(two_sessions: tuple[Path, Path, Path],
                                                                         tmp_path: Path) -> None:
    from invoke import Context

    import tasks

    _, a, b = two_sessions
    tasks.report(Context(), session=[f"{a},{b}"], out=str(tmp_path / "r"))  # the natural guess works
    assert (tmp_path / "r" / "index.html").exists()
    with pytest.raises(SystemExit) as exc:
        tasks.report(Context(), session=[str(tmp_path / "missing")], out=str(tmp_path / "r"))
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        tasks.report(Context(), sessions_dir=str(tmp_path / "none"), out=str(tmp_path / "r"))
    assert exc.value.code == 2
