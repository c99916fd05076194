"""What a value must look like before the automation writes it into a path, a unit file or a command.

Values reach the automation from places it does not control: the operator's command line (``--session``), the
host itself (``uname -m``, the glibc version, the names its SFTP server lists) and the local state folder. Each
kind has one strict grammar here; anything else is refused with :class:`UnsafeValue`, one line naming the value,
before it becomes a path or a line of a file (a newline in a systemd ``EnvironmentFile`` value would add a
variable such as ``LD_PRELOAD`` to every unit).
"""

from __future__ import annotations

import re
from pathlib import Path

# A session id: the units' CAERUS_SESSION, shared-memory segment names, folder names.
SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SESSION_RULE = "letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters"
# A login name systemd's User= takes as it is (ec2-user, ubuntu, a fixture's user, first.last).
UNIX_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}")
UNIX_USER_RULE = "letters, digits, '.', '_' or '-', starting with a letter or '_', at most 32 characters"
# Host facts that name the wheels a host can run: uname -m (x86_64, aarch64, ...), glibc "2.34", python "3.11".
MACHINE = re.compile(r"[a-z0-9_]{1,32}")
GLIBC = re.compile(r"\d{1,2}\.\d{1,3}")
PYTHON = re.compile(r"3\.\d{1,2}")


class UnsafeValue(ValueError):
    """A value is not of the grammar its use needs; the message names it and the rule."""


def check(what: str, value: str, grammar: re.Pattern[str], rule: str) -> str:
    """``value`` when it matches ``grammar`` entirely; :class:`UnsafeValue` naming ``what`` otherwise."""
    if not isinstance(value, str) or grammar.fullmatch(value) is None:
        raise UnsafeValue(f"{what} {value!r} is not allowed: {rule}")
    return value


def session_name(value: str, what: str = "--session") -> str:
    return check(what, value, SESSION, SESSION_RULE)


def unix_user(value: str, what: str = "login user") -> str:
    return check(what, value, UNIX_USER, UNIX_USER_RULE)


def single_name(what: str, name: str) -> str:
    """A remote file name that is one plain entry of a folder: not empty, not ``.``/``..``, no separator (``/``
    or ``\\``), no NUL; anything else could step out of the local folder it is copied into."""
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
            or Path(name).is_absolute()):
        raise UnsafeValue(f"{what} {name!r} is not a plain file name (absolute, '..', or a path separator): refused")
    return name


def inside(root: Path, path: Path, what: str) -> Path:
    """``path`` when, with symlinks and ``..`` resolved, it stays under ``root``; :class:`UnsafeValue` otherwise."""
    base = root.resolve()
    resolved = path.resolve()
    if resolved != base and base not in resolved.parents:
        raise UnsafeValue(f"{what} {str(path)!r} resolves to {resolved}, outside {base}: refused")
    return path


def child(root: Path, name: str, what: str) -> Path:
    """``root / name`` for a name from an untrusted listing: a single plain name that stays under ``root``."""
    return inside(root, root / single_name(what, name), what)
