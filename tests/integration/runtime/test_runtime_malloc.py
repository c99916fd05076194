"""runtime/malloc.py: with the thresholds fixed, buffers of megabytes freed and allocated again reuse the heap's pages
instead of faulting in fresh ones each time (glibc; counted in minor page faults, not timed). Measured in a fresh
process: what a process allocated and freed before decides where its next buffers come from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CHILD = """
import json, resource
from caerus.runtime import malloc

MB2, HELD, ROUNDS = 2 << 20, 8, 20  # eight 2 MiB buffers alive together, then all freed, as a reader's chunk and
                                    # its copies and columns are


def faults_over(rounds):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        held = [bytearray(MB2) for _ in range(HELD)]  # zero-filled: every page touched
        del held
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


mallopt = malloc.mallopt()
# glibc's starting thresholds (128 KiB), held fixed: every buffer a fresh mapping
fixed = bool(mallopt(malloc.M_MMAP_THRESHOLD, 128 << 10) and mallopt(malloc.M_TRIM_THRESHOLD, 128 << 10))
default = faults_over(ROUNDS)
kept = malloc.keep_freed_memory()
faults_over(2)  # the heap grows to hold a round's buffers
print(json.dumps({"fixed": fixed, "kept": kept, "default": default, "after": faults_over(ROUNDS),
                  "pages": ROUNDS * HELD * MB2 // 4096}))
"""


def test_megabyte_buffers_reuse_the_heap_once_the_thresholds_are_fixed() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, cwd=REPO,
                         check=True)
    got = json.loads(out.stdout)
    assert got["fixed"] and got["kept"]  # glibc (Debian): the knob exists and took both values
    assert got["default"] > got["pages"] // 2  # a fault for (about) every page touched
    assert got["after"] < got["pages"] // 100  # about none
