"""The host's wheelhouse: every wheel of the fleet lock for one host target, downloaded here with their hashes
checked, so the host installs with ``pip install --no-index --require-hashes`` and never reaches a package index.

A target is what decides which wheel of a pinned version a host can install: the CPython version of its
interpreter, its machine (``uname -m``) and its glibc (the newest ``manylinux_2_N`` tag it accepts). The wheelhouse
is cached in the state folder per target and lock digest, so a second deploy downloads nothing.

The target's parts are the host's own report (``uname -m``, the glibc version), and they name the cache folder
here: each must match its strict grammar (:mod:`infra.safenames`) or the target is refused, and the folder built
from them must resolve inside the cache, so a hostile host cannot make this machine create folders elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from infra.facts import HostFacts
from infra.safenames import GLIBC, MACHINE, PYTHON, UnsafeValue, check, inside

LOCK_IN_WHEELHOUSE = "fleet.txt"
COMPLETE = ".complete"  # written last: what the folder was built for (a half-built folder has none)
# The oldest glibc with a manylinux tag (manylinux1 = glibc 2.5).
OLDEST_GLIBC_MINOR = 5
LEGACY_TAGS = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}


class WheelhouseError(RuntimeError):
    """The wheelhouse could not be built for a target."""


@dataclass(frozen=True)
class Target:
    python: str  # "3.11"
    machine: str  # "x86_64"
    glibc: str  # "2.34"

    def __post_init__(self) -> None:
        try:
            check("the host's Python version", self.python, PYTHON, "3.N")
            check("the host's machine (uname -m)", self.machine, MACHINE,
                  "lower-case letters, digits or '_', at most 32 (x86_64, aarch64)")
            check("the host's glibc version", self.glibc, GLIBC, "MAJOR.MINOR digits (2.34)")
        except UnsafeValue as exc:
            raise WheelhouseError(str(exc)) from None

    @classmethod
    def of(cls, facts: HostFacts) -> Target:
        missing = [n for n, v in (("python3_version", facts.python3_version), ("machine", facts.machine),
                                  ("glibc", facts.glibc)) if not v]
        if missing:
            raise WheelhouseError(f"the host facts lack {', '.join(missing)}: cannot choose its wheels "
                                  "(is the host a glibc Linux with a Python >= 3.11?)")
        return cls(facts.python3_version, facts.machine, facts.glibc)

    @property
    def key(self) -> str:
        return f"cp{self.python.replace('.', '')}-{self.machine}-glibc{self.glibc}"

    @property
    def abi(self) -> str:
        return f"cp{self.python.replace('.', '')}"

    def platform_tags(self) -> list[str]:
        """Every manylinux tag a host with this glibc and machine accepts, newest first (PEP 600 + legacy)."""
        try:
            major, minor = (int(x) for x in self.glibc.split(".")[:2])
        except ValueError as exc:
            raise WheelhouseError(f"glibc version {self.glibc!r} is not MAJOR.MINOR") from exc
        if major != 2:
            raise WheelhouseError(f"glibc {self.glibc}: only glibc 2.x has manylinux tags")
        tags = []
        for m in range(minor, OLDEST_GLIBC_MINOR - 1, -1):
            tags.append(f"manylinux_2_{m}_{self.machine}")
            if m in LEGACY_TAGS:
                tags.append(f"{LEGACY_TAGS[m]}_{self.machine}")
        return [*tags, f"linux_{self.machine}"]


def lock_digest(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def download_command(lock: Path, target: Target, dest: Path) -> list[str]:
    """pip download of exactly the lock's pins, binary wheels only, for ``target`` -- hashes checked by pip."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
           "--require-hashes", "--only-binary=:all:", "--python-version", target.python,
           "--implementation", "cp", "--abi", target.abi, "-r", str(lock), "-d", str(dest)]
    for tag in target.platform_tags():
        cmd += ["--platform", tag]
    return cmd


def build_wheelhouse(lock: Path, target: Target, cache_root: Path, timeout_s: float = 1800) -> Path:
    """The wheelhouse folder for ``target`` (cached under ``cache_root``): the lock's wheels plus the lock itself.
    Two deploys sharing the cache (two hosts of one target deployed at once) build it once: the second waits for
    the first (at most ``timeout_s``) and takes its folder."""
    digest = lock_digest(lock)
    try:  # the grammar already keeps the key a plain name; the resolved path is checked all the same
        dest = inside(cache_root, cache_root / f"{target.key}-{digest[:16]}", "wheelhouse folder")
    except UnsafeValue as exc:
        raise WheelhouseError(str(exc)) from None
    stamp = {"lock_sha256": digest, "target": target.key}
    complete = dest / COMPLETE

    def built() -> bool:
        return complete.is_file() and json.loads(complete.read_text()) == stamp

    if built():
        return dest
    cache_root.mkdir(parents=True, exist_ok=True)
    with _building(dest.with_name(dest.name + ".lock"), timeout_s):
        if built():  # by another builder while we waited
            return dest
        if dest.exists():
            shutil.rmtree(dest)
        work = dest.with_name(dest.name + ".partial")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            proc = subprocess.run(download_command(lock, target, work), capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise WheelhouseError(f"downloading the wheels of {lock} for {target.key} took over {timeout_s:.0f} s") \
                from exc
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if "ERROR" in ln or "THESE PACKAGES" in ln]
            raise WheelhouseError(f"downloading the wheels of {lock} for {target.key} failed: "
                                  + ("; ".join(errors[-3:]) or proc.stderr.strip()[-800:]))
        shutil.copyfile(lock, work / LOCK_IN_WHEELHOUSE)
        (work / COMPLETE).write_text(json.dumps(stamp))
        work.rename(dest)
    return dest


@contextlib.contextmanager
def _building(lock_file: Path, timeout_s: float, poll_s: float = 0.2) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (released when the holder exits, however it exits), waiting at most
    ``timeout_s`` for another builder of the same folder."""
    deadline = time.monotonic() + timeout_s
    with open(lock_file, "a") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WheelhouseError(f"another deploy has been building {lock_file.stem} for over "
                                          f"{timeout_s:.0f} s (lock {lock_file})") from None
                time.sleep(poll_s)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def wheel_files(wheelhouse: Path) -> dict[str, str]:
    """File name -> sha256 of every wheel in the folder."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(wheelhouse.glob("*.whl"))}
