"""The order-path waterfall: segments from their own histograms, offsets along the path, gaps named."""

from __future__ import annotations

from caerus.metrics import hdr
from caerus.report import path


def _hist(*values: int) -> hdr.HdrHistogram:
    h = hdr.new_histogram()
    for v in values:
        h.record_value(v)
    return h


def test_measured_segments_chain_their_p50s_and_spans_start_at_their_point() -> None:
    metrics = {
        "emulator_lateness.binance": _hist(500_000),
        "stack.binance": _hist(20_000),
        "feed_internal.binance": _hist(2_000),
        "book_hop": _hist(1_000),
        "seen_to_decision": _hist(3_000),
        "queue_transit": _hist(4_000),
        "pickup_to_sent": _hist(50_000),
        "tick_to_decision": _hist(6_000),
        "decision_to_wire": _hist(54_000),
    }
    rows = {r.segment.label: r for r in path.rows(metrics)}
    near = lambda a, b: abs(a - b) <= b * 1e-3  # noqa: E731 - 3 significant digits
    assert rows["emulator lateness"].offset_p50 == 0.0
    assert near(rows["stack"].offset_p50, 500_000)  # the wire is not measured: it adds nothing
    assert near(rows["feed internal"].offset_p50, 520_000)
    assert near(rows["queue transit"].offset_p50, 526_000)
    assert near(rows["engine to send"].offset_p50, 530_000)  # now a span from t_pickup
    assert near(rows["tick-to-decision (fires)"].offset_p50, 520_000)  # spans start where their first point is
    assert near(rows["decision-to-send"].offset_p50, 526_000)
    assert rows["stack"].n == 1 and rows["stack"].p50 is not None and near(rows["stack"].p50, 20_000)
    unmeasured = {label for label, r in rows.items() if not r.measured}
    assert unmeasured == {"wire", "engine to kernel out", "send returns", "wire-to-decision (fires)",
                          "wire-to-wire (fires)"}
    sentence = path.missing_sentence(list(rows.values()))
    assert "wire (no send stamp" in sentence and "engine to kernel out (" in sentence


def test_the_kernel_out_segment_and_wire_to_wire_come_from_their_own_histograms() -> None:
    metrics = {"pickup_to_sent": _hist(50_000), "pickup_to_wire_out": _hist(45_000),
               "sent_after_wire_out": _hist(5_000), "wire_to_wire": _hist(90_000)}
    rows = {r.segment.label: r for r in path.rows(metrics)}
    assert rows["engine to kernel out"].measured and abs(rows["engine to kernel out"].p50 - 45_000) <= 45
    assert rows["send returns"].measured and rows["engine to send"].span and rows["engine to send"].measured
    assert rows["wire-to-wire (fires)"].measured and abs(rows["wire-to-wire (fires)"].p50 - 90_000) <= 90
    assert "transmit" not in path.missing_sentence(list(rows.values()))


def test_a_session_without_kernel_stamps_says_so_and_fills_nothing_in() -> None:
    metrics = {"feed_internal.binance": _hist(2_000), "tick_to_decision": _hist(6_000)}
    rows = {r.segment.label: r for r in path.rows(metrics)}
    assert rows["stack"].p50 is None and rows["stack"].n == 0
    assert rows["wire-to-decision (fires)"].p50 is None
    assert "asyncio client" in path.missing_sentence(list(rows.values()))
    assert path.missing_sentence([r for r in rows.values() if r.measured]) == "Every segment was measured."
