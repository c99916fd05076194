"""The backtest's HTML report: every assumption, the metrics table, PnL at the latency points (order path 0, p50,
p99, 2x), an equity curve, markout curves, the latency sweep (PnL and fill rate against added latency) when there
is one, and the orders/fills table.

Self-contained (PNG charts inline as data URIs, matplotlib Agg, as caerus/report does). Reads only the result
documents caerus.research.backtest.runner writes.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from caerus.wire import OrderReason, Outcome


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _legend_png(fig: Any, ax: Any, xlabel: str, ylabel: str, title: str) -> str:
    """A chart of one line per series (the total, then each instrument): labelled, legended, as a PNG."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _png(fig)


def _series(metrics: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("total", metrics["total"]), *metrics["instruments"].items()]


def equity_chart(metrics: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for name, m in _series(metrics):
        t = m["equity_curve"]["t"]
        if not t:
            continue
        ax.plot([(x - t[0]) / 1e9 for x in t], m["equity_curve"]["pnl"], label=name,
                lw=2 if name == "total" else 1)
    return _legend_png(fig, ax, "s from the first book", "marked PnL (USD)",
                       "Equity curve (marked to the target venue's mid, net of fees)")


def markout_chart(metrics: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for name, m in _series(metrics):
        pts = [(float(k[:-2]), v["mean_bps"]) for k, v in m["markouts"].items() if v["mean_bps"] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("symlog", linthresh=10)
    ax.axhline(0, color="grey", lw=0.5)
    return _legend_png(fig, ax, "horizon (ms)", "mean markout (bps)", "Fill markouts")


def sweep_chart(sweep: dict[str, Any]) -> str:
    pts = sweep["points"]
    x = [max(p["added_ns"], 1) / 1e3 for p in pts]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(x, [p["pnl_marked"] for p in pts], marker="o", color="tab:blue")
    ax.set_xscale("log")
    ax.set_xlabel("added order latency (us; 0 drawn at 1)")
    ax.set_ylabel("marked PnL (USD)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(x, [p["fill_rate"] or 0.0 for p in pts], marker="s", color="tab:red")
    ax2.set_ylabel("fill rate", color="tab:red")
    ax.set_title("Latency sensitivity: the same data and rule at each added latency")
    return _png(fig)


def _table(rows: list[list[Any]], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def _block(notes: dict[str, Any]) -> str:
    if not notes.get("blocks"):
        return "not applied: " + str(notes.get("block_source", ""))
    return f"{notes['block_ns'] / 1e6:g} ms ({notes['block_source']})"


def render(doc: dict[str, Any], path: Path, sweep: dict[str, Any] | None = None) -> Path:
    """Write the HTML report of a result document (and its latency sweep) to ``path``."""
    a, m = doc["assumptions"], doc["metrics"]
    parts = ["<html><head><meta charset='utf-8'><title>Backtest</title><style>body{font-family:sans-serif;"
             "max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
             "padding:2px 6px;text-align:right}pre{font-size:11px;background:#f6f6f6;padding:6px}</style></head><body>",
             "<h1>Backtest</h1>", "<h2>Assumptions</h2>",
             _table([["data", a["data"]["source"]], ["books replayed", a["data"]["books_replayed"]],
                     ["span (s)", a["data"]["span_s"]], ["seed", a["seed"]],
                     ["latency", a["latency"].get("headline", a["latency"]["source"])],
                     ["latency added (ns)", a["latency"]["add_ns"]],
                     ["not measured (0)", ", ".join(a["latency"]["missing"]) or "none"],
                     ["fill clock", a["fills"]["clock"]], ["taker fees (bps)", json.dumps(a["fills"]["taker_fee_bps"])],
                     ["fee source", a["fills"]["fee_source"]],
                     ["fill rule", a["fills"].get("rule", "IOC vs the top of book at arrival")],
                     ["Hyperliquid block", _block(a["fills"].get("hl_block", {}))],
                     ["not modelled", "; ".join(a["not_modelled"])],
                     ["samples", f"{a['samples']['orders']} orders, {a['samples']['fills']} fills"]],
                    ["assumption", "value"]),
             "<h3>Latency segments (p50 ns, samples)</h3>",
             _table([[s, v["p50_ns"], v["n"]] for s, v in a["latency"]["segments"].items()],
                    ["segment", "p50 ns", "n"]),
             "<h3>Strategy parameters</h3><pre>" + html.escape(json.dumps(a["strategy"], indent=1)) + "</pre>",
             "<h2>Results</h2>"]
    head = ["", "orders", "fills", "fill rate", "realised", "fees", "marked PnL", "hit rate", "round trips",
            "turnover USD", "max drawdown", "markout 1 s (bps)"]
    rows = []
    for name, v in [("total", m["total"]), *m["instruments"].items()]:
        rows.append([name, v["orders"], v["fills"], v["fill_rate"], v["pnl"]["realised"], v["pnl"]["fees"],
                     v["pnl"]["marked"], v["hit_rate"], v["round_trips"], v["turnover"]["notional"],
                     v["max_drawdown"], v["markouts"]["1000ms"]["mean_bps"]])
    parts.append(_table(rows, head))
    pts = doc.get("latency_points")
    if pts:
        parts.append("<h3>PnL against latency</h3>" + (
            f"<p>{html.escape(str(pts.get('varies', '')))}</p>" + _table(
                [[p["point"], p["label"], p["orders"], p["fills"], p["fill_rate"], p["fees"], p["pnl_marked"],
                  p["markout_1s_bps"]] for p in pts["points"]],
                ["point", "what", "orders", "fills", "fill rate", "fees", "marked PnL", "markout 1 s (bps)"])
            if pts["points"] else f"<p>none: {html.escape(str(pts.get('why')))}</p>"))
    parts.append("<h3>Fills by reason</h3>" + _table(
        [[r, c["orders"], c["filled"], c["partial"], c["not_filled"]]
         for r, c in m["total"]["fills_by_reason"].items()],
        ["reason", "orders", "filled", "partial", "not filled"]))
    parts.append(f"<h3>Equity curve</h3><img src='{equity_chart(m)}'>")
    parts.append(f"<h3>Markout curves</h3><img src='{markout_chart(m)}'>")
    if sweep is not None:
        parts.append("<h2>Latency sensitivity</h2>" + f"<img src='{sweep_chart(sweep)}'>" + _table(
            [[p["added_ns"], p["orders"], p["fills"], p["fill_rate"], p["pnl_marked"], p["markout_1s_bps"]]
             for p in sweep["points"]], ["added ns", "orders", "fills", "fill rate", "marked PnL", "markout 1 s"]))
    parts.append("<h2>Orders and fills</h2>" + _table(
        [[i + 1, o["symbol"], OrderReason(o["reason"]).name.lower(), o["side"], o["px"], o["qty"],
          (o["t_match"] - o["t_seen"]) / 1e3, Outcome(o["outcome"]).name.lower(), o["fill_px"], o["fill_qty"]]
         for i, o in enumerate(doc["orders"][:2000])],
        ["#", "inst", "reason", "side", "limit", "qty", "seen->match us", "outcome", "fill px", "fill qty"]))
    if len(doc["orders"]) > 2000:
        parts.append(f"<p>{len(doc['orders']) - 2000} more orders in result.json</p>")
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
    return path
