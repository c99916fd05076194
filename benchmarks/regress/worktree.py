"""The base revision's checkout: resolve REV, `git worktree add` it into a temp dir, always remove it after."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class RevisionError(ValueError):
    """The base revision cannot be used (not a git repository, unknown revision, worktree failure)."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def resolve(repo: Path, rev: str) -> str:
    """The full commit id of ``rev`` in ``repo``; RevisionError naming what was wrong otherwise."""
    if not rev or rev.startswith("-"):
        raise RevisionError(f"base revision {rev!r} is not a revision name")
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RevisionError(f"{repo} is not a git repository: {top.stderr.strip()}")
    res = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if res.returncode != 0 or not res.stdout.strip():
        raise RevisionError(
            f"base revision {rev!r} does not name a commit in {repo} "
            f"(check `git -C {repo} log --oneline`; a shallow CI clone may need `git fetch --deepen`)"
        )
    return res.stdout.strip()


def head_state(repo: Path) -> dict[str, object]:
    """The head side's commit and whether the working tree has uncommitted changes (they are measured too)."""
    sha = _git(repo, "rev-parse", "HEAD")
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return {"sha": sha.stdout.strip() if sha.returncode == 0 else None,
            "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


@contextmanager
def base_worktree(repo: Path, rev: str) -> Iterator[tuple[Path, str]]:
    """Yield (checkout path, commit id) of ``rev`` as a detached worktree; removed (and pruned) on exit."""
    sha = resolve(repo, rev)
    parent = Path(tempfile.mkdtemp(prefix="caerus-regress-base-"))
    path = parent / "tree"
    res = _git(repo, "worktree", "add", "--detach", "--force", str(path), sha)
    if res.returncode != 0:
        shutil.rmtree(parent, ignore_errors=True)
        raise RevisionError(f"git worktree add of {rev!r} ({sha[:12]}) failed: {res.stderr.strip()}")
    try:
        yield path, sha
    finally:
        _git(repo, "worktree", "remove", "--force", str(path))
        shutil.rmtree(parent, ignore_errors=True)
        _git(repo, "worktree", "prune")
