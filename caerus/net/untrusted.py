"""Decoding bytes a venue sent without trusting their shape: bounded nesting, in linear time, before any recursive
decoder runs.

Why: importing the signing stack (eth-account -> py_ecc) raises ``sys.setrecursionlimit`` to 100000, after which a
recursive JSON decoder (``json.loads`` and msgspec alike) fed a 1 MiB ``[[[[...`` frame overflows the C stack of
its thread and the process dies with SIGSEGV; without that import the same frame raises RecursionError. Either way
one frame could end a reader. So every untyped decode of venue bytes goes through :func:`decode_untrusted`, which
measures the nesting depth first (bracket counts, then a vectorised scan outside strings) and refuses anything
deeper than ``max_depth`` with a ``msgspec.DecodeError`` (the error callers already count as malformed).

The scan must itself be safe against the venue: it is linear in the frame's length whatever the bytes are. (It
used to strip strings with the regex ``"(?:[^"\\]|\\.)*"``, which backtracks quadratically on an unterminated run
of ``\"``: a 40 KB frame took 4 s holding the GIL, a 1 MiB one would have frozen the process for most of an hour.)
Strings are found without backtracking: a quote is a real string delimiter when the run of backslashes right
before it is even, and a byte is inside a string when an odd number of real delimiters precede it. For valid
JSON this is exact; for malformed input it agrees with any left-to-right decoder up to the first byte that
decoder rejects, so the depth it reports is never below what the decoder reaches before it gives up.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

MAX_DEPTH = 64  # venue replies nest ~5 levels; 64 is far above anything legitimate and far below any stack limit

_ANY = msgspec.json.Decoder()
_QUOTE = ord('"')
_BACKSLASH = ord("\\")
_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))


def string_mask(arr: np.ndarray) -> np.ndarray:
    """For the bytes ``arr`` (uint8) of a JSON text, True where a byte lies inside a string or is a delimiter.

    Linear time and memory, no backtracking: ``O(len(arr))`` numpy passes whatever the bytes are.
    """
    n = arr.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    idx = np.arange(n, dtype=np.int64)
    # index of the last byte at or before i that is not a backslash (-1 when there is none)
    last_plain = np.maximum.accumulate(np.where(arr == _BACKSLASH, -1, idx))
    # how many backslashes stand right before i
    run_before = np.zeros(n, dtype=np.int64)
    run_before[1:] = idx[:-1] - last_plain[:-1]
    delimiter = (arr == _QUOTE) & (run_before % 2 == 0)
    inside = (np.cumsum(delimiter) % 2).astype(bool)  # an opening quote and what follows, up to its closing quote
    return inside | delimiter


def nesting_depth(data: bytes) -> int:
    """The deepest bracket nesting of ``data`` outside JSON strings (an upper bound for malformed input)."""
    brackets = data.count(b"[") + data.count(b"{")
    if brackets <= MAX_DEPTH:  # the usual case: too few brackets to be deep
        return brackets
    arr = np.frombuffer(data, dtype=np.uint8)
    outside = ~string_mask(arr)
    step = (((arr == _OPEN[0]) | (arr == _OPEN[1])) & outside).astype(np.int32)
    step -= (((arr == _CLOSE[0]) | (arr == _CLOSE[1])) & outside).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def decode_untrusted(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """JSON ``data`` as Python objects; ``msgspec.DecodeError`` when it is malformed or nested beyond ``max_depth``."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise msgspec.DecodeError(f"JSON nested {depth} levels deep (limit {max_depth})")
    return _ANY.decode(raw)
