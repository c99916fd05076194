"""Many order-entry connects in a row over real TLS on loopback: not one may lose its WebSocket upgrade.

The websockets sync client reads on its own thread while the caller writes, on one SSL object. Over TLS 1.3 the
server's post-handshake messages (session tickets right after the handshake, key updates later) are processed by
the reading thread while the writing thread sends the upgrade request (or an order): about 1 connect in 200 lost
its upgrade request that way (the handshake then stalls). The order connection therefore speaks TLS 1.2, which has
no post-handshake messages (and renegotiation is refused).
"""

from __future__ import annotations

import ssl

import pytest

from caerus.execution.credentials import load_credentials
from caerus.execution.transports.live import make_live_transport
from caerus.venuekit.order_session import LiveTransportError, ssl_context
from caerus.venues import registry
from tests.fixtures.transports_orders import OrderServer

pytestmark = pytest.mark.integration

CONNECTS = 300


@pytest.mark.parametrize("venue", ["binance", "hyperliquid"])
def test_repeated_connects_never_lose_the_upgrade(order_server: OrderServer, venue: str) -> None:
    url = order_server.binance_url if venue == "binance" else order_server.hyperliquid_url
    creds = load_credentials(registry.get(venue), order_server.creds_file)
    failures: list[str] = []
    for _ in range(CONNECTS):
        t = make_live_transport(registry.get(venue), network="testnet", credentials=creds, enable_live=True, url=url,
                                ca_file=order_server.ca_file)
        t._session._open_timeout = 2.0  # a lost upgrade shows as a handshake timeout: keep each one short
        try:
            t.start()
        except LiveTransportError as exc:
            failures.append(str(exc))
        finally:
            t.close()
    assert failures == [], f"{len(failures)} of {CONNECTS} connects failed: {failures[:3]}"


def test_the_order_connection_context_speaks_tls_1_2_without_renegotiation(order_server: OrderServer) -> None:
    ctx = ssl_context(order_server.binance_url, order_server.ca_file)
    assert ctx is not None and ctx.maximum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.options & ssl.OP_NO_RENEGOTIATION and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
