"""Splitting a chunk of ``<receive ns> <frame>`` lines without a Python object per field: numpy finds the line ends
and reads every 19-digit receive stamp at once; each frame is then a zero-copy memoryview slice for the decoder.

What this skips (measured here, per frame): ``bytes.split`` ~0.28 us, ``partition`` ~0.57 us and ``int()`` ~0.12 us,
for ~0.22 us of numpy. A chunk with any line not of that shape (another stamp width, a stray line) is left to the
per-line path, which reads every line the slow, general way.
"""

from __future__ import annotations

import numpy as np

STAMP_DIGITS = 19  # ns since the epoch from 2001-09-09 to 2286-11-20
_POWERS = 10 ** np.arange(STAMP_DIGITS - 1, -1, -1, dtype=np.int64)


def stamped(text: bytes) -> tuple[memoryview, list[int], list[int], list[int]] | None:
    """(view, frame starts, frame ends, receive stamps) of every non-empty line, or None when a line is not
    ``<19 digits> <frame>`` (the caller then reads the chunk line by line)."""
    a = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    if len(a) and a[-1] != 10:
        ends = np.append(ends, len(a))
    starts = np.empty_like(ends)
    if len(ends):
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    keep = ends > starts  # empty lines are nothing
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return memoryview(text), [], [], []
    if np.any(ends - starts <= STAMP_DIGITS + 1):
        return None
    digits = a[starts[:, None] + np.arange(STAMP_DIGITS)]
    if not (np.all((digits >= 48) & (digits <= 57)) and np.all(a[starts + STAMP_DIGITS] == 32)):
        return None
    ts = (digits.astype(np.int64) - 48) @ _POWERS
    return memoryview(text), (starts + STAMP_DIGITS + 1).tolist(), ends.tolist(), ts.tolist()
