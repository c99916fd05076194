"""A ClickHouse password reaches the sink only through a file of the operator's own with mode 0600: a password
in the ``--clickhouse`` URL (visible in ``ps``) is refused without repeating it, and a password file that is
another user's, readable by group or others, or not a regular file is refused naming the path, the owner and
mode found and what is required."""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path

import pytest

from caerus.capture import sink_app
from caerus.capture.clickhouse import check_url, read_password_file
from caerus.runtime.private_file import PrivateFileError

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize("url", [f"http://writer:{SECRET}@127.0.0.1:8123", f"https://writer:{SECRET}@ch.example:8443/",
                                 f"http://:{SECRET}@127.0.0.1:8123"])
def test_a_password_in_the_url_is_refused_and_not_repeated(url: str) -> None:
    with pytest.raises(ValueError, match="carries a password") as info:
        check_url(url)
    assert "--clickhouse-password-file" in str(info.value)
    assert SECRET not in str(info.value)


def test_a_user_in_the_url_is_refused() -> None:
    with pytest.raises(ValueError, match="--clickhouse-user"):
        check_url("http://writer@127.0.0.1:8123")


def test_the_sink_refuses_a_password_in_the_url_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser()
    sink_app.add_arguments(p)
    # port 1: were the URL accepted the sink would report ClickHouse unreachable instead
    args = p.parse_args(["--brokers", "127.0.0.1:9092", "--clickhouse", f"http://w:{SECRET}@127.0.0.1:1"])
    assert sink_app.run(args) == 2
    err = capsys.readouterr().err
    assert "carries a password" in err and "--clickhouse-password-file" in err
    assert SECRET not in err


def _secret_file(path: Path, mode: int) -> Path:
    path.write_text(SECRET + "\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_password_file_is_read(tmp_path: Path, mode: int) -> None:
    assert read_password_file(_secret_file(tmp_path / "pw", mode)) == SECRET


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606])
def test_a_password_file_others_can_reach_is_refused(tmp_path: Path, mode: int) -> None:
    path = _secret_file(tmp_path / "pw", mode)
    with pytest.raises(PrivateFileError) as info:
        read_password_file(path)
    msg = str(info.value)
    assert f"--clickhouse-password-file {path} is owned by uid {os.geteuid()} with mode {mode:04o}" in msg
    assert "must be owned by this user" in msg and "with mode 0600" in msg
    assert SECRET not in msg


def test_a_password_file_of_another_user_is_refused_even_at_0600(tmp_path: Path) -> None:
    import pwd

    nobody = pwd.getpwnam("nobody")
    path = _secret_file(tmp_path / "pw", 0o600)
    os.chown(path, nobody.pw_uid, nobody.pw_gid)  # the tests run as root; chown fails loudly otherwise
    with pytest.raises(PrivateFileError, match=rf"is owned by uid {nobody.pw_uid} with mode 0600; it must be owned "
                                               rf"by this user \(uid {os.geteuid()}\)"):
        read_password_file(path)


def test_a_fifo_or_missing_password_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pw"
    os.mkfifo(fifo, 0o600)
    box: dict[str, BaseException | None] = {"exc": None}

    def read() -> None:
        try:
            read_password_file(fifo)
        except BaseException as exc:  # handed back to the test
            box["exc"] = exc

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # release it
        os.write(fd, b"x\n")
        os.close(fd)
        pytest.fail("reading a FIFO as the password file blocked")
    assert isinstance(box["exc"], PrivateFileError) and "is not a regular file" in str(box["exc"])
    with pytest.raises(PrivateFileError, match="does not exist"):
        read_password_file(tmp_path / "absent")
