"""What every venue module shares about frames: the kind of a non-data frame, the bounded integer types of the
typed decoders, and decimal text for encoding."""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated

import msgspec
import numpy as np

_INT64_MAX = (1 << 63) - 1
#: A venue's millisecond time that still fits the records' signed 64-bit nanoseconds after scaling (ms -> ns):
#: anything larger, or negative, fails the typed decode (a MALFORMED reject) instead of failing the ring write.
EpochMs = Annotated[int, msgspec.Meta(ge=0, le=_INT64_MAX // 1_000_000)]
#: A venue's sequence number (Binance ``u``) that fits the records' signed 64-bit ``seq``.
SeqId = Annotated[int, msgspec.Meta(ge=0, le=_INT64_MAX)]


class FrameKind(IntEnum):
    DATA = 0  # a market-data message (decoded on the hot path, never through classify)
    ACK = 1  # subscription acknowledged (Binance {"result":null,"id":N}, Hyperliquid subscriptionResponse)
    SUB_ERROR = 2  # the venue refused our subscription (ends the connection: SUBSCRIPTION_REJECTED)
    VENUE_ERROR = 3  # any other error frame from the venue (counted, connection kept)
    PONG = 4  # answer to our application ping
    GREETING = 5  # Hyperliquid's non-JSON "Websocket connection established." text
    MALFORMED_DATA = 6  # looks like a data message but a field is missing or not a number (a MALFORMED reject)
    MALFORMED = 7  # not JSON at all (dropped, counted)
    UNKNOWN = 8  # valid JSON of a shape we do not know (dropped, counted)


def decimal_text(x: float) -> str:
    """Positional decimal text, never scientific notation (what the venues send)."""
    return np.format_float_positional(x, trim="0")
