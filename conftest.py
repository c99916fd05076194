"""Root pytest configuration: registers every fixture module under tests/fixtures/ as a plugin.

Fixture modules start real servers (TLS WebSocket emulator, sshd, moto, kcat mock cluster, clickhouse-server,
chronyd) and stop them by PID; a fixture that cannot start its server fails the test loudly, never skips.
"""

from pathlib import Path

# `common` first: the other fixture modules import it, and a module imported before pytest registers it as a
# plugin cannot have its asserts rewritten.
pytest_plugins = ["tests.fixtures.common"] + sorted(
    f"tests.fixtures.{p.stem}"
    for p in (Path(__file__).parent / "tests" / "fixtures").glob("*.py")
    if not p.stem.startswith("_") and p.stem != "common"
)
