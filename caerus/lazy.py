"""Names a package hands on but loads at first use (PEP 562 module ``__getattr__``): one definition for the packages
whose heavy parts (pandas, chDB) must not load in processes that never touch them. Outside the layers: it imports
nothing of caerus."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: name -> the relative module (``where``) it is imported from on first
    use, then kept in the package's namespace; AttributeError for any other name."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
