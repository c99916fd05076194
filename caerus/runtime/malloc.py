"""glibc malloc's thresholds for a process: where its big blocks come from and when freed memory goes back.

By default glibc serves a block of 128 KiB or more with its own ``mmap`` (raising that threshold as such blocks are
freed, up to 32 MiB) and gives the top of its heap back to the kernel once 128 KiB of it are free. A process that
allocates and frees buffers of megabytes in a loop (a reader's text chunks, decoded columns) then asks the kernel for
fresh pages again and again, and each first touch of a page is a fault and a page of zeroing: the import's reader
spent 0.25-0.28 us a frame in the kernel that way (0.08 minor faults a frame), 0.05-0.08 with the thresholds below
(no faults), and less user time too (the pages it reuses are in cache).

:func:`keep_freed_memory` fixes both thresholds (``mallopt``): blocks under 32 MiB from the heap, and up to 256 MiB
of free heap kept. The process's peak is what it was; it holds on to memory it had, it does not take more. Only for
a process whose working set is bounded (a reader, one chunk at a time): a no-op on a C library without ``mallopt``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for M_MMAP_THRESHOLD on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
TRIM_THRESHOLD = 256 << 20


def mallopt() -> Callable[[int, int], int] | None:
    """libc's ``mallopt(param, value)`` (returns 1 when it took the value), or None when this libc has none."""
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn


def keep_freed_memory() -> bool:
    """Serve blocks under MMAP_THRESHOLD from the heap and keep up to TRIM_THRESHOLD of it free (module docstring).
    True when both took effect."""
    fn = mallopt()
    if fn is None:
        return False
    return bool(fn(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and fn(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
