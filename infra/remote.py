"""SSH to a host with Fabric, with the host key pinned in the state folder, plus file helpers for the steps.

Pinning: the state folder's ``known_hosts`` is the only trust store. First contact checks the host's key
against the fingerprints its instance printed to the EC2 console (:mod:`infra.hostkeys`), records the outcome
in ``hosts/<name>/host_key.json`` and pins the key; later contacts must present the same key or the connection
is refused with :class:`HostKeyMismatch` (a re-provisioned host at the same address needs ``invoke teardown`` or
the entry removed by hand). A first key the console does not list is refused and not pinned.

Before first contact the console is read (a young instance's is polled until cloud-init's block appears, up to
a deadline) and the fingerprints found are kept in the host record (``extra["host_key_fingerprints"]``), so a
later first contact (after configure's reboot, when the block has scrolled out) verifies against them. With
policy ``verified`` (``--host-key``; the default for an EC2 instance) nothing to compare refuses the connection
before it is opened, naming why; ``tofu`` trusts on first use and says so.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import paramiko
from fabric import Config, Connection

from infra.aws.clients import AwsTarget
from infra.aws.console import console_output
from infra.hostkeys import (
    TOFU_HINT,
    ConsoleKeys,
    HostKeyCheck,
    HostKeyNotOnConsole,
    HostKeyUnverified,
    check_first_contact,
    check_policy,
    fingerprint_sha256,
    keys_from_dict,
    keys_to_dict,
    read_console,
)
from infra.hosts import HostRecord, HostStore, write_private

FINGERPRINTS_KEY = "host_key_fingerprints"  # in HostRecord.extra: {"at": ISO time, "keys": {kind: [SHA256:...]}}
CONSOLE_YOUNG_S = 1200.0  # an instance launched this recently may not have printed its keys yet: wait for them
CONSOLE_WAIT_S = 300.0  # ... for at most this long (cloud-init prints them within a minute or two of boot)
CONSOLE_POLL_S = 10.0


class HostKeyMismatch(RuntimeError):
    """The host's SSH key was refused: it differs from the pinned key or from the expected fingerprints, or (policy
    ``verified``) there was nothing to verify it against."""


class RemoteError(RuntimeError):
    """A remote command failed; the message carries the command and its output."""


class PinOnFirstContact(paramiko.MissingHostKeyPolicy):
    """Check an unknown host's key against the expected fingerprints under ``policy``, then record it in the state
    folder's known_hosts (0600) and accept it; ``self.check`` keeps the verdict for the caller to record."""

    def __init__(self, known_hosts: Path, say: Callable[[str], None] = print,
                 expected: ConsoleKeys | None = None, problem: str = "", policy: str = "verified",
                 source: str = "the instance's console output") -> None:
        self.known_hosts = known_hosts
        self.say = say
        self.expected = expected
        self.problem = problem
        self.policy = check_policy(policy)
        self.source = source
        self.check: HostKeyCheck | None = None

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        try:
            check = check_first_contact(hostname, key.get_name(), key.asbytes(), self.expected, self.problem,
                                        self.policy, self.source)
        except (HostKeyNotOnConsole, HostKeyUnverified) as exc:
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


def known_hosts_name(record: HostRecord) -> str:
    return record.host if record.port == 22 else f"[{record.host}]:{record.port}"


def pinned_keys(known_hosts: Path, record: HostRecord) -> dict[str, paramiko.PKey]:
    """The host's pinned keys by type (empty: first contact still to come)."""
    if not known_hosts.exists():
        return {}
    found = paramiko.HostKeys(str(known_hosts)).lookup(known_hosts_name(record))
    return dict(found) if found is not None else {}


def host_key_policy(record: HostRecord, requested: str = "") -> str:
    """``--host-key`` as given, else ``verified`` for an EC2 instance (it has a console to verify against) and
    ``tofu`` for a host that is not one (a test host, a machine not provisioned here: no console exists)."""
    if requested:
        return check_policy(requested)
    return "verified" if record.instance_id else "tofu"


def stored_fingerprints(record: HostRecord) -> ConsoleKeys:
    kept = record.extra.get(FINGERPRINTS_KEY)
    return keys_from_dict(kept.get("keys") if isinstance(kept, dict) else None)


def keep_fingerprints(record: HostRecord, store: HostStore, keys: ConsoleKeys) -> None:
    """Keep the console's fingerprints in the host record (later first contacts verify against them)."""
    record.extra[FINGERPRINTS_KEY] = {"at": datetime.now(UTC).isoformat(timespec="seconds"),
                                      "keys": keys_to_dict(keys)}
    store.save(record)


