"""tests/peers/ checks the peers themselves (the [peers] extra), so it runs where they are installed:

    .venv-peers/bin/python -m pytest tests/peers -q     (.venv-peers: Python 3.13, locks/peers.txt)

CI installs locks/dev.txt only (the peers need Python 3.13 and are never a runtime or dev dependency), so in any
other environment these modules are not collected, and the run's header and summary say so (never a silent skip);
the harness itself -- the rows, the goals, the timing protocol's rules and its refusal of a compiled-while-timed
sample -- is tested in tests/unit/benchmarks/ everywhere. Here: every peer hands off Caerus's books
(test_peers_agree) and the timing protocol holds against the real hftbacktest (test_timing_protocol).
"""

from __future__ import annotations

import importlib.util

import pytest

PEERS = ("cryptofeed", "nautilus_trader", "picows", "zmq", "hftbacktest", "numba", "uvloop")
MISSING = [m for m in PEERS if importlib.util.find_spec(m) is None]
collect_ignore_glob = ["test_*.py"] if MISSING else []


def pytest_report_header(config: pytest.Config) -> str | None:
    if MISSING:
        return (f"tests/peers: not collected, the [peers] extra is not installed here ({', '.join(MISSING)} missing): "
                ".venv-peers/bin/python -m pytest tests/peers")
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Said again at the end: in a run over all of tests/ this folder's conftest loads after the header."""
    line = pytest_report_header(terminalreporter.config)
    if line:
        terminalreporter.write_line(line)
