"""Where the peers' venv (.venv-peers: Python 3.13, locks/peers.txt) is, and building it when it is missing.

benchmarks/peers and benchmarks/backtest_speed both run their peers there (hftbacktest, cryptofeed, nautilus_trader,
picows, pyzmq ...: never a caerus runtime or dev dependency). Found, in order: ``$CAERUS_PEERS_VENV``; this
checkout's ``.venv-peers``; the main worktree's, when this checkout is a git worktree of it (``git worktree add``
shares the repository, not the untracked venv: one venv serves every worktree, each running its own code through
``PYTHONPATH``). None found: this checkout's path, where :func:`ensure` builds it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = ".venv-peers"
LOCK = ROOT / "locks" / "peers.txt"
HOW = (f"python3.13 -m venv {NAME} && {NAME}/bin/pip install --require-hashes -r locks/peers.txt")


def main_worktree(root: Path = ROOT) -> Path | None:
    """The main worktree of the repository ``root`` is a linked worktree of (None when ``root`` is not one): its
    ``.git`` file names the worktree's git dir, whose ``commondir`` is the repository's ``.git``."""
    dot_git = root / ".git"
    if not dot_git.is_file():
        return None
    text = dot_git.read_text().strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    common_file = gitdir / "commondir"
    common = (gitdir / common_file.read_text().strip()).resolve() if common_file.exists() else gitdir.parent.parent
    return common.parent if common.name == ".git" else None


def venv(root: Path = ROOT) -> Path:
    """The peers' venv directory (see the module docstring for the order); may not exist yet."""
    env = os.environ.get("CAERUS_PEERS_VENV")
    if env:
        return Path(env)
    own = root / NAME
    if (own / "bin" / "python").exists():
        return own
    main = main_worktree(root)
    if main is not None and (main / NAME / "bin" / "python").exists():
        return main / NAME
    return own


def python(root: Path = ROOT) -> Path:
    return venv(root) / "bin" / "python"


def requirements() -> list[str]:
    """pyproject.toml's [peers] extra: what the venv holds (never a caerus runtime or dev dependency)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["peers"])


def python313() -> str | None:
    """A Python 3.13 interpreter (cryptofeed 3, in the same [peers] extra, requires it): python3.13 on PATH when it
    runs (a pyenv shim may not), else a pyenv-installed 3.13."""
    pyenv = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.13*/bin/python3.13")))
    for cand in [shutil.which("python3.13"), *pyenv]:
        if cand and subprocess.run([cand, "--version"], capture_output=True, timeout=30).returncode == 0:
            return cand
    return None


def ensure() -> Path | None:
    """The venv's python, built (Python 3.13, locks/peers.txt with hashes) or brought up to the [peers] extra when
    needed; None, said on stderr, when it cannot be."""
    py = python()
    if not py.exists():
        base = python313()
        if base is None:
            print("peers: no Python 3.13 to build .venv-peers with (cryptofeed 3 in the [peers] extra needs it)",
                  file=sys.stderr)
            return None
        subprocess.run([base, "-m", "venv", str(py.parents[1])], check=True, timeout=300)
    ok = subprocess.run([str(py), "-c", "import sys, importlib.metadata as m; from packaging.requirements import "
                         "Requirement as R; sys.exit(any(not R(r).specifier.contains(m.version(R(r).name), True) "
                         "for r in sys.argv[1:]))", *requirements()], capture_output=True, timeout=120)
    if ok.returncode != 0:
        res = subprocess.run([str(py), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(LOCK)],
                             capture_output=True, text=True, timeout=1800)
        if res.returncode != 0:
            print(f"peers: cannot install {LOCK}: {res.stderr[-500:]}", file=sys.stderr)
            return None
    return py
