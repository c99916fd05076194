"""SSH to a host with Fabric, with the host key pinned in the state folder, plus file helpers for the steps.

Pinning: the state folder's ``known_hosts`` is the only trust store. First contact checks the host's key
against the fingerprints its instance printed to the EC2 console (:mod:`infra.hostkeys`), records the outcome
in ``hosts/<name>/host_key.json`` and pins the key; later contacts must present the same key or the connection
is refused with :class:`HostKeyMismatch` (a re-provisioned host at the same address needs ``invoke teardown`` or
the entry removed by hand). A first key the console does not list is refused and not pinned.

Paths on the host go through :meth:`RemoteHost.path`, which prepends the host's *prefix*: "" on a real host,
a scratch folder on a test host, so configure/deploy can render /etc files without touching the machine's /etc.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko
from fabric import Config, Connection

from infra.aws.clients import AwsTarget
from infra.aws.console import console_output
from infra.hostkeys import HostKeyCheck, HostKeyNotOnConsole, check_first_contact
from infra.hosts import HostRecord, HostStore, write_private


class HostKeyMismatch(RuntimeError):
    """The host presented a different SSH host key from the pinned one."""


class RemoteError(RuntimeError):
    """A remote command failed; the message carries the command and its output."""


class PinOnFirstContact(paramiko.MissingHostKeyPolicy):
    """Check an unknown host's key against its console (when it has one), then record it in the state folder's
    known_hosts (0600) and accept it; ``self.check`` keeps the verdict for the caller to record."""

    def __init__(self, known_hosts: Path, say: Callable[[str], None] = print,
                 console: Callable[[], str | None] | None = None) -> None:
        self.known_hosts = known_hosts
        self.say = say
        self.console = console
        self.check: HostKeyCheck | None = None

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        try:
            check = check_first_contact(hostname, key.get_name(), key.asbytes(), self.console)
        except HostKeyNotOnConsole as exc:
            raise HostKeyMismatch(str(exc)) from exc
        keys = paramiko.HostKeys()
        if self.known_hosts.exists():
            keys.load(str(self.known_hosts))
        keys.add(hostname, key.get_name(), key)
        if not self.known_hosts.exists():
            write_private(self.known_hosts, "")  # created 0600 first; save() keeps the mode of an existing file
        keys.save(str(self.known_hosts))
        os.chmod(self.known_hosts, 0o600)
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.check = check
        self.say(f"pinned SSH host key of {hostname}: {key.get_name()} {check.fingerprint} ({check.status}: "
                 f"{check.detail})")


def forget_host(known_hosts: Path, host: str, port: int) -> None:
    """Drop a host's pinned key (teardown: the address may be reused by another instance)."""
    if not known_hosts.exists():
        return
    name = host if port == 22 else f"[{host}]:{port}"
    lines = [ln for ln in known_hosts.read_text().splitlines(keepends=True) if ln.split(" ", 1)[0] != name]
    write_private(known_hosts, "".join(lines))


def connect(record: HostRecord, known_hosts: Path, say: Callable[[str], None] = print,
            timeout: float = 15.0) -> Connection:
    """An open Fabric connection to ``record``'s host, key auth only, host key pinned."""
    conn = Connection(
        host=record.host,
        user=record.user,
        port=record.port,
        connect_timeout=int(timeout),
        connect_kwargs={"key_filename": record.key_path, "look_for_keys": False, "allow_agent": False},
        # The operator's ~/.ssh/config is never read (a `ForwardAgent yes` there would hand the host the agent,
        # an `IdentityFile` would offer other keys): this host record says everything, agent forwarding is off.
        config=Config(overrides={"load_ssh_configs": False, "forward_agent": False}),
        forward_agent=False,
    )
    client = conn.client
    if known_hosts.exists():
        client.load_host_keys(str(known_hosts))
    policy = PinOnFirstContact(known_hosts, say, instance_console(record))
    client.set_missing_host_key_policy(policy)
    try:
        conn.open()
    except paramiko.BadHostKeyException as exc:
        raise HostKeyMismatch(
            f"SSH host key of {record.host}:{record.port} changed: pinned {exc.expected_key.get_name()} "
            f"{exc.expected_key.fingerprint}, got {exc.key.get_name()} {exc.key.fingerprint}. Refusing to connect. "
            f"If the host was re-provisioned, remove its line from {known_hosts}."
        ) from exc
    if policy.check is not None:  # first contact: the verdict goes beside the host's other results
        HostStore(known_hosts.parent).save_json(record.name, "host_key", policy.check.to_dict())
    return conn


