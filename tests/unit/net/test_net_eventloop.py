"""Wait policies as event loops: the busy-polling selector never blocks, and asyncio still works on top of it."""

from __future__ import annotations

import asyncio
import socket

import pytest

from caerus.net import eventloop


@pytest.mark.parametrize("policy", ["spin", "hybrid", "sleep"])
def test_loops_deliver_socket_data_and_timers(policy: str) -> None:
    loop = eventloop.new_event_loop(policy)
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    got: list[bytes] = []

    async def main() -> None:
        reader, writer = await asyncio.open_connection(sock=a)
        await asyncio.sleep(0.05)  # a timer on a loop whose select() never waits
        b.send(b"hello\n")
        got.append(await asyncio.wait_for(reader.readline(), 5))
        writer.close()

    try:
        loop.run_until_complete(main())
        polls = getattr(loop._selector, "polls", None)  # type: ignore[attr-defined]
    finally:
        loop.close()
        b.close()
    assert got == [b"hello\n"]
    if policy == "sleep":
        assert polls is None  # the standard selector
    else:
        assert polls is not None and polls > 100  # it spun through the 50 ms sleep instead of blocking


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="wait policy"):
        eventloop.new_event_loop("yield")
