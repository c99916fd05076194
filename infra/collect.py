"""`invoke collect`: pull session folders (histograms, env, chrony, capture) from a host into ./sessions.

Copies over SFTP, file by file; a file already present locally with the same size is skipped, so collecting
twice (or resuming an interrupted copy) only moves what is missing.

The host's listing is not trusted: every name it returns must be one plain entry (no ``..``, no separator, not
absolute) that stays inside the local target folder (:mod:`infra.safenames`), or the copy stops with
:class:`UnsafeRemoteName` naming it, so a compromised host cannot write outside ``./sessions`` here.
"""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.deploy import SESSIONS_DIR
from infra.hosts import HostRecord, HostStore
from infra.remote import RemoteError, RemoteHost, open_host
from infra.safenames import UnsafeValue, child


class UnsafeRemoteName(RemoteError):
    """The host listed a file or session name that would land outside the local folder it is copied into."""


def list_sessions(host: RemoteHost, sessions_dir: str = SESSIONS_DIR) -> list[str]:
    sftp = host.conn.sftp()
    try:
        entries = sftp.listdir_attr(host.path(sessions_dir))
    except FileNotFoundError:
        return []
    return sorted(e.filename for e in entries if stat.S_ISDIR(e.st_mode or 0) and not e.filename.startswith("."))


def pull_tree(sftp: Any, remote: str, local: Path) -> tuple[int, int]:
    """Mirror ``remote`` into ``local``; returns (files copied, files skipped as already present)."""
    local.mkdir(parents=True, exist_ok=True)
    copied = skipped = 0
    for entry in sftp.listdir_attr(remote):
        try:
            dst = child(local, entry.filename, f"the host's file name under {remote}:")
        except UnsafeValue as exc:
            raise UnsafeRemoteName(str(exc)) from None
        src = posixpath.join(remote, entry.filename)
        if stat.S_ISDIR(entry.st_mode or 0):
            c, s = pull_tree(sftp, src, dst)
            copied, skipped = copied + c, skipped + s
        elif stat.S_ISREG(entry.st_mode or 0):
            if dst.exists() and dst.stat().st_size == entry.st_size:
                skipped += 1
                continue
            tmp = dst.with_name(f".{dst.name}.part")
            sftp.get(src, str(tmp))
            tmp.replace(dst)
            copied += 1
    return copied, skipped


def collect_from(host: RemoteHost, out: Path, sessions: list[str] | None = None,
                 sessions_dir: str = SESSIONS_DIR, say: Callable[[str], None] = print) -> list[Path]:
    names = sessions or list_sessions(host, sessions_dir)
    for name in names:  # a name the operator gave or the host listed: either way one plain folder under ``out``
        try:
            child(out, name, "session folder name")
        except UnsafeValue as exc:
            raise UnsafeRemoteName(str(exc)) from None
    available = set(list_sessions(host, sessions_dir))
    missing = [n for n in names if n not in available]
    if missing:
        raise FileNotFoundError(f"no session folder(s) {missing} under {sessions_dir} on the host "
                                f"(available: {sorted(available) or 'none'})")
    sftp = host.conn.sftp()
    paths = []
    for name in names:
        c, s = pull_tree(sftp, posixpath.join(host.path(sessions_dir), name), out / name)
        say(f"collected {name}: {c} file(s) copied, {s} already present -> {out / name}")
        paths.append(out / name)
    return paths


def collect(record: HostRecord, store: HostStore, out: Path, sessions: list[str] | None = None,
            say: Callable[[str], None] = print, host_key: str = "") -> list[Path]:
    host = open_host(record, store.known_hosts, say, host_key=host_key)
    try:
        return collect_from(host, out, sessions, record.extra.get("sessions_dir", SESSIONS_DIR), say)
    finally:
        host.close()
