"""First contact with a host: its SSH host key checked against what the instance printed to its own console.

At first boot cloud-init prints the host's keys to the serial console, between ``-----BEGIN SSH HOST KEY
FINGERPRINTS-----`` / ``-----END ...-----`` (``256 SHA256:... root@ip-... (ED25519)``) and ``-----BEGIN SSH HOST
KEY KEYS-----`` (``ssh-ed25519 AAAA... root@ip-...``); Amazon Linux prefixes each line with ``ec2:``. EC2 serves
that console through ``GetConsoleOutput`` to whoever owns the instance, over the AWS API rather than the network
path SSH takes, so a key that matches it is the instance's own, not a man in the middle's.

:func:`check_first_contact` decides: the presented key is among the console's fingerprints -> verified; the
console lists fingerprints but not this one -> refused (:class:`HostKeyNotOnConsole`, nothing pinned); no
fingerprints to compare (the console is not readable yet, the host is not an EC2 instance, AWS is unreachable)
-> trusted on first use, and the record says so. Either way the outcome is recorded beside the host's results.
"""

from __future__ import annotations

import base64
import hashlib
import re
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


class HostKeyNotOnConsole(RuntimeError):
    """The host presented a key its instance's console does not list: possibly not the instance at all."""


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


def check_first_contact(host: str, key_type: str, key_blob: bytes,
                        console: Callable[[], str | None] | None) -> HostKeyCheck:
    """The verdict on a key seen for the first time. ``console`` returns the instance's console output (None when
    the host is not an instance); it may raise, which counts as an unreadable console."""
    fp = fingerprint_sha256(key_blob)
    kind = KEY_TYPES.get(key_type, key_type)
    if console is None:
        return HostKeyCheck(host, key_type, fp, "trusted-on-first-use", "not an EC2 instance: no console to check")
    try:
        text = console()
    except Exception as exc:  # AWS unreachable, no permission: the check cannot be made, and the record says why
        return HostKeyCheck(host, key_type, fp, "trusted-on-first-use",
                            f"the console output could not be read: {type(exc).__name__}: {exc}")
    keys = parse_console(text or "")
    if keys.count == 0:
        return HostKeyCheck(host, key_type, fp, "trusted-on-first-use",
                            "no host key fingerprints in the console output (not printed yet, or no cloud-init)")
    if fp in keys.fingerprints.get(kind, frozenset()):
        return HostKeyCheck(host, key_type, fp, "verified", f"{kind} key matches the instance's console output",
                            keys.count)
    listed = ", ".join(f"{k} {' '.join(sorted(v))}" for k, v in sorted(keys.fingerprints.items()))
    raise HostKeyNotOnConsole(
        f"SSH host key of {host} is {key_type} {fp}, which the instance's console output does not list "
        f"(it lists {listed}). Refusing to connect and pinning nothing: this may not be your instance.")
