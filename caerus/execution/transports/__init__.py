"""Transport selection: builds the execution transport named on the command line.

``null`` and ``paper`` (simulated) live here. Every other name is a venue with live order entry, found through
the venue registry (caerus.venues.registry): its package builds the signed transport. The live stack is imported
only when a live transport is built, so the simulated transports never pay for (or depend on) it. Keep this module
import-light: the paper and null transports import it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from caerus.execution.books import LatestBooks
    from caerus.execution.config import PaperConfig
    from caerus.venuekit.order_transport import ReplyCallback, Transport

SIMULATED = ("null", "paper")


def _live_names() -> tuple[str, ...]:
    from caerus.venues import registry

    return registry.live_names()


LIVE = _live_names()
NAMES = SIMULATED + LIVE


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
    if name in _live_names():
        raise ValueError(f"transport {name!r} is live: use make_live_transport")
    raise ValueError(f"unknown transport {name!r}; choose one of {', '.join(SIMULATED + _live_names())}")


def make_live_transport(name: str, **kwargs: Any) -> Transport:
    """Build the live transport of venue ``name`` (through the venue registry; the live stack loads here)."""
    if name not in _live_names():
        raise ValueError(f"transport {name!r} is not live; live transports: {', '.join(_live_names())}")
    from caerus.execution.transports.live import make_live_transport as build

    return build(name, **kwargs)
