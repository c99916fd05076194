"""Unit tests run in-process: no subprocess, no child process, no listening socket.

The guard below makes that a checked rule rather than a folder name: a unit test that starts a process or a server
fails with a message saying where such a test belongs (tests/integration/, which owns every server). So
``invoke test --unit`` passes on a bare machine with only the venv.
"""

from __future__ import annotations

import multiprocessing.process
import socket
import subprocess
from collections.abc import Iterator

import pytest

_WHERE = "unit tests run in-process; a test that needs {what} belongs in tests/integration/"


@pytest.fixture(autouse=True)
def _in_process_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError(_WHERE.format(what=f"a subprocess ({args[1] if len(args) > 1 else args})"))

    def no_child(self: object) -> None:
        raise AssertionError(_WHERE.format(what="a child process"))

    def no_listen(self: socket.socket, *args: int) -> None:
        raise AssertionError(_WHERE.format(what="a listening socket (a server)"))

    monkeypatch.setattr(subprocess.Popen, "__init__", no_subprocess)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", no_child)
    monkeypatch.setattr(socket.socket, "listen", no_listen)
    yield
