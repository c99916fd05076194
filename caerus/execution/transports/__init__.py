"""Transport registry: builds the execution transport named on the command line.

``null`` and ``paper`` live here. ``binance`` / ``hyperliquid`` (signed live order entry) are owned by another
module; they are imported lazily so the simulated transports never pay for (or depend on) the live stack, and a
missing live implementation is a clear start-up error rather than an import crash. Keep this module import-light:
the live transport modules import ``caerus.execution.transports.base``, which runs this file first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from caerus.execution.books import LatestBooks
    from caerus.execution.config import PaperConfig
    from caerus.execution.transports.base import ReplyCallback, Transport

SIMULATED = ("null", "paper")
LIVE = ("binance", "hyperliquid")
NAMES = SIMULATED + LIVE

# Where the live factory `make_live_transport(name, *, network, credentials, url=None, ca_file=None, ...)` may
# live, first match wins.
_LIVE_FACTORY_MODULES = (
    "caerus.execution.transports.live",
    "caerus.execution.live",
)


class TransportUnavailable(RuntimeError):
    """The named transport cannot be built in this installation (e.g. live order entry not present)."""


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
    if name in LIVE:
        raise ValueError(f"transport {name!r} is live: use make_live_transport")
    raise ValueError(f"unknown transport {name!r}; choose one of {', '.join(NAMES)}")


def live_factory() -> Any:
    """The live transport factory, or TransportUnavailable naming where it was looked for."""
    errors = []
    for module in _LIVE_FACTORY_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                errors.append(f"{module}: not present")
                continue
            raise
        factory = getattr(mod, "make_live_transport", None)
        if factory is not None:
            return factory
        errors.append(f"{module}: has no make_live_transport")
    raise TransportUnavailable("live order entry is not available in this installation (" + "; ".join(errors) + ")")


def make_live_transport(name: str, **kwargs: Any) -> Transport:
    """Build a live transport through the live factory (lazily imported)."""
    if name not in LIVE:
        raise ValueError(f"transport {name!r} is not live; live transports: {', '.join(LIVE)}")
    return live_factory()(name, **kwargs)
