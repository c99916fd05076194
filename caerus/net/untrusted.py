"""Decoding bytes a venue sent without trusting their shape: bounded nesting before any recursive decoder runs.

Why: importing the signing stack (eth-account -> py_ecc) raises ``sys.setrecursionlimit`` to 100000, after which a
recursive JSON decoder (``json.loads`` and msgspec alike) fed a 1 MiB ``[[[[...`` frame overflows the C stack of
its thread and the process dies with SIGSEGV; without that import the same frame raises RecursionError. Either way
one frame could end a reader. So every untyped decode of venue bytes goes through :func:`decode_untrusted`, which
measures the nesting depth first (bracket counts, then a vectorised scan outside strings) and refuses anything
deeper than ``max_depth`` with a ``msgspec.DecodeError`` (the error callers already count as malformed).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

MAX_DEPTH = 64  # venue replies nest ~5 levels; 64 is far above anything legitimate and far below any stack limit

_ANY = msgspec.json.Decoder()
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))


def nesting_depth(data: bytes) -> int:
    """The deepest bracket nesting of ``data`` outside JSON strings (an upper bound for malformed input)."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:  # the usual case: too few brackets to be deep
        return data.count(b"[") + data.count(b"{")
    arr = np.frombuffer(_STRINGS.sub(b"", data), dtype=np.uint8)
    step = ((arr == _OPEN[0]) | (arr == _OPEN[1])).astype(np.int32)
    step -= ((arr == _CLOSE[0]) | (arr == _CLOSE[1])).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def decode_untrusted(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """JSON ``data`` as Python objects; ``msgspec.DecodeError`` when it is malformed or nested beyond ``max_depth``."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise msgspec.DecodeError(f"JSON nested {depth} levels deep (limit {max_depth})")
    return _ANY.decode(raw)
