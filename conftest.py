"""Root pytest configuration: registers every fixture module under tests/fixtures/ as a plugin, marks tests by need.

Fixture modules start real servers (TLS WebSocket emulator, sshd, moto, kcat mock cluster, clickhouse-server,
chronyd) and stop them by PID; a fixture that cannot start its server fails the test loudly, never skips.
"""

from pathlib import Path

import pytest

# `common` first: the other fixture modules import it, and a module imported before pytest registers it as a
# plugin cannot have its asserts rewritten.
pytest_plugins = ["tests.fixtures.common"] + sorted(
    f"tests.fixtures.{p.stem}"
    for p in (Path(__file__).parent / "tests" / "fixtures").glob("*.py")
    if not p.stem.startswith("_") and p.stem != "common"
)


_INTEGRATION = Path(__file__).parent / "tests" / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration/ carries the ``integration`` marker (it owns the servers it talks to);
    everything else is a unit test (in-process, enforced by tests/unit/conftest.py)."""
    for item in items:
        if _INTEGRATION in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)
