"""Stored baselines: per-machine files of ratios to in-run references, the second regression signal.

``benchmarks/baselines/<machine-key>.json``; the key is ``slug(cpu model)-<cores>c-slug(kernel release)``
(e.g. ``amd-epyc-2c-6.18.44-fc-v1098``), because those three decide what a number means on a machine; a
different instance type, core count or kernel starts a new file instead of being compared against the wrong
one. Values are never raw nanoseconds: each percentile is divided by an in-run reference (the member's own
reference metric, else the calibration loop), and benchmark ratios are stored as they are, so a uniformly faster
or slower machine does not trip the check. A file keeps one section per mode (``quick`` / ``full``): quick runs
take fewer samples per repetition, so their p99s are not comparable with full runs.
"""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

import msgspec

SCHEMA = 1


class BaselineError(ValueError):
    """A baseline file exists but cannot be read (reported with its path; never silently ignored)."""


class MachineIdentity(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    cpu: str
    cores: int
    kernel: str
    arch: str = ""


class BaselineMetric(msgspec.Struct, forbid_unknown_fields=True):
    direction: str
    samples: list[float]  # normalized values, one per repetition
    median: float


class BaselineMode(msgspec.Struct, forbid_unknown_fields=True):
    created: str  # ISO-8601 UTC
    revision: str | None
    dirty: bool | None
    repetitions: int
    references: dict[str, str]  # member -> what its percentiles were divided by
    metrics: dict[str, BaselineMetric]


class BaselineFile(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    machine: MachineIdentity
    modes: dict[str, BaselineMode]
    schema: int = SCHEMA


def _cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith(("model name", "Model", "Hardware")) and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def machine_identity() -> MachineIdentity:
    """This machine's identity: CPU model, usable cores, kernel release, architecture."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 0
    return MachineIdentity(cpu=_cpu_model(), cores=cores, kernel=platform.release(), arch=platform.machine())


def _slug(text: str) -> str:
    s = re.sub(r"\((r|tm)\)", "", text.lower())
    s = re.sub(r"[^a-z0-9.]+", "-", s)
    return s.strip("-.") or "unknown"


def machine_key(identity: MachineIdentity) -> str:
    """The file stem for ``identity`` (documented in the module docstring and docs/regress.md)."""
    return f"{_slug(identity.cpu)}-{identity.cores}c-{_slug(identity.kernel)}"


def baseline_path(directory: Path, key: str) -> Path:
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", key):
        raise BaselineError(f"machine key {key!r} must be lowercase letters, digits, '.' and '-'")
    return directory / f"{key}.json"


def load_baseline(directory: Path, key: str) -> BaselineFile | None:
    """The stored baseline for ``key``, None when there is none; BaselineError when it is unreadable."""
    path = baseline_path(directory, key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        doc = msgspec.json.decode(data, type=BaselineFile)
    except msgspec.DecodeError as exc:  # includes ValidationError
        raise BaselineError(f"baseline {path} is not a valid baseline file: {exc}") from None
    if doc.schema != SCHEMA:
        raise BaselineError(f"baseline {path} has schema {doc.schema}, this code reads {SCHEMA}")
    if doc.key != key:
        raise BaselineError(f"baseline {path} says key {doc.key!r}, expected {key!r}")
    return doc


def save_baseline(directory: Path, doc: BaselineFile) -> Path:
    """Write ``doc`` (indented, sorted keys, for readable diffs); the write is atomic."""
    path = baseline_path(directory, doc.key)
    directory.mkdir(parents=True, exist_ok=True)
    body = msgspec.json.format(msgspec.json.encode(doc, order="sorted"), indent=2) + b"\n"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(body)
    os.replace(tmp, path)
    return path


def with_mode(existing: BaselineFile | None, key: str, identity: MachineIdentity, mode: str,
              section: BaselineMode) -> BaselineFile:
    """``existing`` with ``mode`` replaced by ``section`` (other modes kept); a new file when there is none."""
    modes = dict(existing.modes) if existing else {}
    modes[mode] = section
    return BaselineFile(key=key, machine=identity, modes=modes)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
