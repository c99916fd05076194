"""Reading a file that holds a secret (a password, a key): only this user's own regular file, with no permission
for group or others, is read.

The checks are made on the descriptor that is then read (``fstat`` after ``open``), so the file cannot be swapped
between check and read; ``O_NONBLOCK`` keeps a FIFO planted at the path from blocking the open. Errors are one line
naming the path, what was found (owner, mode, file type) and what is required, never the content.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 1 << 16  # a secret file is small; a larger one is not what the flag expects


class PrivateFileError(ValueError):
    """The secret file is missing, not a regular file, not ours, or readable/writable by group or others."""


def check_private_stat(path: Path, st: os.stat_result, what: str) -> None:
    """Refuse anything but a regular file owned by this user with mode 0600 (or stricter: no group/other bits)."""
    uid = os.geteuid()
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode):
        raise PrivateFileError(f"{what} {path} is not a regular file; it must be a file of yours with mode 0600")
    if st.st_uid != uid or mode & 0o077:
        raise PrivateFileError(f"{what} {path} is owned by uid {st.st_uid} with mode {mode:04o}; it must be owned "
                               f"by this user (uid {uid}) with mode 0600 (it holds a secret: chmod 600 {path})")


def read_private_text(path: Path, what: str) -> str:
    """The text of secret file ``path`` after :func:`check_private_stat`; PrivateFileError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise PrivateFileError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise PrivateFileError(f"{what} {path} cannot be opened: {exc.strerror or exc}") from None
    try:
        check_private_stat(path, os.fstat(fd), what)
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise PrivateFileError(f"{what} {path} is larger than {MAX_BYTES} bytes: not a secret file")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise PrivateFileError(f"{what} {path} is not UTF-8 text") from None
