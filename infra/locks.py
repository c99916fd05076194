"""The two lock files and how they are compiled (``invoke lock``), with uv, hashes for every file of every pin.

- ``locks/dev.txt``: everything a checkout runs (the fleet, ``[infra]``, ``[report]``, ``[dev]``). The README and CI
  install it with ``--require-hashes``, so the tests run on exactly these versions.
- ``locks/fleet.txt``: the fleet's runtime only (the base dependencies), constrained to the same versions as
  ``dev.txt``: what is deployed to a host is a subset of what was tested, version for version.

- ``locks/peers.txt``: the runtime plus the ``[peers]`` extra (the tools benchmarks/peers and backtest_speed compare
  against), for Python >= 3.13 (cryptofeed 3 requires it), installed only into .venv-peers, never by CI. Seeded from
  dev.txt's pins when it does not exist yet, so the runtime's versions are the tested ones where the peers allow.

All are universal (markers, not the compiling machine's platform) for Python >= 3.11 (peers: 3.13). Compiling keeps
every pin the existing lock already has unless ``upgrade`` is asked for, so relocking after adding one dependency
moves nothing else.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCK_DIR = REPO_ROOT / "locks"
FLEET_LOCK = LOCK_DIR / "fleet.txt"
DEV_LOCK = LOCK_DIR / "dev.txt"
PEERS_LOCK = LOCK_DIR / "peers.txt"
PYTHON_FLOOR = "3.11"
PEERS_PYTHON_FLOOR = "3.13"


class LockCompileError(RuntimeError):
    """uv is missing or could not resolve the dependencies."""


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        raise LockCompileError("uv is not installed: `pip install uv` (it is in the [dev] extra)")
    return found


def compile_commands(upgrade: bool = False) -> list[list[str]]:
    """The three uv invocations, dev first: the fleet lock is constrained to the versions dev.txt holds; the peers
    lock is compiled for its own Python floor."""
    def common(floor: str) -> list[str]:
        return ["pip", "compile", "pyproject.toml", "--universal", "--python-version", floor, "--generate-hashes",
                "--custom-compile-command", "invoke lock", "-q", *(["--upgrade"] if upgrade else [])]
    dev = ["--extra", "dev", "-o", str(DEV_LOCK.relative_to(REPO_ROOT))]
    fleet = ["-c", str(DEV_LOCK.relative_to(REPO_ROOT)), "-o", str(FLEET_LOCK.relative_to(REPO_ROOT))]
    peers = ["--extra", "peers", "-o", str(PEERS_LOCK.relative_to(REPO_ROOT))]
    return [[*common(PYTHON_FLOOR), *dev], [*common(PYTHON_FLOOR), *fleet], [*common(PEERS_PYTHON_FLOOR), *peers]]


def compile_locks(upgrade: bool = False, repo: Path = REPO_ROOT, timeout_s: float = 600) -> None:
    uv = _uv()
    (repo / "locks").mkdir(exist_ok=True)
    peers = repo / PEERS_LOCK.relative_to(REPO_ROOT)
    if not peers.exists() and (repo / DEV_LOCK.relative_to(REPO_ROOT)).exists():
        # uv keeps an output file's pins as preferences: start the peers lock from the tested versions
        peers.write_text((repo / DEV_LOCK.relative_to(REPO_ROOT)).read_text())
    for args in compile_commands(upgrade):
        proc = subprocess.run([uv, *args], cwd=repo, capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0:
            raise LockCompileError(f"uv {' '.join(args[:3])} failed: {proc.stderr.strip()[-1500:]}")
