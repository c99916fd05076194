"""runtime/malloc.py: with the thresholds fixed, buffers of megabytes freed and allocated again reuse the heap's pages
instead of faulting in fresh ones each time (glibc; counted in minor page faults, not timed)."""

from __future__ import annotations

import resource

from caerus.runtime import malloc

MB2 = 2 << 20
HELD = 8  # buffers alive together, then all freed: as a reader's chunk, its copies and columns are
ROUNDS = 20
PAGES = HELD * MB2 // 4096  # pages touched a round


def _faults_over(rounds: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        held = [bytearray(MB2) for _ in range(HELD)]  # zero-filled: every page touched
        del held
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_megabyte_buffers_reuse_the_heap_once_the_thresholds_are_fixed() -> None:
    mallopt = malloc.mallopt()
    assert mallopt is not None  # glibc (Debian): the knob exists
    # glibc's starting thresholds (128 KiB), held fixed: every buffer is a fresh mapping, every page a fault
    assert mallopt(malloc.M_MMAP_THRESHOLD, 128 << 10) and mallopt(malloc.M_TRIM_THRESHOLD, 128 << 10)
    assert _faults_over(ROUNDS) > ROUNDS * PAGES // 2
    assert malloc.keep_freed_memory()
    _faults_over(2)  # the heap grows to hold a round's buffers
    assert _faults_over(ROUNDS) < PAGES // 4
