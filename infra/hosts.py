"""The local state folder: one record per provisioned host, its private key, pinned SSH host keys, results.

Layout (default ``./.state``, override with ``--state-dir`` or ``CAERUS_STATE_DIR``; git-ignored)::

    .state/
      hosts/<name>.json          HostRecord (no secrets)
      hosts/<name>/plan.json     the fleet plan configure tuned the host for (deploy and bench reuse it)
      hosts/<name>/configure.json  last configure result (changes, planned steps, verification)
      keys/<name>_ed25519        the SSH private key (0600; never leaves this folder)
      known_hosts                pinned SSH host keys (first contact records, a mismatch refuses)

Every file this module writes is created 0600 inside 0700 folders: the folder holds a private key.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_STATE_DIR = ".state"


class StateError(RuntimeError):
    """A host record is missing or malformed."""


def state_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The state folder: explicit path, else $CAERUS_STATE_DIR, else ./.state (created 0700)."""
    root = Path(path or os.environ.get("CAERUS_STATE_DIR") or DEFAULT_STATE_DIR)
    _mkdir_private(root)
    return root


def _mkdir_private(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` as 0600, never leaving a wider-permission file around (create then rename)."""
    _mkdir_private(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, raw)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


@dataclass
class HostRecord:
    """What provision learned about one host; enough for configure/deploy/bench/collect/teardown to find it."""

    name: str
    host: str  # address SSH connects to (public IP on AWS, 127.0.0.1 in tests)
    user: str
    port: int = 22
    key_path: str = ""  # private key file (inside the state folder)
    instance_id: str = ""
    region: str = ""
    instance_type: str = ""
    launched_at: str = ""  # ISO-8601 UTC
    expires_at: str = ""  # ISO-8601 UTC (the TTL)
    hourly_usd: float = 0.0
    placement_group: str = ""  # empty when provisioned without one
    security_group_id: str = ""
    key_name: str = ""
    endpoint_url: str = ""  # AWS endpoint override used to create it (tests: moto)
    remote_prefix: str = ""  # test hosts: where "/" is on the host (files are rendered under it)
    deployed: dict[str, Any] = field(default_factory=dict)  # the last deploy: wheel, lock digest, verification
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostRecord:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise StateError(f"host record has unknown fields {unknown}")
        missing = [k for k in ("name", "host", "user") if not data.get(k)]
        if missing:
            raise StateError(f"host record lacks {missing}")
        return cls(**data)


class HostStore:
    """Reads and writes host records, keys and per-host results under one state folder."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = state_dir(root)

    # paths
    def record_path(self, name: str) -> Path:
        _check_name(name)
        return self.root / "hosts" / f"{name}.json"

    def host_dir(self, name: str) -> Path:
        _check_name(name)
        d = self.root / "hosts" / name
        _mkdir_private(d)
        return d

    def key_path(self, name: str) -> Path:
        _check_name(name)
        return self.root / "keys" / f"{name}_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    # records
    def save(self, record: HostRecord) -> Path:
        path = self.record_path(record.name)
        write_private(path, record.to_json() + "\n")
        return path

    def load(self, name: str) -> HostRecord:
        path = self.record_path(name)
        if not path.exists():
            have = ", ".join(self.names()) or "none"
            raise StateError(f"no host named {name!r} in {self.root}/hosts (known: {have}); run `invoke provision`")
        try:
            return HostRecord.from_dict(json.loads(path.read_text()))
        except (ValueError, TypeError) as exc:
            raise StateError(f"{path}: malformed host record: {exc}") from exc

    def names(self) -> list[str]:
        d = self.root / "hosts"
        return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []

    def delete(self, name: str) -> None:
        """Forget a host: record, key pair files and per-host results (a new host of that name starts clean)."""
        for path in (self.record_path(name), self.key_path(name), self.key_path(name).with_suffix(".pub")):
            path.unlink(missing_ok=True)
        self.clear_results(name)

    def clear_results(self, name: str) -> None:
        """Drop per-host results (plan, configure, deploy): they describe a machine that no longer exists."""
        d = self.root / "hosts" / name
        if d.is_dir():
            shutil.rmtree(d)

    # per-host results
    def save_json(self, name: str, what: str, data: Any) -> Path:
        path = self.host_dir(name) / f"{what}.json"
        write_private(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        return path

    def load_json(self, name: str, what: str) -> Any | None:
        path = self.host_dir(name) / f"{what}.json"
        return json.loads(path.read_text()) if path.exists() else None


def _check_name(name: str) -> None:
    if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise StateError(f"host name {name!r} must be non-empty letters, digits, '-' or '_'")
