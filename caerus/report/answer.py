"""The report's opening section: what this session's speed is worth.

Two answers, each with its sample size, before any latency table:

1. **The strategy on the market it ran**: the paper fills the session's execution engine recorded (``paper.json``,
   the paper transport's accounts: fills, PnL marked at the last mid, markouts at the configured horizons with
   their n), beside the backtest of the same captured books at the session's own latency.
2. **PnL against latency**: that backtest (``caerus.report.pricing``: ``caerus backtest --session S --start
   strategy --latency-from S`` with the session's strategy config) priced at its latency points -- order path 0,
   the session's p50, its p99, every drawn latency doubled -- with what the order path is made of (the fleet's
   segments measured in the session, the venue's wire from published figures).

Everything is read from files (``paper.json``, ``summary.json``, ``env.json``, ``report-backtest/result.json``);
nothing here runs anything. A session without a capture store, or whose backtest failed, says so in the section.
"""

from __future__ import annotations

import html
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caerus.report import pricing, samples, tables
from caerus.report.market import market_line

TITLE = "What this session's speed is worth"
#: the order path's segments the fleet itself spends (measured in a session), in path order
FLEET_SEGMENTS = (("seen_to_decision", "decision"), ("queue_transit", "queue transit"),
                  ("pickup_to_sent", "pickup to sent"))
POINT_HEADERS = ["point", "order path", "orders", "fills", "fill rate", "marked PnL (USD)", "vs point 0 (USD)",
                 "fees (USD)", "markout 1 s (bps)"]


@dataclass
class Opening:
    """The section's content, rendered to Markdown, HTML and console lines from one source."""

    lead: list[str]
    fills_headers: list[str] = field(default_factory=list)
    fills_rows: list[list[str]] = field(default_factory=list)
    fills_notes: list[str] = field(default_factory=list)
    points_intro: str = ""
    points_rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def market_text(summary: dict[str, Any], env: dict[str, Any] | None) -> str:
    """The market the session ran, as its own records name it (env.json's ``market`` record, the header's naming,
    when it has one; a session folder from before the record: its options, live venues or the emulator's market
    preset or file), and any scenario."""
    named = (env or {}).get("market")
    opts = summary.get("options") or {}
    scenario = f", scenario {opts['scenario']}" if opts.get("scenario") else ""
    if isinstance(named, dict) and named.get("kind"):  # caerus.session's record: one naming for every section
        return market_line(named) + scenario
    if opts.get("live") or summary.get("venues") == "live":
        text = "the live venues"
    else:
        market = str(opts.get("market") or "default")
        kind = "market file" if "/" in market or market.endswith(".toml") else "preset"
        text = f"the venue emulator's market {market} ({kind}){scenario}"
    return text


def _usd(x: Any, sign: bool = True) -> str:
    if not isinstance(x, int | float):
        return "-"
    return f"{x:+,.4f}" if sign else f"{x:,.4f}"


def _bps(mean: Any, n: int, pending: int = 0, unit: str = "") -> str:
    m = "-" if not isinstance(mean, int | float) else f"{mean:+.2f}{unit}"
    return f"{m} (n={n:,}{f'; {pending:,} pending' if pending else ''})"


def _horizon(ms: float) -> str:
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


def fee_text(config: dict[str, Any], venues: list[str]) -> str:
    """The taker fee the paper fills paid, from paper.json's config: the rate ``fee_bps`` fixes, or else each traded
    venue's tier and rate of the fee schedule (caerus.fees) the paper transport charges from."""
    if config.get("fee_bps") is not None:
        return f"taker fee {config['fee_bps']:g} bps on every venue, fixed by the paper config's fee_bps"
    rates = config.get("taker_fee_bps") or {}
    tiers = config.get("fee_tiers") or {}
    shown = [v for v in venues if v in rates] or sorted(rates)
    if not shown:
        return "taker fee not recorded in paper.json"
    return "taker fee from the venues' fee schedule (caerus/fees.py): " + ", ".join(
        f"{v}{' ' + tiers[v] if tiers.get(v) else ''} {rates[v]:g} bps" for v in shown)


