"""Live monitoring: the exporter that serves the fleet's counters and latencies to Prometheus (issue 31)."""
