"""Root pytest configuration: the markers every test gets, and the one fixture module every area uses.

Fixture modules under tests/fixtures/ start real servers (TLS WebSocket servers, the venue emulator, sshd, moto,
the kcat mock cluster, clickhouse-server, chronyd) and stop them by PID; a fixture that cannot start its server
fails the test loudly, never skips. They are loaded where they are used: tests/integration/conftest.py imports the
shared servers, each folder's conftest.py the fixtures of its area. Only ``tests.fixtures.common`` (free ports,
``shm_dir``, started processes) is a plugin for every test. docs/testing.md has the layout and the tiers.

Markers (registered in pyproject.toml):

- ``unit`` / ``integration``: by folder, added here (tests/integration/ owns the servers it talks to; tests/unit/
  is in-process only, enforced by tests/unit/conftest.py).
- ``slow``: what the fast tier (``invoke test --fast``) leaves out: every integration test (added here) and the
  unit tests marked so in their module (long computations).
- ``serial(reason)``: tests that must not share the machine (they pin CPUs, measure, or need fixed ports):
  ``invoke test`` runs them in a second, serial pass after the parallel one. The reason is required.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Fixture modules are imported by folder conftests rather than registered as plugins: registering the package for
# assert rewriting keeps pytest's assertion messages in their helpers. It must happen before any of them is imported.
pytest.register_assert_rewrite("tests.fixtures")

pytest_plugins = ["tests.fixtures.common"]

_INTEGRATION = Path(__file__).parent / "tests" / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration/ carries ``integration`` and ``slow``; everything else ``unit``. A
    ``serial`` marker must say why."""
    for item in items:
        if _INTEGRATION in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        else:
            item.add_marker(pytest.mark.unit)
        for mark in item.iter_markers("serial"):
            if not (mark.args and isinstance(mark.args[0], str) and mark.args[0].strip()):
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs a reason, e.g. "
                                        "serial('pins CPUs: a whole-fleet session')")


@pytest.fixture(autouse=True)
def _private_shm_dir(shm_dir: Path) -> Path:
    """Every test gets a CAERUS_SHM_DIR of its own (tests.fixtures.common.shm_dir): the ring and counter names
    tests reuse (``it.book.binance``, ``gone.stats.capture``) cannot meet across parallel test processes."""
    return shm_dir
