"""The latency a verdict replays at, and the other latencies it prices the same model at.

Placeholder until the backtest's measured default profile lands (caerus.research.backtest.latency)."""

from __future__ import annotations

from pathlib import Path

from caerus.research.backtest.latency import LatencyModel


def _ns(text: str) -> int:
    from caerus.research.backtest.app import parse_latency

    return parse_latency(text)


def verdict_latency(latency_from: Path | None, const: str | None, wire: str | None) -> LatencyModel:
    wire_ns = _ns(wire) if wire is not None else 0
    if latency_from is not None:
        return LatencyModel.from_session(latency_from, wire_ns=wire_ns)
    if const is not None:
        return LatencyModel.constant(_ns(const), 300_000)
    return LatencyModel.constant(1_000_000, 300_000)


def latency_points(model: LatencyModel) -> list[tuple[str, LatencyModel]]:
    return [("ZERO (optimistic, not the fleet's)", LatencyModel.constant(0, 0))]
