"""Live order entry for one venue: the execution process's side of the venue seam.

The caller hands the venue's :class:`~caerus.venuekit.spec.VenueSpec` down (the execution app resolves it from the
venue registry; nothing here looks a venue up by name); its :class:`~caerus.venuekit.spec.OrderEntrySpec` says where
order entry lives, and the venue's package builds the signed transport on the shared base
(caerus.venuekit.order_session).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from caerus.venuekit.order_session import LiveConfigError, check_live_guard
from caerus.venuekit.order_session import resolve_url as resolve_order_url
from caerus.venuekit.order_transport import ReplyCallback

if TYPE_CHECKING:
    from caerus.venuekit.spec import OrderEntrySpec, VenueSpec


def _order_entry(venue: VenueSpec) -> OrderEntrySpec:
    if venue.order_entry is None:
        raise LiveConfigError(f"unknown live transport {venue.name!r}: the venue has no live order entry")
    return venue.order_entry


def resolve_url(venue: VenueSpec, network: str, url: str | None, *, allow_custom_mainnet_url: bool = False) -> str:
    """The order-entry URL of ``venue`` on ``network``, or the override (see
    :func:`caerus.venuekit.order_session.resolve_url`)."""
    entry = _order_entry(venue)
    return resolve_order_url(venue.name, network, url, urls=entry.urls, path=entry.path,
                             allow_custom_mainnet_url=allow_custom_mainnet_url)


def make_live_transport(venue: VenueSpec, *, network: str | None, credentials: Any = None, enable_live: bool = False,
                        url: str | None = None, ca_file: str | None = None,
                        on_reply: ReplyCallback | None = None, **options: Any) -> Any:
    """Build (not start) the live transport of ``venue``; refuses unless ``enable_live=True`` and the network is
    named. ``credentials``: the venue's credentials object, a path to a 0600 credentials file, or None for the
    environment (caerus.execution.credentials). ``url`` overrides the network's URL (the emulator); ``options`` go
    to the transport (e.g. symbol, price_decimals, sz_decimals)."""
    entry = _order_entry(venue)
    check_live_guard(venue.name, enable_live=enable_live, network=network)
    if credentials is None or isinstance(credentials, str | os.PathLike):
        from caerus.execution.credentials import load_credentials

        credentials = load_credentials(venue, None if credentials is None else os.fspath(credentials))
    return entry.transport(network=network, credentials=credentials, enable_live=enable_live, url=url,
                           ca_file=ca_file, on_reply=on_reply, **options)
