"""Transport selection: builds the execution transport the app chose.

``null`` and ``paper`` (simulated) live here. A live transport is a venue with live order entry: the execution app
looks the venue up in the venue registry and hands its spec down here (nothing in this package looks a venue up);
the venue's package builds the signed transport. The live stack is imported only when a live transport is built,
so the simulated transports never pay for (or depend on) it. Keep this module import-light: the paper and null
transports import it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from caerus.execution.books import LatestBooks
    from caerus.execution.config import PaperConfig
    from caerus.venuekit.order_transport import ReplyCallback, Transport
    from caerus.venuekit.spec import VenueSpec

SIMULATED = ("null", "paper")


class TransportUnavailable(RuntimeError):
    """The named transport cannot be built in this installation (e.g. a venue without live order entry)."""


def make_transport(
    name: str,
    *,
    books: LatestBooks,
    paper: PaperConfig,
    on_reply: ReplyCallback,
) -> Transport:
    """Build a simulated transport (``null`` | ``paper``)."""
    if name == "null":
        from caerus.execution.transports.null import NullTransport

        return NullTransport()
    if name == "paper":
        from caerus.execution.transports.paper import PaperTransport

        return PaperTransport(paper, books, on_reply)
    raise ValueError(f"unknown transport {name!r}; the simulated ones are {', '.join(SIMULATED)} (a live one is "
                     "built from its venue's spec: make_live_transport)")


def make_live_transport(venue: VenueSpec, **kwargs: Any) -> Transport:
    """Build the live transport of ``venue`` (the spec the app handed down; the live stack loads here)."""
    if venue.order_entry is None:
        raise ValueError(f"transport {venue.name!r} is not live: the venue has no order entry")
    from caerus.execution.transports.live import make_live_transport as build

    return build(venue, **kwargs)
