"""What every venue module shares about frames: the kind of a non-data frame, and decimal text for encoding."""

from __future__ import annotations

from enum import IntEnum

import numpy as np


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
