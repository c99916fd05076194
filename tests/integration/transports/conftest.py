"""The order-entry test server of the live transports (the shared emulator and TLS servers come from
tests/integration/conftest.py)."""

from tests.fixtures.transports_orders import order_server, stalled_handshake_server  # noqa: F401
