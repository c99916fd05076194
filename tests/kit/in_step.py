"""Deliberate copies kept in step: the code block two hot-path copies share, read from their source.

A hot loop sometimes inlines what a helper elsewhere also does (a call costs more than the work). Each such copy
says so in a comment naming its keep-in-step test; the test compares the copies with :func:`block` and fails
when one is edited without the other."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Mapping
from typing import Any


def block(obj: Any, first: str, last: str, rename: Mapping[str, str] | None = None) -> list[str]:
    """The lines of ``obj``'s source from the first line containing ``first`` to the next containing ``last``
    (both included), stripped, with blank and comment-only lines and trailing comments left out, and each
    ``rename`` key replaced by its value (a local alias one copy binds for speed). Raises when a marker is not
    found, so a moved block fails its test instead of comparing nothing."""
    lines = textwrap.dedent(inspect.getsource(obj)).splitlines()
    start = next((i for i, s in enumerate(lines) if first in s), None)
    if start is None:
        raise AssertionError(f"{obj.__qualname__}: no line contains {first!r}")
    end = next((i for i in range(start, len(lines)) if last in lines[i]), None)
    if end is None:
        raise AssertionError(f"{obj.__qualname__}: no line after {first!r} contains {last!r}")
    out = []
    for raw in lines[start:end + 1]:
        s = raw.split("  #", 1)[0].strip()
        if not s or s.startswith("#"):
            continue
        for old, new in (rename or {}).items():
            s = s.replace(old, new)
        out.append(s)
    return out
