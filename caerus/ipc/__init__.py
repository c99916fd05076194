"""Lock-free shared-memory IPC: segments, SWMR broadcast ring, SPSC lanes, MPSC order ring, counters, wait policies."""
