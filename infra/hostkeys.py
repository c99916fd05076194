"""First contact with a host: its SSH host key checked against what the instance printed to its own console.

At first boot cloud-init prints the host's keys to the serial console, between ``-----BEGIN SSH HOST KEY
FINGERPRINTS-----`` / ``-----END ...-----`` (``256 SHA256:... root@ip-... (ED25519)``) and ``-----BEGIN SSH HOST
KEY KEYS-----`` (``ssh-ed25519 AAAA... root@ip-...``); Amazon Linux prefixes each line with ``ec2:``. EC2 serves
that console through ``GetConsoleOutput`` to whoever owns the instance, over the AWS API rather than the network
path SSH takes, so a key that matches it is the instance's own, not a man in the middle's.

The policy (``--host-key``) decides what happens without fingerprints to compare:

- ``verified`` (the default for an instance this project provisioned): the key must be among the expected
  fingerprints, else the connection is refused (:class:`HostKeyUnverified`, one line naming why: console
  unreadable and the AWS error code, no fingerprints printed yet or scrolled out, not an EC2 instance).
- ``tofu``: trusted on first use, pinned, and the record and the output say so.

Either way a key the expected fingerprints do not list is refused (:class:`HostKeyNotOnConsole`). The expected
fingerprints are read by :func:`read_console` (polling a young instance's console until cloud-init's block
appears, up to a deadline) or come from the host record, where they were kept when first read (so a connection
after configure's reboot, when the block has scrolled out, still verifies).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

# ssh key type -> the name cloud-init prints in parentheses
KEY_TYPES = {
    "ssh-ed25519": "ED25519",
    "ecdsa-sha2-nistp256": "ECDSA",
    "ecdsa-sha2-nistp384": "ECDSA",
    "ecdsa-sha2-nistp521": "ECDSA",
    "ssh-rsa": "RSA",
    "ssh-dss": "DSA",
}
FINGERPRINT_LINE = re.compile(r"\b\d+\s+(SHA256:[A-Za-z0-9+/]+=*)\s+.*\((\w+)\)\s*$")
KEY_LINE = re.compile(r"\b(ssh-ed25519|ecdsa-sha2-nistp\d+|ssh-rsa|ssh-dss)\s+([A-Za-z0-9+/]+=*)")


POLICIES = ("verified", "tofu")
TOFU_HINT = "use --host-key tofu to trust on first use"


class HostKeyNotOnConsole(RuntimeError):
    """The host presented a key its instance's console does not list: possibly not the instance at all."""


class HostKeyUnverified(RuntimeError):
    """Policy ``verified`` and no fingerprints to verify the key against (the message says why)."""


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"--host-key {policy!r} is not one of {' | '.join(POLICIES)}")
    return policy


def fingerprint_sha256(blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a public key blob (base64 without padding)."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class ConsoleKeys:
    """Fingerprints per key kind (ED25519, ECDSA, RSA) found in one console output."""

    fingerprints: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.fingerprints.values())

    def all(self) -> frozenset[str]:
        return frozenset().union(*self.fingerprints.values()) if self.fingerprints else frozenset()


def _block(lines: list[str], name: str) -> list[str]:
    begin, end = f"-----BEGIN SSH HOST KEY {name}-----", f"-----END SSH HOST KEY {name}-----"
    done: list[str] = []  # the last complete block wins (a reboot prints it again); a cut-off one counts not
    current: list[str] | None = None
    for line in lines:
        if begin in line:
            current = []
        elif end in line and current is not None:
            done, current = current, None
        elif current is not None:
            current.append(line)
    return done


def parse_console(text: str) -> ConsoleKeys:
    """The host key fingerprints in a console output, from either cloud-init block (both when present)."""
    lines = text.replace("\r", "").splitlines()
    found: dict[str, set[str]] = {}
    for line in _block(lines, "FINGERPRINTS"):
        m = FINGERPRINT_LINE.search(line)
        if m:
            found.setdefault(m.group(2).upper(), set()).add(m.group(1).rstrip("="))
    for line in _block(lines, "KEYS"):
        m = KEY_LINE.search(line)
        if m:
            try:
                blob = base64.b64decode(m.group(2), validate=True)
            except ValueError:
                continue  # a console line cut short: nothing to compare
            found.setdefault(KEY_TYPES[m.group(1)], set()).add(fingerprint_sha256(blob))
    return ConsoleKeys({k: frozenset(v) for k, v in found.items()})


