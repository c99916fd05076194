"""A live Hyperliquid order transport that connects nowhere, and its replies drained: the execution unit tests
drive its message handler directly (venue answers, order updates, fills) and read what it settled."""

from __future__ import annotations

import secrets
from typing import Any

from caerus.venuekit.credentials import Secret
from caerus.venuekit.order_transport import VenueReply
from caerus.venues.hyperliquid.credentials import HyperliquidCredentials
from caerus.venues.hyperliquid.execution import HyperliquidTransport


def hl_transport(**kw: Any) -> HyperliquidTransport:
    """A testnet transport with live orders enabled, a fresh random key and an unreachable URL (never started)."""
    creds = HyperliquidCredentials(Secret("0x" + secrets.token_hex(32)))
    return HyperliquidTransport(network="testnet", enable_live=True, url="wss://127.0.0.1:9/ws", credentials=creds,
                                **kw)


def drain_replies(transport: Any) -> list[VenueReply]:
    """Every reply the transport holds, oldest first (poll_reply until None)."""
    out = []
    while (r := transport.poll_reply()) is not None:
        out.append(r)
    return out
