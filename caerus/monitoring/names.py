"""Every metric name the exporter serves: the one list the exporter, the dashboard test and docs agree on.

Names follow Prometheus conventions (``caerus_..._total`` for counters, ``_seconds`` / ``_bytes`` for units). A
histogram NAME is also served as NAME_bucket, NAME_sum and NAME_count.
"""

from __future__ import annotations

COUNTERS = {
    "caerus_feed_messages_total": "frames the feed received",
    "caerus_books_total": "valid books published (feeds) or read (strategy, execution)",
    "caerus_feed_rejects_total": "books rejected by the feed's validation, by reason",
    "caerus_feed_reconnects_total": "feed reconnections",
    "caerus_feed_stale_total": "times a feed connection went stale",
    "caerus_feed_instrument_stale_total": "times one instrument went stale on a live connection",
    "caerus_untradeable_seconds_total": "seconds a venue's book could not be traded on",
    "caerus_fires_total": "orders the strategy fired",
    "caerus_decisions_total": "decisions the strategy evaluated",
    "caerus_orders_total": "orders the execution engine handled, by outcome",
    "caerus_risk_rejects_total": "orders the risk checks refused, by reason",
    "caerus_ring_lost_total": "ring records a reader lost to lapping, by ring",
    "caerus_ring_full_total": "records a writer could not publish (ring full)",
    "caerus_process_errors_total": "errors a process counted",
    "caerus_exporter_connections_refused_total": "connections the exporter refused: every worker was busy",
    "caerus_exporter_connections_timed_out_total": "connections the exporter closed at their deadline",
}
GAUGES = {
    "caerus_up": "1 while the process's counter block is attached",
    "caerus_halted": "1 while the process is halted, by cause (KILL_FILE is the kill switch)",
    "caerus_feed_connected": "live connections of the feed",
    "caerus_feed_last_receive_timestamp_seconds": "wall time the feed last received a frame",
    "caerus_position": "the process's position",
    "caerus_process_resident_memory_bytes": "resident memory of each fleet process",
    "caerus_counter": "every counter of every block, by name (for what has no named metric)",
    "caerus_latency_window_seconds": "latency percentile over a trailing window, from the HDR intervals",
    "caerus_clock_offset_seconds": "chronyd's last offset of the system clock",
    "caerus_host_expiry_timestamp_seconds": "wall time the host's time-to-live runs out",
    "caerus_exporter_hlog_bad_lines": "malformed .hlog lines the exporter skipped",
}
HISTOGRAMS = {
    "caerus_latency_seconds": "latency since the session started, from the HDR intervals",
}
# Prometheus histogram buckets for microsecond latencies (seconds, as Prometheus expects)
BUCKETS_US = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 50_000, 100_000, 1_000_000)
WINDOWS_S = (10, 60)
QUANTILES = (0.5, 0.99, 0.999)


def exported() -> set[str]:
    """Every series name a scrape can carry (histograms with their _bucket/_sum/_count)."""
    out = set(COUNTERS) | set(GAUGES)
    for h in HISTOGRAMS:
        out |= {h, f"{h}_bucket", f"{h}_sum", f"{h}_count"}
    return out