@dataclass
class HostKeyCheck:
    """How a host's key came to be pinned: what was presented, what the console said, the verdict."""

    host: str
    key_type: str
    fingerprint: str
    status: str  # verified | trusted-on-first-use
    detail: str
    console_fingerprints: int = 0
    at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ConsoleRead:
    """What reading the console gave: fingerprints, or (none found) the one-phrase reason why not."""

    keys: ConsoleKeys
    problem: str = ""
    polls: int = 1


def _error_name(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError (AccessDenied, UnauthorizedOperation...), else the type."""
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
    return str(code or type(exc).__name__)


def read_console(console: Callable[[], str | None], wait_s: float = 0.0, poll_s: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> ConsoleRead:
    """Read the console until cloud-init's fingerprint block is there or ``wait_s`` has passed (0: one read).
    An error reading it (no permission, AWS unreachable) ends at once: waiting would not fix it."""
    deadline = clock() + wait_s
    polls = 0
    while True:
        polls += 1
        try:
            text = console()
        except Exception as exc:  # the check cannot be made; the reason is what the operator needs
            return ConsoleRead(ConsoleKeys(), f"console output unreadable ({_error_name(exc)})", polls)
        keys = parse_console(text or "")
        if keys.count:
            return ConsoleRead(keys, "", polls)
        if clock() >= deadline:
            waited = f" after waiting {wait_s:.0f} s" if wait_s > 0 else ""
            return ConsoleRead(keys, "no host key fingerprints in the console output (not printed yet, or "
                                     f"scrolled out after a reboot){waited}", polls)
        sleep(min(poll_s, max(0.0, deadline - clock())))


def keys_to_dict(keys: ConsoleKeys) -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in sorted(keys.fingerprints.items())}


def keys_from_dict(data: object) -> ConsoleKeys:
    """Fingerprints kept in a host record; anything malformed counts as none (never as a match)."""
    if not isinstance(data, dict):
        return ConsoleKeys()
    out: dict[str, frozenset[str]] = {}
    for kind, fps in data.items():
        if isinstance(kind, str) and isinstance(fps, list):
            good = frozenset(f for f in fps if isinstance(f, str) and f.startswith("SHA256:"))
            if good:
                out[kind] = good
    return ConsoleKeys(out)


def check_first_contact(host: str, key_type: str, key_blob: bytes, expected: ConsoleKeys | None,
                        problem: str = "", policy: str = "verified",
                        source: str = "the instance's console output") -> HostKeyCheck:
    """The verdict on a key seen for the first time. ``expected`` are the fingerprints to compare with (from the
    console or the host record); None or empty means there is nothing to compare, for the reason ``problem``:
    refused under ``verified``, trusted on first use (and said so) under ``tofu``."""
    check_policy(policy)
    fp = fingerprint_sha256(key_blob)
    kind = KEY_TYPES.get(key_type, key_type)
    if expected is None or expected.count == 0:
        why = problem or "no host key fingerprints to compare"
        if policy == "verified":
            raise HostKeyUnverified(f"host key of {host} not verified: {why} — {TOFU_HINT}")
        return HostKeyCheck(host, key_type, fp, "trusted-on-first-use", f"--host-key tofu: {why}")
    if fp in expected.fingerprints.get(kind, frozenset()):
        return HostKeyCheck(host, key_type, fp, "verified", f"{kind} key matches {source}", expected.count)
    listed = ", ".join(f"{k} {' '.join(sorted(v))}" for k, v in sorted(expected.fingerprints.items()))
    raise HostKeyNotOnConsole(
        f"SSH host key of {host} is {key_type} {fp}, which {source} does not list "
        f"(it lists {listed}). Refusing to connect and pinning nothing: this may not be your instance.")