def _young(record: HostRecord, now: datetime | None = None) -> bool:
    if not record.launched_at:
        return False
    try:
        launched = datetime.fromisoformat(record.launched_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    if launched.tzinfo is None:
        launched = launched.replace(tzinfo=UTC)
    return ((now or datetime.now(UTC)) - launched).total_seconds() < CONSOLE_YOUNG_S


def expected_fingerprints(record: HostRecord, store: HostStore, policy: str, say: Callable[[str], None] = print,
                          wait_s: float | None = None, poll_s: float | None = None,
                          ) -> tuple[ConsoleKeys | None, str, str]:
    """(fingerprints to verify the first key against or None, why there are none, where they came from). Kept
    fingerprints first; else the console, polled up to ``wait_s`` (default: CONSOLE_WAIT_S for a young instance
    under ``verified``, one read otherwise); found ones are kept in the record."""
    kept = stored_fingerprints(record)
    if kept.count:
        at = record.extra[FINGERPRINTS_KEY].get("at", "?")
        return kept, "", f"the fingerprints kept in the host record (read from the instance's console at {at})"
    console = instance_console(record)
    if console is None:
        return None, "not an EC2 instance: no console to check", ""
    if wait_s is None:
        wait_s = CONSOLE_WAIT_S if policy == "verified" and _young(record) else 0.0
    if wait_s > 0:
        say(f"reading {record.instance_id}'s console for its SSH host keys (up to {wait_s:.0f} s: a young instance "
            "may not have printed them yet)")
    read = read_console(console, wait_s, CONSOLE_POLL_S if poll_s is None else poll_s)
    if not read.keys.count:
        return None, read.problem, ""
    keep_fingerprints(record, store, read.keys)
    return read.keys, "", "the instance's console output"


def remember_console_fingerprints(record: HostRecord, store: HostStore, known_hosts: Path,
                                  say: Callable[[str], None] = print) -> ConsoleKeys:
    """Read the console now (configure calls this before its reboot, while cloud-init's block is still there) and
    keep the fingerprints in the record; a pinned key the console does not list is refused (HostKeyMismatch)."""
    kept = stored_fingerprints(record)
    if kept.count or not record.instance_id:
        return kept
    read = read_console(instance_console(record) or (lambda: None))
    if not read.keys.count:
        say(f"  host key fingerprints not kept: {read.problem}")
        return read.keys
    for kind, key in pinned_keys(known_hosts, record).items():
        fp = fingerprint_sha256(key.asbytes())
        if fp not in read.keys.all():
            raise HostKeyMismatch(f"the pinned SSH host key of {record.host} ({kind} {fp}) is not among the "
                                  f"instance's console fingerprints: refusing to go on")
    keep_fingerprints(record, store, read.keys)
    say(f"  kept {read.keys.count} host key fingerprint(s) from the console in the host record")
    return read.keys


def shell_words(command: str, what: str = "command") -> str:
    """A command given as words (an option such as ``--chronyc``, a state-folder value): split as a shell would,
    every word quoted, so ``;``, ``$(...)``, ``|`` or ``>`` in it are plain arguments, never shell syntax."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise RemoteError(f"{what} {command!r} cannot be split into words: {exc}") from None
    if not words:
        raise RemoteError(f"{what} is empty")
    return shlex.join(words)


def forget_host(known_hosts: Path, host: str, port: int) -> None:
    """Drop a host's pinned key (teardown: the address may be reused by another instance)."""
    if not known_hosts.exists():
        return
    name = host if port == 22 else f"[{host}]:{port}"
    lines = [ln for ln in known_hosts.read_text().splitlines(keepends=True) if ln.split(" ", 1)[0] != name]
    write_private(known_hosts, "".join(lines))


def connect(record: HostRecord, known_hosts: Path, say: Callable[[str], None] = print,
            timeout: float = 15.0, host_key: str = "") -> Connection:
    """An open Fabric connection to ``record``'s host, key auth only, host key pinned; ``host_key`` is the
    first-contact policy (``verified`` | ``tofu``; default per :func:`host_key_policy`)."""
    policy_name = host_key_policy(record, host_key)
    store = HostStore(known_hosts.parent)
    expected: ConsoleKeys | None = None
    problem = source = ""
    if not pinned_keys(known_hosts, record):  # first contact: what to verify the key against, read beforehand
        expected, problem, source = expected_fingerprints(record, store, policy_name, say)
        if expected is None and policy_name == "verified":  # refused before a connection is even opened
            raise HostKeyMismatch(f"host key of {record.host}:{record.port} not verified: {problem} — "
                                  f"{TOFU_HINT}")
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
    policy = PinOnFirstContact(known_hosts, say, expected, problem, policy_name, source or "the console")
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
        store.save_json(record.name, "host_key", policy.check.to_dict())
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


def open_host(record: HostRecord, known_hosts: Path, say: Callable[[str], None] = print,
              host_key: str = "") -> RemoteHost:
    conn = connect(record, known_hosts, say, host_key=host_key)
    uid = conn.run("id -u", hide=True, in_stream=False).stdout.strip()
    return RemoteHost(conn=conn, prefix=record.remote_prefix, root=uid == "0")
