"""``flatten_on_halt`` is validated at start: on a transport with no venue position (paper, null) the execution
process refuses to start (exit 2), naming the option, instead of silently never flattening."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from caerus.execution import app


def _run(tmp_path: Path, transport: str, text: str) -> int:
    cfg = tmp_path / "execution.toml"
    cfg.write_text(text)
    parser = argparse.ArgumentParser()
    app.add_arguments(parser)
    return app.run(parser.parse_args(["--segment", "fc.orders", "--transport", transport, "--config", str(cfg)]))


@pytest.mark.parametrize("transport", ["paper", "null"])
def test_flatten_on_halt_without_a_live_transport_is_refused(tmp_path: Path, transport: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, transport, "flatten_on_halt = true\n[risk]\nrequire_book = false\n") == 2
    err = capsys.readouterr().err
    assert f"flatten_on_halt is true but --transport {transport} is not a live transport" in err
    assert err.count("\n") == 1


def test_flatten_on_halt_must_be_a_boolean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "paper", 'flatten_on_halt = "yes"\n') == 2
    assert "flatten_on_halt" in capsys.readouterr().err
