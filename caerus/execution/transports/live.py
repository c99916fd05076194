"""Live order entry by venue name: the execution process's side of the venue seam.

The venue registry (caerus.venues.registry) says which venues have live order entry and hands over each one's
:class:`~caerus.venuekit.spec.OrderEntrySpec`; the venue's package builds the signed transport on the shared base
(caerus.venuekit.order_session). Nothing below this module looks a venue up by name.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from caerus.venuekit.order_session import LiveConfigError, check_live_guard
from caerus.venuekit.order_session import resolve_url as resolve_order_url
from caerus.venuekit.order_transport import ReplyCallback
from caerus.venues import registry

if TYPE_CHECKING:
    from caerus.venuekit.spec import OrderEntrySpec


def _order_entry(venue: str) -> OrderEntrySpec:
    try:
        entry = registry.get(venue).order_entry
    except registry.UnknownVenue:
        entry = None
    if entry is None:
        raise LiveConfigError(f"unknown live transport {venue!r}; expected one of {list(registry.live_names())}")
    return entry


def resolve_url(venue: str, network: str, url: str | None, *, allow_custom_mainnet_url: bool = False) -> str:
    """The order-entry URL of venue ``venue`` on ``network``, or the override (see
    :func:`caerus.venuekit.order_session.resolve_url`)."""
    entry = _order_entry(venue)
    return resolve_order_url(venue, network, url, urls=entry.urls, path=entry.path,
                             allow_custom_mainnet_url=allow_custom_mainnet_url)


def make_live_transport(name: str, *, network: str | None, credentials: Any = None, enable_live: bool = False,
                        url: str | None = None, ca_file: str | None = None,
                        on_reply: ReplyCallback | None = None, **options: Any) -> Any:
    """Build (not start) the live transport of venue ``name`` (from the venue registry); refuses unless
    ``enable_live=True`` and the network is named. ``credentials``: the venue's credentials object, a path to a
    0600 credentials file, or None for the environment (caerus.execution.credentials). ``url`` overrides the
    network's URL (the emulator); ``options`` go to the transport (e.g. symbol, price_decimals, sz_decimals)."""
    entry = _order_entry(name)
    check_live_guard(name, enable_live=enable_live, network=network)
    if credentials is None or isinstance(credentials, str | os.PathLike):
        from caerus.execution.credentials import load_credentials

        credentials = load_credentials(name, None if credentials is None else os.fspath(credentials))
    return entry.transport(network=network, credentials=credentials, enable_live=enable_live, url=url,
                           ca_file=ca_file, on_reply=on_reply, **options)
