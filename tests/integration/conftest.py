"""The servers integration tests of several areas share (docs/testing.md, "Shared servers").

Each is started at most once per test process (an xdist worker or the serial pass), on first use, and handed to
each test with isolation kept: clickhouse-server emptied before each test, sshd with a login key, state folder and
host root of the test's own, the healthy venue emulator read through connections of the test's own. A test that
crashes, restarts or faults a server, or needs one in a state of its own, starts its own and says why. The other
fixtures of an area live in its folder's conftest.py.
"""

from tests.fixtures.capture_clickhouse import _clickhouse_process, clickhouse_server, own_clickhouse_server  # noqa: F401
from tests.fixtures.feed_servers import silent_tcp_listener, tls_ws_server  # noqa: F401
from tests.fixtures.infra_sshd import _sshd_process, infra_test_host, own_infra_test_host, sshd_server  # noqa: F401
from tests.fixtures.venue_sim import _venue_sim_process, shared_venue_sim, venue_sim, venue_sim_factory  # noqa: F401
