"""The busy-poll client delivers a message exactly as the asyncio client does: BusyWsSession._deliver_events
inlines WsSession._receive's delivery step (a call per message would cost the hot path), so the two copies are
compared here line for line and this test fails when one is edited without the other."""

from __future__ import annotations

from caerus.net.busy import BusyWsSession
from caerus.net.ws import WsSession
from tests.kit.in_step import block


def test_busy_delivery_is_the_asyncio_clients() -> None:
    # from the message count to the error handler; _receive binds on_error to a local, _deliver_events reads it
    first, last = "self.msg_count += 1", "on_error(raw, self, exc)"
    asyncio_copy = block(WsSession._receive, first, last)
    assert len(asyncio_copy) == 11
    assert block(BusyWsSession._deliver_events, first, last, {"self.on_error": "on_error"}) == asyncio_copy
