"""The venue registry: a venue name or wire code -> its :class:`~caerus.venuekit.spec.VenueSpec`.

Built-in venues are one line each in :data:`BUILTIN` (wire code -> the package whose ``SPEC`` describes it); the
package is imported the first time the venue is looked up, so a process loads only the venues it uses. Other
venues (a test venue, a plugin) are added with :func:`register`, or, for a separate process such as
``caerus feed --venue NAME``, by naming modules in ``CAERUS_VENUE_PLUGINS`` (comma-separated): each is imported by
:func:`load_plugins` (the CLI calls it before parsing) and registers its venue when imported.

Only process entry points import this module (the apps, the CLI, the session): they hand the venues down to the
generic code, which takes a :class:`~caerus.venuekit.spec.VenueCatalog` (this module is one) or a
:class:`~caerus.venuekit.spec.VenueSpec` (.importlinter's venues-handed-down contract).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from caerus.plugins import import_plugins
from caerus.venuekit.spec import VENUE_PLUGINS_ENV, UnknownVenue, VenueSpec
from caerus.wire import Venue

#: wire code -> the package holding the venue's SPEC. Adding a built-in venue: one line here (and its package).
BUILTIN: dict[Venue, str] = {
    Venue.BINANCE: "caerus.venues.binance",
    Venue.HYPERLIQUID: "caerus.venues.hyperliquid",
}
PLUGINS_ENV = VENUE_PLUGINS_ENV
__all__ = ["BUILTIN", "PLUGINS_ENV", "UnknownVenue", "by_code", "get", "live_names", "load_plugins", "names",
           "register", "unregister"]

_by_name: dict[str, VenueSpec] = {}
_by_code: dict[int, VenueSpec] = {}


def register(spec: VenueSpec, *, replace: bool = False) -> VenueSpec:
    """Add a venue; ValueError when its name or code is already taken by another (unless ``replace``)."""
    if not replace:
        for other in (_by_name.get(spec.name), _by_code.get(spec.code)):
            if other is not None and other is not spec:
                raise ValueError(f"venue {spec.name!r} (code {spec.code}) clashes with registered venue "
                                 f"{other.name!r} (code {other.code})")
        builtin = _builtin_code(spec.name)
        if builtin is not None and builtin != spec.code:
            raise ValueError(f"venue name {spec.name!r} is the built-in venue with code {builtin}")
    _by_name[spec.name] = spec
    _by_code[spec.code] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a registered venue (tests)."""
    spec = _by_name.pop(name, None)
    if spec is not None and _by_code.get(spec.code) is spec:
        del _by_code[spec.code]


def _builtin_code(name: str) -> Venue | None:
    for code in BUILTIN:
        if code.name.lower() == name:
            return code
    return None


def _load_builtin(code: Venue) -> VenueSpec:
    spec = importlib.import_module(BUILTIN[code]).SPEC
    if not isinstance(spec, VenueSpec) or spec.code != int(code) or spec.name != code.name.lower():
        raise RuntimeError(f"{BUILTIN[code]}.SPEC does not describe venue {code.name.lower()} (code {int(code)})")
    _by_name.setdefault(spec.name, spec)
    _by_code.setdefault(spec.code, spec)
    return spec


def get(name: str) -> VenueSpec:
    """The venue called ``name``; UnknownVenue listing the known names otherwise."""
    spec = _by_name.get(name)
    if spec is not None:
        return spec
    code = _builtin_code(name)
    if code is None:
        raise UnknownVenue(f"unknown venue {name!r}; known: {', '.join(names())}")
    return _load_builtin(code)


def by_code(code: int) -> VenueSpec:
    """The venue with wire code ``code``; UnknownVenue otherwise."""
    spec = _by_code.get(code)
    if spec is not None:
        return spec
    try:
        return _load_builtin(Venue(code))
    except (ValueError, KeyError):
        raise UnknownVenue(f"no venue has wire code {code}; known: {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    """Built-in venue names (in wire-code order), then registered ones (without importing any package)."""
    builtin = [c.name.lower() for c in BUILTIN]
    return tuple(builtin + sorted(n for n in _by_name if n not in builtin))


def live_names() -> tuple[str, ...]:
    """Venues with live order entry (imports each venue's spec, which is light)."""
    return tuple(n for n in names() if get(n).order_entry is not None)


def load_plugins(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Import the modules named in ``CAERUS_VENUE_PLUGINS`` (each registers its venue); returns their names."""
    return import_plugins(PLUGINS_ENV, "venue plugin", env)
