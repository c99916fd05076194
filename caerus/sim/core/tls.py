"""TLS material for the venue emulator: a CA the feeds trust (ca.pem) and the server certificate it signs.

Everything is made with ``trustme`` and written to the emulator's ``--cert-dir``:

* ``ca.pem`` / ``ca.key``: the emulator CA. Reused when both exist, so a feed that loaded ca.pem keeps trusting
  an emulator restarted with the same folder.
* ``server.pem`` / ``server.key``: leaf certificate (+ chain) for 127.0.0.1, ::1 and localhost, fresh each start.
* ``rogue-server.pem`` / ``rogue-server.key``: a certificate for the same names from a CA nobody trusts, served by
  the ``tls-failure`` scenario so the client's verification fails.

Private keys are written 0600 and the folder is 0700.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme

SERVER_NAMES = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class CertFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path
    rogue_cert_file: Path
    rogue_key_file: Path


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _load_or_create_ca(cert_dir: Path) -> trustme.CA:
    ca_pem, ca_key = cert_dir / "ca.pem", cert_dir / "ca.key"
    if ca_pem.exists() and ca_key.exists():
        try:
            return trustme.CA.from_pem(ca_pem.read_bytes(), ca_key.read_bytes())
        except ValueError as exc:  # unreadable leftovers: replace them rather than fail later in a handshake
            raise ValueError(f"{ca_pem} / {ca_key} exist but cannot be loaded as a CA: {exc}") from exc
    ca = trustme.CA(organization_name="caerus venue emulator")
    _write(ca_key, ca.private_key_pem.bytes(), 0o600)
    _write(ca_pem, ca.cert_pem.bytes(), 0o644)
    return ca


def make_certificates(cert_dir: str | Path) -> CertFiles:
    """Create (or reuse) the CA and issue fresh server certificates into ``cert_dir``."""
    d = Path(cert_dir)
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    ca = _load_or_create_ca(d)
    leaf = ca.issue_cert(*SERVER_NAMES)
    files = CertFiles(
        ca_file=d / "ca.pem",
        cert_file=d / "server.pem",
        key_file=d / "server.key",
        rogue_cert_file=d / "rogue-server.pem",
        rogue_key_file=d / "rogue-server.key",
    )
    _write(files.key_file, leaf.private_key_pem.bytes(), 0o600)
    _write(files.cert_file, b"".join(b.bytes() for b in leaf.cert_chain_pems), 0o644)
    rogue = trustme.CA(organization_name="untrusted rogue CA").issue_cert(*SERVER_NAMES)
    _write(files.rogue_key_file, rogue.private_key_pem.bytes(), 0o600)
    _write(files.rogue_cert_file, b"".join(b.bytes() for b in rogue.cert_chain_pems), 0o644)
    return files


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


def client_context(ca_file: str | Path) -> ssl.SSLContext:
    """What a feed uses: verify the emulator's certificate against ``ca_file`` (hostname checked)."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    return ctx
