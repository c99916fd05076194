"""The lock an environment was installed from, and whether what is installed still matches it.

A lock is a pip requirements file with one ``name==version`` pin per package, an optional environment marker, and
``--hash`` lines (``locks/fleet.txt``, compiled by ``invoke lock``). ``invoke deploy`` installs a host's venv from
it with ``--no-index --require-hashes`` and leaves a copy at ``<venv>/caerus-lock.txt``; every session then records
in ``env.json`` whether the interpreter it ran on still holds exactly those versions (:func:`environment_record`).

``python -m caerus.metrics.deps LOCK`` prints the check as JSON and exits 1 on any mismatch: deploy runs it on the
host after installing, so the verification is done by the same code, in the same interpreter, as the sessions'.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.utils import canonicalize_name

DEPLOYED_LOCK_NAME = "caerus-lock.txt"  # inside the venv (sys.prefix) a deploy installed
# Installed alongside every venv, never pinned by a lock of runtime dependencies.
INSTALLER_PACKAGES = frozenset({"pip", "caerus"})


class LockError(ValueError):
    """A lock file line that is not a hashed ``name==version`` pin."""


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503) name, as a plain str
    version: str
    marker: str = ""  # PEP 508 environment marker; empty = always
    hashes: tuple[str, ...] = ()

    def applies(self, env: dict[str, str] | None = None) -> bool:
        return not self.marker or Marker(self.marker).evaluate(env)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash continuations and drop comments; keeps the first physical line number of each."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not buf:
            start = number
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((start, buf.strip()))
        buf = ""
    if buf.strip():
        out.append((start, buf.strip()))
    return out


def parse_lock(text: str, source: str = "lock") -> list[Pin]:
    """Every pin of a hashed lock; a line that is not ``name==version [; marker] --hash=...`` is a LockError."""
    pins = []
    for number, line in _logical_lines(text):
        parts = line.split(" --hash=")
        head, hashes = parts[0].strip(), tuple(h.strip() for h in parts[1:])
        requirement, _, marker = head.partition(";")
        name, sep, version = requirement.strip().partition("==")
        if not sep or not name.strip() or not version.strip() or " " in version.strip():
            raise LockError(f"{source}:{number}: not a `name==version` pin: {head!r}")
        if not hashes:
            raise LockError(f"{source}:{number}: {name.strip()}=={version.strip()} has no --hash")
        if any(not h.startswith("sha256:") for h in hashes):
            raise LockError(f"{source}:{number}: {name.strip()}: only sha256 hashes are accepted")
        pins.append(Pin(str(canonicalize_name(name.strip().split("[", 1)[0])), version.strip(), marker.strip(), hashes))
    if not pins:
        raise LockError(f"{source}: no pins")
    return pins


@dataclass
class LockCheck:
    """Installed distributions against one lock, for the environment this interpreter runs in."""

    lock: str
    lock_sha256: str
    pinned: int = 0  # pins whose marker applies here
    matches: bool = False
    mismatched: list[str] = field(default_factory=list)  # "name: locked X, installed Y"
    missing: list[str] = field(default_factory=list)  # "name==X"
    unlocked: list[str] = field(default_factory=list)  # installed, not in the lock: "name==Y"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if self.matches:
            return f"{self.pinned} locked packages installed exactly ({self.lock}, sha256 {self.lock_sha256[:12]})"
        parts = [f"{len(v)} {k}: {', '.join(v[:5])}{' ...' if len(v) > 5 else ''}"
                 for k, v in (("mismatched", self.mismatched), ("missing", self.missing),
                              ("not in the lock", self.unlocked)) if v]
        return f"environment differs from {self.lock}: " + "; ".join(parts)


def installed_versions() -> dict[str, str]:
    """Canonical name -> version of every distribution this interpreter can import from."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out.setdefault(str(canonicalize_name(name)), dist.version)
    return out


def check_lock(lock_path: Path, installed: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> LockCheck:
    """Compare ``installed`` (default: this interpreter's distributions) with the pins of ``lock_path`` that apply
    to ``env`` (default: this interpreter's environment). Exact: a different version, a missing pin and a package
    the lock does not name all count against it."""
    raw = lock_path.read_bytes()
    pins = [p for p in parse_lock(raw.decode(), str(lock_path)) if p.applies(env)]
    have = installed_versions() if installed is None else {str(canonicalize_name(k)): v for k, v in installed.items()}
    check = LockCheck(lock=str(lock_path), lock_sha256=hashlib.sha256(raw).hexdigest(), pinned=len(pins))
    locked = {p.name for p in pins}
    for pin in pins:
        got = have.get(pin.name)
        if got is None:
            check.missing.append(f"{pin.name}=={pin.version}")
        elif got != pin.version:
            check.mismatched.append(f"{pin.name}: locked {pin.version}, installed {got}")
    check.unlocked = sorted(f"{n}=={v}" for n, v in have.items() if n not in locked and n not in INSTALLER_PACKAGES)
    check.matches = not (check.missing or check.mismatched or check.unlocked)
    return check


def deployed_lock(prefix: str = sys.prefix) -> Path | None:
    """The lock a deploy installed this venv from, if this interpreter runs in such a venv."""
    path = Path(prefix) / DEPLOYED_LOCK_NAME
    return path if path.is_file() else None


def checkout_lock() -> Path | None:
    """``locks/dev.txt`` of the checkout this package is imported from (a development or CI venv), if any."""
    path = Path(__file__).resolve().parents[2] / "locks" / "dev.txt"
    return path if path.is_file() else None


def environment_record() -> dict[str, Any]:
    """For env.json: this interpreter's packages checked against the lock it was installed from -- the deployed
    venv's copy, else the checkout's development lock -- or why there is none."""
    lock = deployed_lock() or checkout_lock()
    if lock is None:
        return {"unavailable": f"no lock: not a deployed venv (no {DEPLOYED_LOCK_NAME} in {sys.prefix}) "
                               "and not imported from a checkout"}
    try:
        return check_lock(lock).to_dict()
    except (OSError, LockError) as exc:
        return {"unavailable": f"{lock}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m caerus.metrics.deps LOCK", file=sys.stderr)
        return 2
    try:
        check = check_lock(Path(args[0]))
    except (OSError, LockError) as exc:
        print(f"caerus.metrics.deps: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(check.to_dict()))
    return 0 if check.matches else 1


if __name__ == "__main__":
    sys.exit(main())
