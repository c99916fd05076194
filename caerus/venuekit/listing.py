"""What every venue's instrument-listing reader shares (Binance ``exchangeInfo``, Hyperliquid ``meta``): the one
error a listing raises when it is not what the venue documents, so the session catches one type for every venue."""

from __future__ import annotations


class ListingError(ValueError):
    """A venue's listing is not what the venue documents; the message names the instrument and the field."""
