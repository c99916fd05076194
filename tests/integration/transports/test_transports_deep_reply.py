"""A pathologically nested reply cannot crash a process that carries the signing stack (a real interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = """
import sys
import caerus.venues.hyperliquid.signing  # the signing stack: some eth-account / py_ecc versions raise the limit
sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))  # as high as those versions set it, whichever is here
import msgspec
from caerus.net.untrusted import decode_untrusted
try:
    decode_untrusted(b"[" * (1 << 20))
except msgspec.DecodeError as exc:
    print("refused:", exc)
"""


def test_a_1_mib_nested_reply_is_refused_not_a_segfault() -> None:
    res = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])  # -11 was SIGSEGV
    assert "refused: JSON nested 1048576 levels deep" in res.stdout
