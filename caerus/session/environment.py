"""The environment each process a local session starts is given: an allow-list, never the runner's whole
environment, so a secret exported in the operator's shell (``AWS_SECRET_ACCESS_KEY``, a ``CAERUS_*_SECRET``, a
venue key) never reaches the emulator, the feeds, capture or the trading processes.

What passes: the basics a Python process needs (``PATH``, ``HOME``, user, locale, ``TZ``, ``TMPDIR``, the CA
bundle overrides the live feeds' TLS may need, the interpreter's own ``PYTHON*`` settings listed below), the
repository on ``PYTHONPATH``, the non-secret ``CAERUS_*`` settings every fleet process reads (``CAERUS_SHM_DIR``,
``CAERUS_VENUE_PLUGINS``, ``CAERUS_TRACEMALLOC``) and, per process, the few more it alone reads (:data:`PER_PROCESS`).
Anything else a process needs comes from the session itself (``ProcessSpec.env``, e.g. the emulator's test wallet
*address*).

No process of a local session takes a secret from its environment: the emulator order desk hands the execution
engine its throwaway key in a 0600 credentials file (``--credentials``, caerus.session.order_desk), and the paper
and null transports need none. A secret added here would be readable in ``/proc/<pid>/environ`` for as long as the
process runs: give it as a file instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BASE = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "SSL_CERT_FILE", "SSL_CERT_DIR",  # where the system's CA bundle is, when not in the default place
})
BASE_PREFIXES = ("LC_",)
PYTHON = frozenset({
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONMALLOC", "PYTHONFAULTHANDLER",
    "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONTRACEMALLOC",
})
FLEET = frozenset({"CAERUS_SHM_DIR", "CAERUS_VENUE_PLUGINS", "CAERUS_TRACEMALLOC"})
PER_PROCESS: dict[str, frozenset[str]] = {
    "venue-sim": frozenset({"CAERUS_SIM_PLUGINS"}),  # emulator protocol plugins (module names)
    "execution": frozenset({"XDG_STATE_HOME"}),  # default folder of the Hyperliquid nonce reservation
}


def allowed(process: str) -> frozenset[str]:
    """The variable names ``process`` may inherit (besides ``LC_*``)."""
    return BASE | PYTHON | FLEET | PER_PROCESS.get(process, frozenset())


def child_env(process: str, extra: Iterable[tuple[str, str]] = (),
              parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for ``process``: the allow-listed part of ``parent`` (default: ours), the repository on
    ``PYTHONPATH`` (works without an install), unbuffered output, then ``extra`` (the session's own settings)."""
    parent = os.environ if parent is None else parent
    names = allowed(process)
    env = {k: v for k, v in parent.items() if k in names or k.startswith(BASE_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), parent.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(dict(extra))
    return env
