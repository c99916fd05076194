"""The recorded-frames file: raw venue frames with their timing, written by capture replay, played by the emulator.

Format (JSON Lines, one frame per line)::

    {"venue": "<venue name>", "t_ns": <int, ns offset from the recording start>, "frame": "<raw text>"}

Lines are in non-decreasing ``t_ns`` order; ``frame`` is the text frame exactly as the venue sent it. This module
is the one definition of the format and sits below both sides (capture writes it, the emulator reads it), so
neither imports the other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO


def _check_venue(venue: object, venues: Collection[str] | None) -> str | None:
    """An error text when ``venue`` is not acceptable, else None."""
    if venues is not None:
        return None if venue in venues else f"venue must be one of {', '.join(venues)}, got {venue!r}"
    if not isinstance(venue, str) or not venue or not venue.isidentifier():
        return f"venue must be a venue name, got {venue!r}"
    return None


@dataclass(frozen=True, slots=True)
class RecordedFrame:
    venue: str
    t_ns: int
    frame: str


def read_frames(path: str | Path, venues: Collection[str] | None = None) -> list[RecordedFrame]:
    """Load and validate a frames file (only ``venues`` when given); ValueError names the file, line and problem."""
    out: list[RecordedFrame] = []
    last = -1
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{where}: not JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{where}: expected an object with venue, t_ns, frame")
            venue, t_ns, frame = obj.get("venue"), obj.get("t_ns"), obj.get("frame")
            problem = _check_venue(venue, venues)
            if problem:
                raise ValueError(f"{where}: {problem}")
            if not isinstance(t_ns, int) or isinstance(t_ns, bool) or t_ns < 0:
                raise ValueError(f"{where}: t_ns must be a non-negative integer, got {t_ns!r}")
            if t_ns < last:
                raise ValueError(f"{where}: t_ns {t_ns} goes backwards (previous {last})")
            if not isinstance(frame, str):
                raise ValueError(f"{where}: frame must be a string, got {type(frame).__name__}")
            last = t_ns
            out.append(RecordedFrame(str(venue), t_ns, frame))
    if not out:
        raise ValueError(f"{path}: no frames")
    return out


class FrameRecorder:
    """Writes the frames format. ``t_ns`` defaults to time since the first record (monotonic clock)."""

    def __init__(self, path: str | Path) -> None:
        self._f: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._t0: int | None = None
        self.count = 0

    def record(self, venue: str, frame: str | bytes, t_ns: int | None = None) -> None:
        problem = _check_venue(venue, None)
        if problem:
            raise ValueError(problem)
        if t_ns is None:
            now = time.monotonic_ns()
            if self._t0 is None:
                self._t0 = now
            t_ns = now - self._t0
        text = frame if isinstance(frame, str) else frame.decode("utf-8")
        self._f.write(json.dumps({"venue": venue, "t_ns": int(t_ns), "frame": text}, separators=(",", ":")))
        self._f.write("\n")
        self.count += 1

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> FrameRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_frames(path: str | Path, items: Iterable[tuple[str, int, str]]) -> int:
    """Write (venue, t_ns, frame) tuples; returns how many."""
    with FrameRecorder(path) as rec:
        for venue, t_ns, frame in items:
            rec.record(venue, frame, t_ns)
        return rec.count


