"""The null transport: ``send_msg`` returns at once (the benchmark seam where the measured interval ends, as in
the reference system). Every order is reported SENT; nothing ever replies."""

from __future__ import annotations

import time

from caerus.venuekit.order_transport import SendResult
from caerus.wire import Outcome


class NullTransport:
    name = "null"
    replies = False  # never delivers a VenueReply: the engine keeps no pending state for it

    def __init__(self) -> None:
        self._sent = SendResult(Outcome.SENT)  # one preallocated result: nothing per order
        self.sent = 0

    def start(self) -> None:
        pass

    def send_msg(self, order: tuple) -> SendResult:
        self.sent += 1
        return self._sent

    def close(self) -> None:
        pass

    def summary(self) -> dict[str, object]:
        return {"transport": self.name, "sent": self.sent, "t_ns": time.time_ns()}
