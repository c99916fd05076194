"""The order path as a waterfall: from the venue's send to the order leaving the host, segment by segment.

The path of a Binance-triggered order (Binance leads; its books trigger the orders) passes the points in
:data:`POINTS`. Each segment between two neighbouring points is drawn from its *own* histogram, with its sample
count; a segment this session has no histogram for is listed with the reason, never filled in from another
number. Metrics that span several segments (tick-to-decision, wire-to-decision, decision-to-send) are drawn as
separate bars from where they start, so a reader sees what each headline covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caerus.metrics import hdr

# The transmit stamp is taken inside the send syscall, as the packet reaches the device: "kernel out" comes before
# "t_sent" (the syscall returned), unless the kernel had to queue the bytes.
POINTS = ("scheduled", "venue send", "kernel in", "t_recv", "t_publish", "t_seen", "t_decision", "t_pickup",
          "kernel out", "t_sent")


@dataclass(frozen=True)
class Segment:
    """One stretch of the path: from ``start`` to ``end`` (points), measured by ``tag`` (None: not measured)."""

    label: str
    start: str
    end: str
    tag: str | None
    missing: str  # why a session can lack it


#: neighbouring points, in path order
CHAIN: tuple[Segment, ...] = (
    Segment("emulator lateness", "scheduled", "venue send", "emulator_lateness.binance",
            "live venues: the venue's own lateness is not visible to us"),
    Segment("wire", "venue send", "kernel in", None,
            "no send stamp from the venue on our clock (on loopback it is inside information age)"),
    Segment("stack", "kernel in", "t_recv", "stack.binance",
            "the Binance feed read with websockets' asyncio client: no kernel receive stamp"),
    Segment("feed internal", "t_recv", "t_publish", "feed_internal.binance", "no feed samples"),
    Segment("book hop", "t_publish", "t_seen", "book_hop", "no strategy samples"),
    Segment("decision", "t_seen", "t_decision", "seen_to_decision", "no fires"),
    Segment("queue transit", "t_decision", "t_pickup", "queue_transit", "no execution samples"),
    Segment("engine to kernel out", "t_pickup", "kernel out", "pickup_to_wire_out",
            "no kernel transmit stamp: orders went to the paper or null transport (no socket)"),
    Segment("send returns", "kernel out", "t_sent", "sent_after_wire_out",
            "no kernel transmit stamp: orders went to the paper or null transport (no socket)"),
)

#: metrics spanning several segments
SPANS: tuple[Segment, ...] = (
    Segment("tick-to-decision (fires)", "t_recv", "t_decision", "tick_to_decision", "no fires"),
    Segment("wire-to-decision (fires)", "kernel in", "t_decision", "wire_to_decision",
            "no fire on a book with a kernel receive stamp"),
    Segment("decision-to-send", "t_decision", "t_sent", "decision_to_wire", "no order sent"),
    Segment("engine to send", "t_pickup", "t_sent", "pickup_to_sent", "no order sent"),
    Segment("wire-to-wire (fires)", "kernel in", "kernel out", "wire_to_wire",
            "needs both kernel stamps: a busy-client feed (in) and a live order socket (out)"),
)


@dataclass(frozen=True)
class Row:
    segment: Segment
    span: bool
    n: int
    p50: float | None
    p99: float | None
    offset_p50: float  # where the bar starts: the summed p50s of the measured chain segments before its start

    @property
    def measured(self) -> bool:
        return self.n > 0


def rows(metrics: dict[str, Any]) -> list[Row]:
    """The waterfall's rows from a session's merged histograms (``tag -> HdrHistogram``)."""
    at: dict[str, float] = {POINTS[0]: 0.0}
    out: list[Row] = []
    pos = 0.0
    for seg in CHAIN:
        n, p50, p99 = _stats(metrics, seg.tag)
        out.append(Row(seg, False, n, p50, p99, pos))
        pos += p50 or 0.0
        at[seg.end] = pos
    for seg in SPANS:
        n, p50, p99 = _stats(metrics, seg.tag)
        out.append(Row(seg, True, n, p50, p99, at[seg.start]))
    return out


def _stats(metrics: dict[str, Any], tag: str | None) -> tuple[int, float | None, float | None]:
    if tag is None or tag not in metrics:
        return 0, None, None
    h = metrics[tag]
    n = int(h.get_total_count())
    if not n:
        return 0, None, None
    return n, float(hdr.percentile(h, 50.0)), float(hdr.percentile(h, 99.0))


def missing_sentence(path_rows: list[Row]) -> str:
    """One plain sentence naming the segments this session could not measure, and why."""
    gaps = [f"{r.segment.label} ({r.segment.missing})" for r in path_rows if not r.measured]
    return "Not measured in this session: " + "; ".join(gaps) + "." if gaps else "Every segment was measured."
