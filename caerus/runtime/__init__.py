"""The process runtime every fleet process is built on: one skeleton, one GC policy, one kill switch.

* ``args``: the flags every fleet process takes (stats segment, metrics dir, wait policy, CPUs, attach timeout)
  and the one-line exit-2 report of a bad configuration.
* ``pinning``: CPU pinning with errors that name the flag (this thread, or every thread of the process).
* ``counters``: the live counter block, or an in-process stand-in when no stats segment is given.
* ``attach``: retry-attach to a peer's segment in slices a stop request can interrupt.
* ``supervisor``: kill switch (signal, kill file), error budget, process state.
* ``clock``: the housekeeping clock (one definition of "is housekeeping due", kept across loop re-entries).
* ``gcpolicy``: collect, freeze and disable the garbage collector for the hot loop; re-enable at exit.
* ``memwatch``: opt-in tracemalloc growth report (``CAERUS_TRACEMALLOC``) for finding what a process keeps.
* ``process``: the run skeleton -- GC policy around an error-counted loop with housekeeping.
* ``private_file``: reading a secret from a file (this user's own, mode 0600, checked on the descriptor read).

The trading processes (strategy, execution) use all of it; capture uses args/pinning/gcpolicy; the feed can use
``gcpolicy.hot_gc``, ``pinning``, ``counters`` and ``memwatch`` around its event loop (see docs/strategy-execution.md).
"""
