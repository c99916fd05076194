"""Durations as every CLI takes them (`caerus session`, `invoke bench` local and --host): "4h", "30m", "90s",
"1h30m" or plain seconds ("30")."""

from __future__ import annotations

import argparse
import re

_UNITS = {"h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; a clear ValueError naming the input otherwise."""
    s = str(text).strip().lower()
    if not s:
        raise ValueError("duration is empty; use e.g. 4h, 30m, 90s or 30")
    try:
        value = float(s)
    except ValueError:
        pos, total = 0, 0.0
        for m in _PART.finditer(s):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos != len(s) or pos == 0:
            raise ValueError(f"duration {text!r} is not like 4h, 30m, 90s, 1h30m or 30") from None
        value = total
    if value <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return value


def duration_arg(text: str) -> float:
    """:func:`parse_duration` as an argparse ``type``: a bad duration is a usage error naming it."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