def paper_fills(session: Path) -> dict[str, Any] | None:
    """Every paper account of the session's execution (``paper.json``: every instrument, every venue) pooled:
    fills, realised / unrealised / fees / marked PnL, and per horizon the markouts' n, mean and pending."""
    try:
        doc = json.loads((Path(session) / "paper.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    accounts = [a for per in (doc.get("instruments") or {}).values() for a in (per or {}).values()] \
        or list((doc.get("venues") or {}).values())
    config = doc.get("config") or {}
    horizons = [float(h) for h in (config.get("markout_ms") or [])]
    traded = sorted({v for per in (doc.get("instruments") or {}).values() for v in (per or {})}
                    | set(doc.get("venues") or {}))
    out: dict[str, Any] = {"fills": 0, "realized": 0.0, "unrealized": 0.0, "fees": 0.0, "total_pnl": 0.0,
                           "horizons_ms": horizons, "fee_bps": config.get("fee_bps"),
                           "fee_text": fee_text(config, traded),
                           "orders": (doc.get("engine") or {}).get("orders"), "markouts": {}}
    for a in accounts:
        for k in ("fills", "realized", "unrealized", "fees", "total_pnl"):
            out[k] += a.get(k) or 0
    for h in horizons:
        key = f"{h:g}ms"
        n = sum(int(((a.get("markouts") or {}).get(key) or {}).get("n") or 0) for a in accounts)
        s = sum(float(((a.get("markouts") or {}).get(key) or {}).get("mean_bps") or 0.0)
                * int(((a.get("markouts") or {}).get(key) or {}).get("n") or 0) for a in accounts)
        pending = sum(int(((a.get("markouts") or {}).get(key) or {}).get("pending") or 0) for a in accounts)
        out["markouts"][key] = {"n": n, "mean_bps": s / n if n else None, "pending": pending}
    return out


def opening(session: Path, summary: dict[str, Any], env: dict[str, Any] | None) -> Opening:
    """The section for one session folder (reads its files; runs nothing)."""
    session = Path(session)
    opts = summary.get("options") or {}
    priced = pricing.load(session)
    cfg, _ = pricing.strategy_config(session)
    market = market_text(summary, env)
    op = Opening([f"Market: {market}; instruments {opts.get('symbols', '-')}; {summary.get('duration_s', '-')} s; "
                  f"transport {opts.get('transport', '-')}; strategy "
                  f"{'config ' + str(cfg) if cfg else 'defaults (no strategy config)'}."])
    paper = paper_fills(session)
    horizons = paper["horizons_ms"] if paper and paper["horizons_ms"] else [100.0, 1000.0, 5000.0]
    op.fills_headers = ["source", "orders", "fills", "marked PnL (USD)", "realised (USD)", "fees (USD)",
                        *(f"markout {_horizon(h)} (bps)" for h in horizons)]
    _session_fills(op, paper, summary, horizons)
    result = priced.result
    if result is None:
        op.lead.insert(0, _in_short(market, paper, []) + f" PnL against latency was not computed: {priced.why}.")
        op.points_intro = "Not computed: " + priced.why + "." + (
            f" The command: `{shlex.join(priced.command[2:])}`." if priced.status != "no_capture" else "")
        return op
    pts = (result.get("latency_points") or {}).get("points") or []
    op.lead.insert(0, _in_short(market, paper, pts))
    _backtest(op, result, horizons)
    a = result.get("assumptions") or {}
    data, lat = a.get("data") or {}, a.get("latency") or {}
    op.points_intro = (
        f"A backtest of this session's own captured books ({data.get('books', 0):,} books over "
        f"{float(data.get('span_s') or 0):.1f} s, from the live strategy's start) through the same decision code "
        f"and strategy settings, at the latency this session measured ({lat.get('source', '?')}), priced at the "
        "latency points: the same books, fill rules and seed at each, only the order path differs.")
    base = next((p.get("pnl_marked") for p in pts if p.get("point") == "0"), None)
    for p in pts:
        op.points_rows.append([
            str(p.get("point")), str(p.get("label", "")), f"{p.get('orders', 0):,}", f"{p.get('fills', 0):,}",
            "-" if p.get("fill_rate") is None else f"{p['fill_rate']:.0%}", _usd(p.get("pnl_marked")),
            "-" if base is None or p.get("point") == "0" else _usd(p["pnl_marked"] - base),
            _usd(p.get("fees"), False),
            "-" if p.get("markout_1s_bps") is None else f"{p['markout_1s_bps']:+.2f}"])
    if not pts:
        op.notes.append("No latency points: " + str((result.get("latency_points") or {}).get("why", "none")) + ".")
    op.notes += _path_notes(lat, a.get("fills") or {})
    op.notes.append(_reading(pts))
    op.notes.append(f"Backtest: `{shlex.join(priced.command[2:])}` ({priced.folder / pricing.RESULT}; its charts "
                    f"and every order in {priced.folder / 'report.html'}).")
    return op


def _session_fills(op: Opening, paper: dict[str, Any] | None, summary: dict[str, Any],
                   horizons: list[float]) -> None:
    """The session's own row: its paper engine's fills, or what it has instead."""
    hc = summary.get("headline_counts") or {}
    if paper is not None:
        orders = paper["orders"] if paper["orders"] is not None else hc.get("orders")
        marks = paper["markouts"]
        op.fills_rows.append([
            "the session: its paper engine's fills (paper.json)", "-" if orders is None else f"{orders:,}",
            f"{paper['fills']:,}", _usd(paper["total_pnl"]), _usd(paper["realized"]), _usd(paper["fees"], False),
            *(_bps(marks[f"{h:g}ms"]["mean_bps"], marks[f"{h:g}ms"]["n"], marks[f"{h:g}ms"]["pending"])
              for h in horizons)])
        op.fills_notes.append(
            f"Paper fills: IOCs filled by the session's paper transport against the book the engine had read (no "
            f"wire, no block clock; {paper['fee_text']}), marked at the last mid; a markout is the mid "
            "that long after the fill against the fill price, in the fill's favour (pending: the session ended "
            "first).")
        return
    pnl = hc.get("paper_pnl")
    op.fills_rows.append(["the session: no paper account (paper.json missing)", f"{hc.get('orders', 0):,}", "-",
                          _usd(pnl), "-", "-", *("-" for _ in horizons)])
    transport = (summary.get("options") or {}).get("transport", "?")
    op.fills_notes.append(f"No paper fills to show: the session's transport was {transport}, which keeps no paper "
                          "account (paper.json)" + ("; the PnL shown is of the fills its EXEC records confirmed "
                                                    "(realised - fees)" if pnl is not None else "") + ".")


def _backtest(op: Opening, result: dict[str, Any], horizons: list[float]) -> None:
    """The backtest's own row (its drawn run at the session's latency), beside the session's."""
    total = ((result.get("metrics") or {}).get("total")) or {}
    marks, pnl = total.get("markouts") or {}, total.get("pnl") or {}
    seed = (result.get("assumptions") or {}).get("seed")
    op.fills_rows.append([
        f"backtest of the same books at this session's latency (drawn, seed {seed})",
        f"{total.get('orders', 0):,}", f"{total.get('fills', 0):,}", _usd(pnl.get("marked")),
        _usd(pnl.get("realised")), _usd(pnl.get("fees"), False),
        *(_bps((marks.get(f"{h:g}ms") or {}).get("mean_bps"), int((marks.get(f"{h:g}ms") or {}).get("n") or 0))
          for h in horizons)])


def _in_short(market: str, paper: dict[str, Any] | None, pts: list[dict[str, Any]]) -> str:
    """The answer in one sentence: the paper PnL with its n, then the backtest's PnL at 0, p50 and p99."""
    text = f"In short: on {market}, "
    if paper is not None:
        one_s = paper["markouts"].get("1000ms")
        text += (f"the strategy's paper fills made {_usd(paper['total_pnl'])} USD marked over {paper['fills']:,} "
                 "fills" + (f" (markout 1 s {_bps(one_s['mean_bps'], one_s['n'], unit=' bps')})" if one_s else "")
                 + "; ")
    by = {str(p.get("point")): p for p in pts}
    if not {"0", "p50", "p99"} <= set(by):
        return text + "no latency points to price it at."
    z, m, h = by["0"], by["p50"], by["p99"]
    return (text + f"backtested on the same books, its marked PnL is {_usd(z['pnl_marked'])} USD with no order "
            f"latency, {_usd(m['pnl_marked'])} at this session's p50 order path ({tables.fmt_ns(m['order_path_ns'])}) "
            f"and {_usd(h['pnl_marked'])} at its p99 ({tables.fmt_ns(h['order_path_ns'])}), over "
            f"{z.get('orders', 0):,} / {m.get('orders', 0):,} / {h.get('orders', 0):,} orders: the order path's "
            f"latency moves it {_usd(m['pnl_marked'] - z['pnl_marked'])} USD at p50 and "
            f"{_usd(h['pnl_marked'] - z['pnl_marked'])} USD at p99.")


def _path_notes(lat: dict[str, Any], fills: dict[str, Any]) -> list[str]:
    segs = lat.get("segments") or {}
    path = lat.get("order_path") or {}
    own = []
    for tag, name in FLEET_SEGMENTS:
        s = segs.get(tag) or {}
        n = int(s.get("n") or 0)
        own.append(f"{name} {tables.fmt_ns(s.get('p50_ns'))} p50 / "
                   f"{samples.cell(tables.fmt_ns(s.get('p99_ns')), 99.0, n)} p99 (n = {n:,})")
    wire = segs.get("wire") or {}
    notes = [f"The order path (p50 {tables.fmt_ns(path.get('p50_ns'))}, p99 {tables.fmt_ns(path.get('p99_ns'))}; "
             f"{int(path.get('draws') or 0):,} seeded draws of the sum) is the fleet's own part, measured in this "
             f"session -- {'; '.join(own)} -- plus the one-way wire to the venue, "
             f"{tables.fmt_ns(wire.get('p50_ns'))} p50 / {tables.fmt_ns(wire.get('p99_ns'))} p99, "
             f"from {wire.get('origin', '?')}."]
    block = (fills.get("hl_block") or {})
    rule = str(fills.get("rule", "?"))
    if block.get("block_ns"):
        rule += f"; Hyperliquid block {tables.fmt_ns(block['block_ns'])} ({block.get('block_source', '?')})"
    notes.append(f"Backtest fills: {rule}. So its fills differ from the paper engine's, which fill at the book the "
                 "engine had read.")
    return notes


def _reading(pts: list[dict[str, Any]]) -> str:
    """One sentence on what the order path's latency changed, point by point against point 0."""
    by = {str(p.get("point")): p for p in pts}
    zero = by.get("0")
    if zero is None or not isinstance(zero.get("pnl_marked"), int | float):
        return "No point 0 to compare with."
    parts = []
    for name in ("p50", "p99", "2x"):
        p = by.get(name)
        if p is None:
            continue
        where = f"this session's {name} ({tables.fmt_ns(p['order_path_ns'])})" if p.get("order_path_ns") else \
            "every drawn order latency doubled"
        parts.append(f"to {where} {_usd(p['pnl_marked'] - zero['pnl_marked'])} USD "
                     f"({p.get('orders', 0):,} orders, {p.get('fills', 0):,} fills)")
    return (f"What the order path's latency changed: from order path 0 ({zero.get('orders', 0):,} orders, "
            f"{zero.get('fills', 0):,} fills, marked PnL {_usd(zero['pnl_marked'])} USD) the marked PnL moves "
            + ", ".join(parts) + ". A difference rests on these few orders: read it with their n.")


def markdown(op: Opening) -> str:
    out = [f"## {TITLE}\n", *(line + "\n" for line in op.lead)]
    if op.fills_rows:
        out.append("**The strategy on the market it ran**\n")
        out.append(tables.markdown_table(op.fills_headers, op.fills_rows))
        out += [n + "\n" for n in op.fills_notes]
    out += ["**PnL against latency**\n", op.points_intro + "\n"]
    if op.points_rows:
        out.append(tables.markdown_table(POINT_HEADERS, op.points_rows))
    out += [n + "\n" for n in op.notes]
    return "\n".join(out)


def html_section(op: Opening) -> str:
    parts = [f"<h2>{html.escape(TITLE)}</h2>", *(f"<p>{html.escape(line)}</p>" for line in op.lead)]
    if op.fills_rows:
        parts += ["<h3>The strategy on the market it ran</h3>", tables.html_table(op.fills_headers, op.fills_rows)]
        parts += [f"<p>{html.escape(n)}</p>" for n in op.fills_notes]
    parts.append(f"<h3>PnL against latency</h3><p>{html.escape(op.points_intro)}</p>")
    if op.points_rows:
        parts.append(tables.html_table(POINT_HEADERS, op.points_rows))
    parts += [f"<p>{html.escape(n)}</p>" for n in op.notes]
    return "".join(parts)
