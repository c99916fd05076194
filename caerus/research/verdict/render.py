"""The verdict as text: one row per variant (the market, then each control) with its sample sizes, PnL interval and
verdict; the market's secondary rows (the naive rule at matched turnover, PnL against latency); the run's answer."""

from __future__ import annotations

from typing import Any

from caerus.research.verdict.pipeline import MARKET


def _f(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def _ci(m: dict[str, Any], fmt: str) -> str:
    ci = m.get("ci")
    lo, hi = ci if ci else (None, None)
    return f"{_f(m.get('value'), fmt)} [{_f(lo, fmt)}, {_f(hi, fmt)}]"


def render(doc: dict[str, Any]) -> str:
    variants = doc["variants"]
    market = next(v for v in variants if v["variant"] == MARKET)
    boot = market["bootstrap"]
    lat = doc["latency"]
    fees = doc["fills"]["taker_fee_bps"]
    opts = doc["options"]
    lines = [
        f"verdict: {doc['source']}",
        f"  train the first {opts['train_fraction']:.0%} of each timeline (walk-forward, {opts['folds']} folds, scored "
        f"net of costs), test the rest; seed {opts['train_seed']}",
        f"  {lat['headline']}",
        f"  fills: {doc['fill_rule']}; taker {fees['hyperliquid']:g} bps a leg on the follower "
        f"({doc['facts']['follower']}; {doc['fills']['fee_source']}), the spread crossed in and out, open positions "
        f"closed at the end",
        f"  intervals: {boot['method']}, {boot['bucket_s']:g} s buckets, blocks of {boot['block_intended_s']:g} s "
        f"(data's choice {_f(boot['block_auto_s'], 'g')} s, floor {opts['min_block_s']:g} s), "
        f"{opts['bootstrap']} replicates, {opts['min_blocks']} blocks needed",
        "",
        f"{'variant':<58} {'tradeable':>9} {'orders':>7} {'fills':>6} {'PnL USD [95% CI]':>28} {'blocks':>7}  verdict",
    ]
    for v in variants:
        label = v["variant"] if v["variant"] == MARKET else f"control: {v['what']}"
        arm = v.get("arms", {}).get("model", {})
        pnl = arm.get("pnl", {"value": None, "ci": None})
        blocks = v.get("bootstrap", {}).get("blocks")
        lines.append(f"{label[:58]:<58} {'yes' if v['tradeable'] else 'no':>9} {arm.get('orders', 0):>7} "
                     f"{arm.get('fills', 0):>6} {_ci(pnl, '+.2f'):>28} {_f(blocks, '.1f'):>7}  {v['verdict']}")
    for name, ll in doc["facts"].get("lead_lag", {}).items():
        lines.append(f"  lead-lag of the follower on {name}'s training range: {ll['text']}")
    lines.append("")
    for v in variants:
        if not v["tradeable"] or v["verdict"] == "INSUFFICIENT DATA":
            extra = f" (training: {v['decline'] or 'tradeable'})" if v["verdict"] == "INSUFFICIENT DATA" else ""
            lines.append(f"  {v['variant']}: {v['why']}{extra}")
    if market["tradeable"]:
        m = market["arms"]["model"]
        mod = market["model"]
        lines += ["", f"market, model {mod['kind']} {mod['params']} entry {mod['entry_bps']:g} bps, hash "
                      f"{str(mod['hash'])[:16]}, {mod['training_rows']} training rows:",
                  f"  round trips {m['round_trips']}, hit rate {_ci(m['hit_rate'], '.3f')}, fees "
                  f"{_ci(m['fees'], '.2f')} USD, turnover {_ci(m['turnover'], ',.0f')} USD",
                  f"  markouts 100 ms / 1 s / 5 s (bps): {_ci(m['markout_100ms'], '+.2f')} / "
                  f"{_ci(m['markout_1000ms'], '+.2f')} / {_ci(m['markout_5000ms'], '+.2f')} "
                  f"(n {'/'.join(map(str, m['markout_n']))})",
                  f"  per-timeline PnL: {' '.join(f'{x:+.2f}' for x in m['per_timeline_pnl'])}"]
        nm = market["arms"].get("naive_matched")
        if nm is not None:
            d = market["model_minus_naive"]
            lines.append(f"  secondary: naive rule at matched turnover (entry {d['naive_entry_bps']:g} bps): PnL "
                         f"{_ci(nm['pnl'], '+.2f')} USD over {nm['orders']} orders; model - naive "
                         f"{_ci(d, '+.2f')} USD")
        pts = [(k, a) for k, a in market["arms"].items() if k.startswith("latency ")]
        if pts:
            lines.append("  PnL against latency (same model, same test ranges):")
            for k, a in pts:
                lines.append(f"    {k[8:]:<4} PnL {_ci(a['pnl'], '+.2f'):>28} USD, orders {a['orders']:>5}, fills "
                             f"{a['fills']:>5}  ({a['label']})")
    lines += ["", f"ANSWER: {doc['verdict']} -- {doc['why']}"]
    return "\n".join(lines)
