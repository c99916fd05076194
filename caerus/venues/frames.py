"""What kind of frame a venue sent when it is not a market-data message (shared by every venue module)."""

from __future__ import annotations

from enum import IntEnum


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
