"""Report charts as PNG bytes (matplotlib, Agg backend): nines-axis percentile distributions, latency over time,
information-age histograms. Inputs are merged HdrHistograms and per-interval series from caerus.metrics.summary.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: choose the backend before pyplot is imported
import matplotlib.pyplot as plt
import numpy as np
from hdrh.histogram import HdrHistogram
from matplotlib.ticker import FixedLocator, NullLocator

from caerus.metrics import hdr
from caerus.metrics.summary import MetricData

NINES = (0.0, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)
DPI = 100


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _unit(max_ns: float) -> tuple[str, float]:
    if max_ns >= 5e8:
        return "s", 1e9
    if max_ns >= 5e5:
        return "ms", 1e6
    if max_ns >= 5e2:
        return "us", 1e3
    return "ns", 1.0


def _fmt(ns: float | None) -> str:
    """One value in its own unit (a bar's label: a 2 us segment next to a 2 ms one stays readable)."""
    if ns is None:
        return "-"
    unit, div = _unit(ns)
    return f"{ns / div:.3g} {unit}"


def nines_curve(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """(x = 1/(1-percentile), value ns) at every non-empty bucket; the last point sits one decade past the max."""
    counts = hdr.counts_view(h)
    nz = np.flatnonzero(counts)
    if nz.size == 0:
        return np.zeros(0), np.zeros(0)
    _, highest, _ = hdr.index_values(h)
    cum = np.cumsum(counts[nz].astype(np.float64))
    total = cum[-1]
    # percentile *reached before* each bucket and at it: a step curve like HdrHistogram's plotter
    frac = cum / total
    frac_before = np.concatenate([[0.0], frac[:-1]])
    xs = np.empty(nz.size * 2)
    ys = np.empty(nz.size * 2)
    xs[0::2] = frac_before
    xs[1::2] = frac
    vals = highest[nz].astype(np.float64)
    ys[0::2] = vals
    ys[1::2] = vals
    cap = 1.0 - 1.0 / (10 * max(total, 10))
    xs = np.minimum(xs, cap)
    return 1.0 / (1.0 - xs), ys


def nines_chart(series: Sequence[tuple[str, HdrHistogram]], title: str) -> bytes:
    """Percentile distributions on the nines axis, one line per (label, histogram)."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    mx = max((h.get_max_value() for _, h in series if h.total_count), default=1)
    unit, div = _unit(mx)
    max_x = 10.0
    for name, h in series:
        if not h.total_count:
            continue
        x, y = nines_curve(h)
        ax.plot(x, y / div, label=f"{name} (n={h.total_count:,})", linewidth=1.4)
        max_x = max(max_x, float(x.max()))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [1.0 / (1.0 - p) for p in NINES if 1.0 / (1.0 - p) <= max_x * 1.01]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{100 * p:g}%" for p in NINES[: len(ticks)]])
    ax.set_xlim(1.0, max_x)
    ax.set_xlabel("percentile")
    ax.set_ylabel(f"latency ({unit})")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center")
    return _png(fig)


def over_time_chart(metrics: Sequence[MetricData], t0_s: float, title: str) -> bytes:
    """Max (and p99) per interval against seconds since the session start, one panel per metric."""
    n = max(1, len(metrics))
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.9 * n + 0.6), sharex=True, squeeze=False)
    for ax, md in zip(axes[:, 0], metrics, strict=False):
        has = md.i_count > 0
        if not has.any():
            ax.text(0.5, 0.5, f"{md.tag}: no samples", transform=ax.transAxes, ha="center")
            continue
        unit, div = _unit(float(md.i_max[has].max()))
        t = md.t_start[has] - t0_s
        ax.plot(t, md.i_max[has] / div, drawstyle="steps-post", label="max", linewidth=1.0, color="C3")
        ax.plot(t, md.i_p99[has] / div, drawstyle="steps-post", label="p99", linewidth=1.0, color="C0")
        ax.set_ylabel(unit)
        ax.set_yscale("log")
        ax.set_title(md.tag, fontsize=9, loc="left")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("seconds since session start")
    fig.suptitle(title)
    return _png(fig)


def histogram_chart(series: Sequence[tuple[str, HdrHistogram]], title: str, bins: int = 60) -> bytes:
    """Value histograms (log-spaced bins), one panel per (label, histogram): the information-age shape."""
    n = max(1, len(series))
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 3.4), squeeze=False)
    for ax, (name, h) in zip(axes[0], series, strict=False):
        if not h.total_count:
            ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center")
            ax.set_title(name, fontsize=9)
            continue
        counts = hdr.counts_view(h)
        nz = np.flatnonzero(counts)
        _, _, median = hdr.index_values(h)
        vals = median[nz].astype(np.float64)
        unit, div = _unit(float(vals.max()))
        lo, hi = max(vals.min(), 1.0), max(vals.max(), 2.0)
        edges = np.geomspace(lo, hi * 1.0001, bins + 1)
        hist, _ = np.histogram(vals, bins=edges, weights=counts[nz].astype(np.float64))
        ax.bar(edges[:-1] / div, hist, width=np.diff(edges) / div, align="edge", color="C2", edgecolor="none")
        ax.set_xscale("log")
        ax.set_xlabel(unit)
        ax.set_ylabel("samples")
        ax.set_title(f"{name} (n={h.total_count:,})", fontsize=9)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    return _png(fig)


def rss_chart(series: Mapping[str, tuple[np.ndarray, np.ndarray]], title: str) -> bytes:
    """Resident memory per process (MB) against time since the first sample; minutes on the axis past 10 min, so
    a four-hour run reads as well as a one-minute one."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    span = max((float(t[-1]) for t, _ in series.values() if t.size), default=0.0)
    scale, unit = (60.0, "minutes") if span > 600 else (1.0, "seconds")
    for name, (t, mb) in series.items():
        ax.plot(t / scale, mb, label=name, linewidth=1.2)
    if not series:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center")
    else:
        ax.legend(loc="upper left", fontsize=8, ncol=3)
    ax.set_xlabel(f"{unit} since the first sample")
    ax.set_ylabel("RSS (MB)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return _png(fig)


def rate_chart(points: Sequence[tuple[float, float]], title: str, ylabel: str) -> bytes:
    """A per-second count (e.g. fires/s) as bars against seconds since the session start."""
    fig, ax = plt.subplots(figsize=(9, 2.6))
    if points:
        xs, ys = zip(*points, strict=True)
        ax.bar(xs, ys, width=1.0, align="edge", color="C1")
    else:
        ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center")
    ax.set_xlabel("seconds since session start")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return _png(fig)


def instruments_chart(names: Sequence[str], binance: Sequence[float], hyperliquid: Sequence[float],
                      fires: Sequence[float]) -> bytes:
    """Books per instrument and venue (bars) and the strategy's orders per instrument (dots, right axis)."""
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(names) + 3), 3.2))
    x = np.arange(len(names))
    ax.bar(x - 0.2, binance, width=0.4, label="Binance books", color="C0")
    ax.bar(x + 0.2, hyperliquid, width=0.4, label="Hyperliquid books", color="C2")
    ax.set_xticks(x, names, rotation=90 if len(names) > 12 else 0, fontsize=8)
    ax.set_ylabel("books")
    ax2 = ax.twinx()
    ax2.plot(x, fires, "o", color="C3", label="orders")
    ax2.set_ylabel("orders")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, ["Binance books", "Hyperliquid books", "orders"], fontsize=8, loc="upper right")
    ax.set_title("Per instrument")
    ax.grid(True, axis="y", alpha=0.3)
    return _png(fig)