def instance_console(record: HostRecord) -> Callable[[], str | None] | None:
    """How to read the host's console output, when the host is an EC2 instance (fetched only on first contact)."""
    if not record.instance_id:
        return None
    target = AwsTarget.resolve(record.region, record.endpoint_url)
    return lambda: console_output(target, record.instance_id)


@dataclass
class RemoteHost:
    """One connected host: command runner and file helpers, aware of the prefix and of sudo."""

    conn: Connection
    prefix: str = ""
    root: bool = True  # run as root (else through `sudo -n`)

    def login_user(self) -> str:
        """The name this connection logged in as (never through sudo: there it would be root)."""
        name = self.run("id -un").stdout.strip()
        if not name:
            raise RemoteError("`id -un` printed nothing: cannot tell which user this login is")
        return name

    def path(self, absolute: str) -> str:
        if not absolute.startswith("/"):
            raise ValueError(f"remote path {absolute!r} must be absolute")
        return posixpath.join(self.prefix, absolute.lstrip("/")) if self.prefix else absolute

    def run(self, command: str, *, sudo: bool = False, check: bool = True, timeout: float | None = None) -> Any:
        cmd = command if (self.root or not sudo) else f"sudo -n sh -c {shlex.quote(command)}"
        result = self.conn.run(cmd, hide=True, warn=True, in_stream=False, timeout=timeout)
        if check and result.exited != 0:
            raise RemoteError(f"`{command}` exited {result.exited}: {(result.stderr or result.stdout).strip()}")
        return result

    def read_text(self, absolute: str) -> str | None:
        """Contents of a (prefixed) file, or None when it does not exist."""
        path = self.path(absolute)
        sftp = self.conn.sftp()
        try:
            with sftp.open(path, "r") as f:
                return f.read().decode()
        except FileNotFoundError:
            return None
        except PermissionError:
            r = self.run(f"cat {shlex.quote(path)}", sudo=True, check=False)
            return r.stdout if r.exited == 0 else None

    def write_text(self, absolute: str, content: str, mode: int = 0o644) -> None:
        """Write a (prefixed) file atomically with ``mode`` (through a temp file + install when not root)."""
        path = self.path(absolute)
        sftp = self.conn.sftp()
        if self.root:
            self.run(f"mkdir -p {shlex.quote(posixpath.dirname(path))}")
            tmp = f"{path}.caerus-tmp"
            with sftp.open(tmp, "w") as f:
                f.write(content.encode())
            sftp.chmod(tmp, mode)
            self.run(f"mv -f {shlex.quote(tmp)} {shlex.quote(path)}")
            return
        # Staged in a private folder from mktemp (0700, unpredictable name), never a guessable /tmp path another
        # local user could plant a symlink at; the folder goes once the file is installed.
        staging = self.run("mktemp -d").stdout.strip()
        if not staging.startswith("/"):
            raise RemoteError(f"`mktemp -d` printed {staging!r}, not a folder")
        tmp = posixpath.join(staging, "file")
        try:
            with sftp.open(tmp, "w") as f:
                f.write(content.encode())
            self.run(f"install -D -m {mode:o} {shlex.quote(tmp)} {shlex.quote(path)}", sudo=True)
        finally:
            self.run(f"rm -rf {shlex.quote(staging)}", check=False)

    def mode(self, absolute: str) -> int | None:
        """Permission bits of a (prefixed) file, or None when it does not exist."""
        try:
            return stat.S_IMODE(self.conn.sftp().stat(self.path(absolute)).st_mode or 0)
        except FileNotFoundError:
            return None

    def chmod(self, absolute: str, mode: int) -> None:
        self.run(f"chmod {mode:o} {shlex.quote(self.path(absolute))}", sudo=True)

    def exists(self, absolute: str) -> bool:
        return self.run(f"test -e {shlex.quote(self.path(absolute))}", check=False).exited == 0

    def close(self) -> None:
        self.conn.close()


def open_host(record: HostRecord, known_hosts: Path, say: Callable[[str], None] = print) -> RemoteHost:
    conn = connect(record, known_hosts, say)
    uid = conn.run("id -u", hide=True, in_stream=False).stdout.strip()
    return RemoteHost(conn=conn, prefix=record.remote_prefix, root=uid == "0")
