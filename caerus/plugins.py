"""Plugin modules named in an environment variable: the one loader the venue registry and the emulator's protocol
registry share (``CAERUS_VENUE_PLUGINS``, ``CAERUS_SIM_PLUGINS``). Importing a plugin module registers what it
brings; this module only imports them. Outside the layers: it imports nothing of caerus."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping


def import_plugins(env_name: str, what: str, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Import each module named (comma-separated) in ``env_name`` of ``env`` (default: the process environment);
    returns their names. A module that cannot be imported raises ImportError naming the variable, ``what`` it was
    meant to be and the module."""
    raw = (os.environ if env is None else env).get(env_name, "")
    mods = tuple(m.strip() for m in raw.split(",") if m.strip())
    for mod in mods:
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise ImportError(f"{env_name}: cannot import {what} {mod!r}: {exc}") from exc
    return mods
