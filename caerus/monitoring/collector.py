"""The Prometheus collector: the fleet's counter blocks, RSS and .hlog latencies as metric families.

Everything is read from what the processes already publish (their shared counter blocks and 1 s interval logs),
so the hot processes do nothing new per message. Every series has the labels session, process, venue and
instrument; instrument is "all" except on a per-instrument latency (an ``inst.<NAME>.<tag>`` interval of a .hlog:
``instrument="<NAME>"``, metric and venue those of ``<tag>``). Counter blocks are attached lazily and re-attached
when a process restarts (the block's path then names another file).

Counters and RSS are read at scrape time (a copy of a few shared words and a /proc read each). The latency
families, which cost histogram arithmetic, are built by ``refresh()`` on the exporter's own loop and served
as built: a scrape then costs only its serialisation, so a niced exporter on a machine whose cores the fleet
busy-polls still answers within Prometheus' scrape timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.segment import SegmentError
from caerus.metrics.hdr import split_instrument_tag
from caerus.monitoring import names
from caerus.monitoring.latency import HlogFollower
from caerus.monitoring.session_files import FleetProcess, read_pids
from caerus.plan import feed_venue
from caerus.runtime.supervisor import HaltCause

BASE = ("session", "process", "venue", "instrument")
ALL = "all"
Family = CounterMetricFamily | GaugeMetricFamily  # the instrument label of a process-wide series


def venue_of(process: str, tag: str = "") -> str:
    """The venue a series belongs to: a feed's venue (every share of a split venue's), a tag's ``.venue`` suffix,
    else "all"."""
    if process.startswith("feed-"):
        return feed_venue(process) or process[len("feed-"):]
    if "." in tag:
        return tag.rsplit(".", 1)[1]
    return ALL


class FleetCollector(Collector):
    def __init__(self, session: str, session_dir: Path, fleet: list[FleetProcess]) -> None:
        self.session = session
        self.session_dir = session_dir
        self.fleet = fleet
        self.blocks: dict[str, CounterBlock] = {}
        self.last: dict[str, dict[str, Any]] = {}  # a process's last counts survive its exit
        self.hlogs = {p.name: HlogFollower(p.hlog) for p in fleet}
        self.lock = threading.Lock()  # prometheus_client serves scrapes from threads
        self.scrapes = 0  # collections served: the exporter lingers on stop until one more has been
        self.latency: list[Metric] = []  # the latency families as the last refresh() built them

    # -- reading ------------------------------------------------------------------------------------------------
    def _snapshots(self) -> dict[str, dict[str, Any]]:
        for p in self.fleet:
            if p.stats_segment is None:
                continue
            block = self.blocks.get(p.name)
            if block is not None and block.seg.stale_mapping():
                # the process exited or restarted: its final counts first (the mapping outlives the file), then
                # attach the new incarnation if there is one
                try:
                    self.last[p.name] = block.snapshot()
                    block.close()
                except (BufferError, ValueError, OSError):
                    pass
                block = None
                del self.blocks[p.name]
            if block is None:
                try:
                    block = self.blocks[p.name] = CounterBlock.attach(p.stats_segment, timeout=0)
                except (SegmentError, OSError, ValueError):
                    continue
            try:
                self.last[p.name] = block.snapshot()
            except (ValueError, OSError):
                self.blocks.pop(p.name, None)
        return self.last

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            yield from self._collect()
            self.scrapes += 1

    def _collect(self) -> Iterator[Metric]:
        snaps = self._snapshots()
        fams: dict[str, Family] = {}

        def fam(name: str, extra: tuple[str, ...] = ()) -> Family:
            if name not in fams:
                base = name.removesuffix("_total")
                doc = names.COUNTERS.get(name) or names.GAUGES[name]
                labels = [*BASE, *extra]
                fams[name] = (CounterMetricFamily(base, doc, labels=labels) if name in names.COUNTERS
                              else GaugeMetricFamily(name, doc, labels=labels))
            return fams[name]

        for proc, snap in snaps.items():
            labels = [self.session, proc, venue_of(proc), ALL]
            fam("caerus_up").add_metric(labels, 1.0 if proc in self.blocks else 0.0)
            for key, value in snap.items():
                fam("caerus_counter", ("name",)).add_metric([*labels, key], float(value))
            self._named(proc, snap, labels, fam)
        self._rss(fam)
        yield from fams.values()
        yield from self.latency

    def refresh(self) -> int:
        """Read the processes' new .hlog intervals and rebuild the latency families that scrapes serve; returns
        the number of scrapes served before the rebuilt families were in place (a later scrape sees them)."""
        families = list(self._latency())
        with self.lock:
            self.latency = families
            return self.scrapes

    def _named(self, proc: str, snap: dict[str, Any], labels: list[str],
               fam: Callable[..., Family]) -> None:
        """The counters that have a name of their own (the rest stay in caerus_counter)."""
        def put(name: str, key: str, scale: float = 1.0) -> None:
            if key in snap:
                fam(name).add_metric(labels, float(snap[key]) * scale)

        if proc.startswith("feed-"):
            put("caerus_feed_messages_total", "msgs")
            put("caerus_books_total", "books")
            put("caerus_feed_reconnects_total", "reconnects")
            put("caerus_feed_stale_total", "stale")
            put("caerus_feed_instrument_stale_total", "instrument_stale")
            put("caerus_untradeable_seconds_total", "untradeable_ns", 1e-9)
            put("caerus_feed_connected", "connected_now")
            if snap.get("last_t_recv_ns"):
                put("caerus_feed_last_receive_timestamp_seconds", "last_t_recv_ns", 1e-9)
            for key, value in snap.items():
                if key.startswith("reject."):
                    fam("caerus_feed_rejects_total", ("reason",)).add_metric([*labels, key[7:]], float(value))
        if proc == "strategy":
            put("caerus_fires_total", "orders")
            put("caerus_decisions_total", "decisions")
            put("caerus_ring_full_total", "ring_full")
            for key in ("books.binance", "books.hyperliquid"):
                if key in snap:
                    fam("caerus_books_total").add_metric([self.session, proc, key[6:], ALL], float(snap[key]))
            for key, ring in (("books.lost", "book"), ("exec.lost", "exec")):
                if key in snap:
                    fam("caerus_ring_lost_total", ("ring",)).add_metric([*labels, ring], float(snap[key]))
        if proc == "execution":
            put("caerus_books_total", "books")
            for key, value in snap.items():
                if key.startswith("outcome."):
                    fam("caerus_orders_total", ("outcome",)).add_metric([*labels, key[8:]], float(value))
                elif key.startswith("risk."):
                    fam("caerus_risk_rejects_total", ("reason",)).add_metric([*labels, key[5:]], float(value))
        if proc == "capture":
            for key, value in snap.items():
                if key.startswith("lost."):
                    fam("caerus_ring_lost_total", ("ring",)).add_metric([*labels, key[5:]], float(value))
        put("caerus_process_errors_total", "errors")
        put("caerus_position", "position")
        if "halt_cause" in snap:
            cause = int(snap["halt_cause"])
            for c in HaltCause:
                if c is not HaltCause.NONE:
                    fam("caerus_halted", ("cause",)).add_metric([*labels, c.name], 1.0 if cause == c else 0.0)

    def _rss(self, fam: Callable[..., Family]) -> None:
        for proc, pid in read_pids(self.session_dir).items():
            try:
                p = psutil.Process(pid)
                # an exited process not yet reaped by the session has no memory: no sample, rather than a 0
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
                rss = p.memory_info().rss
            except (psutil.Error, OSError):
                continue
            fam("caerus_process_resident_memory_bytes").add_metric(
                [self.session, proc, venue_of(proc), ALL], float(rss))

    def _latency(self) -> Iterator[Metric]:
        hist = HistogramMetricFamily("caerus_latency_seconds", names.HISTOGRAMS["caerus_latency_seconds"],
                                     labels=[*BASE, "metric"])
        win = GaugeMetricFamily("caerus_latency_window_seconds", names.GAUGES["caerus_latency_window_seconds"],
                                labels=[*BASE, "metric", "window", "quantile"])
        bad = GaugeMetricFamily("caerus_exporter_hlog_bad_lines", names.GAUGES["caerus_exporter_hlog_bad_lines"],
                                labels=["session", "process"])
        for proc, follower in self.hlogs.items():
            follower.poll()
            bad.add_metric([self.session, proc], float(follower.bad_lines))
            for tag, lat in follower.tags.items():
                # inst.<NAME>.<tag>: one instrument's share of <tag>, labelled with that instrument
                instrument, fleet_tag = split_instrument_tag(tag)
                metric = fleet_tag.rsplit(".", 1)[0] if "." in fleet_tag else fleet_tag
                labels = [self.session, proc, venue_of(proc, fleet_tag), instrument or ALL, metric]
                buckets, total_s = lat.buckets()
                hist.add_metric(labels, buckets, total_s)
                for w, qs in lat.window_quantiles().items():
                    for q, v in (qs or {}).items():
                        win.add_metric([*labels, f"{w}s", str(q)], v)
        yield hist
        yield win
        yield bad



class HostCollector(Collector):
    """The host's own series, served whether or not a session runs: chronyd's offset and the host's expiry."""

    def __init__(self, clock_offset: Callable[[], float | None] = lambda: None,
                 host_expiry: Path | None = None) -> None:
        self.clock_offset = clock_offset
        self.host_expiry = host_expiry

    def collect(self) -> Iterator[Metric]:
        offset = self.clock_offset()
        if offset is not None:
            g = GaugeMetricFamily("caerus_clock_offset_seconds", names.GAUGES["caerus_clock_offset_seconds"])
            g.add_metric([], offset)
            yield g
        expiry = self._host_expiry()
        if expiry is not None:
            g = GaugeMetricFamily("caerus_host_expiry_timestamp_seconds",
                                  names.GAUGES["caerus_host_expiry_timestamp_seconds"])
            g.add_metric([], expiry)
            yield g

    def _host_expiry(self) -> float | None:
        """The host's expiry from its file (absent, unreadable or not a number: no series, the alert stays quiet)."""
        if self.host_expiry is None:
            return None
        try:
            return float(self.host_expiry.read_text().strip())
        except (OSError, ValueError):
            return None