def latency_sweep_chart(doc: dict[str, Any]) -> bytes:
    """A backtest's latency sweep (caerus backtest --latency-sweep): marked PnL and fill rate against the added
    order latency (log axis; 0 drawn at 1 us)."""
    pts = doc.get("points") or []
    x = [max(float(p.get("added_ns") or 0), 1e3) / 1e3 for p in pts]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(x, [p.get("pnl_marked") or 0.0 for p in pts], "o-", color="C0", label="marked PnL")
    ax.set_xscale("log")
    ax.set_xlabel("added order latency (us)")
    ax.set_ylabel("marked PnL (USD)", color="C0")
    ax2 = ax.twinx()
    ax2.plot(x, [p.get("fill_rate") or 0.0 for p in pts], "s--", color="C3", label="fill rate")
    ax2.set_ylabel("fill rate", color="C3")
    ax2.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    fig.suptitle("Backtest of this session: PnL and fill rate against added latency")
    return _png(fig)


def cost_curve_chart(doc: dict[str, Any]) -> bytes:
    """benchmarks/symbols_scaling's result: tick-to-decision p50/p99 against N (left), the feeds' cost per message
    against N = 1 with the 1.5x goal (right); N on a log axis."""
    per = {int(n): r for n, r in (doc.get("extra") or {}).get("per_count", {}).items()}
    ns = sorted(per)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4))
    if ns:
        for key, style in (("p50", "o-"), ("p99", "s--")):
            a1.plot(ns, [(per[n].get("tick_to_decision") or {}).get(key, np.nan) / 1e3 for n in ns], style,
                    label=f"tick-to-decision {key}")
        base = per[ns[0]].get("feed_cpu_ns_per_msg") or np.nan
        a2.plot(ns, [per[n].get("feed_cpu_ns_per_msg", np.nan) / base for n in ns], "o-",
                label="feed CPU per message / N=1")
        fi0 = (per[ns[0]].get("feed_internal.binance") or {}).get("p50") or np.nan
        a2.plot(ns, [(per[n].get("feed_internal.binance") or {}).get("p50", np.nan) / fi0 for n in ns], "s--",
                label="Binance feed_internal p50 / N=1")
        a2.axhline(1.5, color="C3", lw=1, ls=":", label="goal 1.5x")
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns or [1], [str(n) for n in ns] or ["1"])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("instruments (N)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    a1.set_yscale("log")
    a1.set_ylabel("us")
    a2.set_ylabel("ratio to N = 1")
    extra = doc.get("extra") or {}
    rate = f"{extra.get('rate_hz', extra.get('rate_per_instrument_hz', '?'))} Hz" + (
        " x 16 in total" if extra.get("same_total") else " per instrument")
    fig.suptitle(f"Cost curve (benchmarks/symbols_scaling, {rate}, {extra.get('seconds', '?')} s per N)")
    return _png(fig)


def path_chart(rows: Sequence[Any]) -> bytes:
    """The order path as a waterfall (caerus.report.path rows): each measured segment a bar of its p50 starting
    where the previous measured segment's p50 ended, its p99 as a lighter bar behind; spans drawn from their start;
    segments without a histogram marked 'not measured'."""
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.2))
    end = max((r.offset_p50 + (r.p99 or 0.0) for r in rows), default=0.0)
    unit, div = _unit(end or 1.0)
    labels = []
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        labels.append(f"{r.segment.label}  ({r.segment.start} -> {r.segment.end})")
        x0 = r.offset_p50 / div
        if not r.measured:
            ax.text(x0, y, "  not measured", va="center", fontsize=8, color="0.45")
            ax.plot([x0], [y], marker="|", color="0.45")
            continue
        color = "C1" if r.span else "C0"
        ax.barh(y, (r.p99 or 0.0) / div, left=x0, color=color, alpha=0.25, height=0.6)
        ax.barh(y, (r.p50 or 0.0) / div, left=x0, color=color, height=0.6)
        ax.text(x0 + (r.p50 or 0.0) / div, y, f" p50 {_fmt(r.p50)} / p99 {_fmt(r.p99)}, n={r.n:,}", va="center",
                fontsize=7)
    ax.set_yticks(range(len(rows)), list(reversed(labels)), fontsize=8)
    ax.set_xlabel(f"{unit} from the scheduled exchange time (p50s added along the path)")
    ax.set_title("The order path, Binance-triggered (dark: p50, light: p99; orange: spans)")
    ax.grid(True, axis="x", alpha=0.3)
    return _png(fig)
