"""Root pytest configuration: registers every fixture module under tests/fixtures/ as a plugin.

Fixture modules start real servers (TLS WebSocket emulator, sshd, moto, kcat mock cluster, clickhouse-server,
chronyd) and stop them by PID; a fixture that cannot start its server fails the test loudly, never skips.
"""

from pathlib import Path

pytest_plugins = sorted(
    f"tests.fixtures.{p.stem}"
    for p in (Path(__file__).parent / "tests" / "fixtures").glob("*.py")
    if not p.stem.startswith("_")
)
