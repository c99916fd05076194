"""A host carries the fleet's runtime only: commands that need the [report] extra say so in one line, exit 2, and
a session refuses to start (rather than fail after hours) when it could not render its report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from caerus import cli


def test_caerus_report_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith(("matplotlib.", "caerus.report"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ModuleNotFoundError
    assert cli.main(["report", "--help"]) == 2
    err = capsys.readouterr().err
    assert "caerus report needs matplotlib, from the [report] extra: pip install 'caerus[report]'" in err


def test_session_without_matplotlib_refuses_before_starting(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from caerus.session import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    started = []
    monkeypatch.setattr(app, "run_local_session", lambda opts: started.append(opts))
    args = cli.build_parser(["session"]).parse_args(["session", "--duration", "1", "--out", str(tmp_path)])
    assert app.run(args) == 2 and started == []
    assert "--no-report" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["session", "record"])
def test_a_bad_duration_is_a_usage_error_naming_it(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser([command])
    assert parser.parse_args([command, "--duration", "1h30m"]).duration == 5400.0
    with pytest.raises(SystemExit) as exc:
        parser.parse_args([command, "--duration", "nope"])
    assert exc.value.code == 2
    assert "argument --duration: duration 'nope' is not like 4h, 30m, 90s, 1h30m or 30" in capsys.readouterr().err
