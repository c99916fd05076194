"""Extra venue protocols for the emulator: a registry of servers beyond the built-in Binance and Hyperliquid.

The emulator's side of "a venue is one package": a venue that is not built in (a test venue, a new venue being
brought up) registers a :class:`SimProtocol` here, from its own emulator module, and the emulator serves it on an
ephemeral loopback port next to the built-in ones, publishing ``<name>_url`` in its ready info. For
``caerus venue-sim`` as a separate process, name the modules in ``CAERUS_SIM_PLUGINS`` (comma-separated); the
app imports them before starting. This registry is the emulator's own: it never imports the production venue
registry or decoders, so the emulator stays an independent implementation.

A protocol's server gets the emulator's :class:`~caerus.sim.core.config.SharedState` (market snapshot, order desk
books, scenario, counters under its name) and provides ``handler(conn)`` and ``process_request(conn, request)``
as the ``websockets`` server expects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from caerus.plugins import import_plugins
from caerus.sim.core.config import SharedState

PLUGINS_ENV = "CAERUS_SIM_PLUGINS"


@dataclass(frozen=True)
class SimProtocol:
    name: str  # the venue name; the ready info gets ``<name>_url``
    server: Callable[[SharedState], Any]  # -> object with handler(conn) and process_request(conn, request)
    ws_options: Mapping[str, Any] | None = None  # extra websockets serve() options (e.g. ping_interval)


_protocols: dict[str, SimProtocol] = {}


def register(protocol: SimProtocol) -> SimProtocol:
    other = _protocols.get(protocol.name)
    if other is not None and other is not protocol:
        raise ValueError(f"emulator protocol {protocol.name!r} is already registered")
    _protocols[protocol.name] = protocol
    return protocol


def unregister(name: str) -> None:
    _protocols.pop(name, None)


def registered() -> tuple[SimProtocol, ...]:
    return tuple(_protocols.values())


def load_plugins(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Import the modules named in ``CAERUS_SIM_PLUGINS`` (each registers its protocol)."""
    try:
        return import_plugins(PLUGINS_ENV, "emulator protocol", env)
    except ImportError as exc:
        raise ValueError(str(exc)) from None  # the emulator's app reports a bad argument as a ValueError
