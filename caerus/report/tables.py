"""Report tables as plain rows (headline, counts, processes, environment), and their Markdown/HTML forms.

Rows are lists of strings so the same content renders to Markdown and HTML without drift.
"""

from __future__ import annotations

import html
import math
from typing import Any

from caerus.metrics.hdr import FLEET_TAGS, instrument_tag, split_instrument_tag
from caerus.plan import feed_venue
from caerus.report import samples

LABELS: dict[str, str] = {
    "tick_to_decision": "tick-to-decision (t_decision - t_recv), fires only: a sample of tick-to-eval",
    "tick_to_eval": "tick-to-eval (t_eval - t_recv), every book the strategy read: the headline",
    "queue_transit": "queue transit + engine pickup (t_pickup - t_decision)",
    "book_hop": "book hop (t_seen - t_publish)",
    "wire_to_decision": "wire-to-decision (t_decision - t_wire: kernel receive stamp -> order fired), fires",
    "seen_to_decision": "decision (t_decision - t_seen), fires",
    "pickup_to_sent": "engine to send (t_sent - t_pickup: risk, serialise, sign, send)",
    "decision_to_wire": "decision-to-send (t_sent - t_decision: order fired -> send_msg returned)",
    "stack.binance": "stack, Binance (t_recv - t_wire: kernel receive stamp -> message in our code)",
    "stack.hyperliquid": "stack, Hyperliquid (t_recv - t_wire: kernel receive stamp -> message in our code)",
    "feed_internal.binance": "feed internal, Binance (t_publish - t_recv)",
    "feed_internal.hyperliquid": "feed internal, Hyperliquid (t_publish - t_recv)",
    "info_age.binance": "information age, Binance (t_recv - t_exchange)",
    "info_age.hyperliquid": "information age, Hyperliquid (t_recv - t_exchange)",
    "emulator_lateness.binance": "emulator lateness, Binance (frame sent - scheduled t_exchange)",
    "emulator_lateness.hyperliquid": "emulator lateness, Hyperliquid (frame sent - scheduled t_exchange)",
    "tick_to_decision_warmed": "tick-to-decision, real fires while shadow orders flowed",
    "tick_to_decision_unwarmed": "tick-to-decision, real fires while shadow orders were off",
    "queue_transit_warmed": "queue transit, real orders within 1 s of a shadow order",
    "queue_transit_unwarmed": "queue transit, real orders with no shadow order in the last 1 s",
    "pickup_to_wire_out": "engine to kernel out (t_wire_out - t_pickup: risk, serialise, sign, syscall -> bytes out)",
    "sent_after_wire_out": "send returns (t_sent - t_wire_out: bytes out -> the send syscall back in our code)",
    "decision_to_wire_out": "decision-to-wire (t_wire_out - t_decision: order fired -> left the host)",
    "wire_to_wire": "wire-to-wire (t_wire_out - t_wire: book bytes in -> order bytes out, both kernel stamps)",
    "shadow_to_decision": "shadow orders: t_decision - t_recv (the rehearsed fire path)",
    "shadow_transit": "shadow orders: queue transit (t_pickup - t_decision)",
    "shadow_pickup_to_done": "shadow orders: pickup -> risk, serialise, sign done (never sent)",
}
# The reference C++ system (Tokyo c7i.2xlarge, 4 h, isolated), from FACTS.md: p50 / p99 / max
REFERENCE: dict[str, str] = {
    "tick_to_decision": "11.3 us / 16.3 us / 38.7 us",
    "queue_transit": "0.50 us / 3.3 us / -",
    "info_age.binance": "3.1 ms p50 (floor 2.6 ms)",
    "info_age.hyperliquid": "285 ms p50 (floor 204 ms)",
}
HEADLINE_HEADERS = ["metric", "p50", "p99", "p99.9", "max", "n", "clock artifacts", "reference (C++, isolated)"]
#: the percentiles the headline shows (p50, p99, p99.9), each flagged when it is only a maximum
HEADLINE_PCTS = (50.0, 99.0, 99.9)


def label(tag: str) -> str:
    return LABELS.get(tag, tag)


def fmt_ns(v: float | int | None) -> str:
    """Human latency: ns below 1 us, then us, ms, s (3 significant digits)."""
    if v is None:
        return "-"
    v = float(v)
    a = abs(v)
    if a < 1_000:
        return f"{v:.0f} ns"
    if a < 1_000_000:
        return f"{v / 1e3:.3g} us"
    if a < 1_000_000_000:
        return f"{v / 1e6:.3g} ms"
    return f"{v / 1e9:.3g} s"


#: the path's headline first: tick-to-eval (every book read) ahead of tick-to-decision (the fires, its sample)
HEADLINE_ORDER: tuple[str, ...] = ("tick_to_eval", *(t for t in FLEET_TAGS if t != "tick_to_eval"))


def ordered_tags(metrics: dict[str, Any]) -> list[str]:
    return [t for t in HEADLINE_ORDER if t in metrics] + sorted(t for t in metrics if t not in HEADLINE_ORDER)


def is_instrument_tag(tag: str) -> bool:
    """``inst.<NAME>.<tag>``: one instrument's share of a metric (the Instruments table's, not the headline's)."""
    return split_instrument_tag(tag)[0] is not None


def shown_tags(metrics: dict[str, Any]) -> list[str]:
    """The headline's metrics: every fleet tag (a missing one shows as missing), and any other tag that has
    samples. An optional metric the session did not exercise (shadow orders off, no order socket) is left out, and
    so are the per-instrument ones (the Instruments table)."""
    return [t for t in ordered_tags(metrics)
            if t in FLEET_TAGS or ((metrics[t] or {}).get("n") and not is_instrument_tag(t))] + [
        t for t in HEADLINE_ORDER if t not in metrics]


def pct_cell(m: dict[str, Any], key: str, pct: float) -> str:
    """``m[key]`` (the ``pct`` percentile of ``m["n"]`` samples) formatted, marked when it is their maximum
    (caerus.report.samples)."""
    return samples.cell(fmt_ns(m.get(key)), pct, int(m.get("n") or 0))


def headline_rows(summary: dict[str, Any]) -> list[list[str]]:
    metrics = summary.get("metrics") or {}
    rows = []
    for tag in shown_tags(metrics):
        m = metrics.get(tag) or {}
        rows.append([
            label(tag), *(pct_cell(m, key, pct) for key, pct in zip(("p50", "p99", "p999"), HEADLINE_PCTS,
                                                                      strict=True)),
            fmt_ns(m.get("max")), f"{m.get('n', 0):,}", str(m.get("clock_artifacts", 0)) if m else "-",
            REFERENCE.get(tag, ""),
        ])
    return rows


#: the reference C++ system's sample (FACTS.md): its tick-to-decision p99 is over this many orders in 4 h
REFERENCE_ORDERS = 1_274


def headline_notes(summary: dict[str, Any]) -> list[str]:
    """Sentences under the headline table: tick-to-eval is the path's headline and fires are its sample; which
    percentiles are only a maximum (the rule, caerus.report.samples); how many fires a p99 needs and how long a
    session takes to collect them at this session's fire rate, beside the reference's 1,274 orders."""
    metrics = summary.get("metrics") or {}
    tte, ttd = metrics.get("tick_to_eval") or {}, metrics.get("tick_to_decision") or {}
    n_eval, n_fire = int(tte.get("n") or 0), int(ttd.get("n") or 0)
    notes = [f"The path's headline is tick-to-eval: every book the strategy read, fire or not (n = {n_eval:,}; "
             f"p50 {fmt_ns(tte.get('p50'))}, p99 {fmt_ns(tte.get('p99'))}). Tick-to-decision is the fires' sample "
             f"of the same path (a fire's tick-to-eval is its tick-to-decision; n = {n_fire:,} fires), comparable "
             "with the reference's fires, but its tail is only as good as its n."]
    flags = []
    for tag in shown_tags(metrics):
        m = metrics.get(tag) or {}
        found = samples.flag(HEADLINE_PCTS, int(m.get("n") or 0), "fires" if tag == "tick_to_decision" else "samples")
        if found:
            flags.append(f"{short_label(tag)}: {found}")
    notes.append(samples.rule_sentence() + (" Here: " + "; ".join(flags) + "." if flags else ""))
    need = samples.min_samples(99.0)
    seconds = summary.get("duration_s") or summary.get("elapsed_s")
    if n_fire:
        rate = f"{n_fire:,} fires in {float(seconds):g} s" if seconds else f"{n_fire:,} fires"
        text = (f"A p99 of fires that is not their maximum needs >= {need} fires (the rule above); this session "
                f"had {rate}")
        took = samples.seconds_for(need, n_fire, float(seconds or 0))
        ref = samples.seconds_for(REFERENCE_ORDERS, n_fire, float(seconds or 0))
        if took is not None and ref is not None:
            text += (f", so {need} fires take a session of about {samples.duration_text(took)} at this rate; the "
                     f"reference's p99 is over {REFERENCE_ORDERS:,} orders (4 h), which at this rate take "
                     f"{samples.duration_text(ref)}")
        notes.append(text + ".")
    else:
        notes.append("No fires this session: tick-to-decision has no samples; tick-to-eval still measured the path.")
    return notes


def short_label(tag: str) -> str:
    """A metric's name without its definition: "tick-to-decision" for tick_to_decision's label."""
    return label(tag).split(" (")[0]


def comparison_rows(summaries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per metric, p50/p99/max/n per session."""
    headers = ["metric"]
    for s in summaries:
        headers += [f"{s.get('session', '?')} p50", "p99", "max", "n"]
    tags: list[str] = []
    for s in summaries:
        for t in shown_tags(s.get("metrics") or {}):
            if t not in tags:
                tags.append(t)
    rows = []
    for tag in tags:
        row = [label(tag)]
        for s in summaries:
            m = (s.get("metrics") or {}).get(tag) or {}
            row += [pct_cell(m, "p50", 50.0), pct_cell(m, "p99", 99.0), fmt_ns(m.get("max")), f"{m.get('n', 0):,}"]
        rows.append(row)
    return headers, rows


def count_rows(summary: dict[str, Any]) -> list[list[str]]:
    hc = summary.get("headline_counts") or {}
    rows = []
    for key in ("books", "rejects", "reconnects", "fires", "orders", "ring_losses", "paper_pnl",
                "paper_pnl_engine"):
        if key in hc:
            v = hc[key]
            rows.append([key, f"{v:,.2f}" if isinstance(v, float) else f"{v:,}"])
    fires = (summary.get("exec") or {}).get("fires_per_s") or []
    elapsed = summary.get("elapsed_s") or summary.get("duration_s")
    if "fires" in hc and elapsed:
        peak = max((n for _, n in fires), default=0)
        rows.append(["fire rate (mean / peak per s)", f"{hc['fires'] / float(elapsed):.2f} / {peak}"])
    for venue, secs in sorted((hc.get("untradeable_s_by") or {}).items()):
        share = f" ({100.0 * secs / float(elapsed):.1f}% of the session)" if elapsed else ""
        rows.append([f"untradeable time: {venue}", f"{secs:,.3f} s{share}"])
    for key in ("rejects_by", "reconnects_by", "orders_by_final_state", "orders_by_outcome", "orders_by_risk",
                "ring_losses_by"):
        for k, v in sorted((hc.get(key) or {}).items()):
            rows.append([f"{key.replace('_by', ' by').replace('orders by_', 'orders by ')}: {k}", f"{v:,}"])
    return rows


def counter_rows(summary: dict[str, Any]) -> list[list[str]]:
    """Every counter by process, except the per-instrument ones (``inst.<ID>.*``: the Instruments table)."""
    rows = []
    for process, block in sorted((summary.get("counters") or {}).items()):
        for name, v in block.items():
            if name.startswith("inst."):
                continue
            if v is None:
                rows.append([process, name, "-"])
            else:
                rows.append([process, name, f"{v:,.3f}" if isinstance(v, float) else f"{v:,}"])
    return rows


def count_tables(summary: dict[str, Any]) -> list[tuple[int, str, list[str], list[list[str]]]]:
    """The report's count tables, as both renderers lay them out: (heading level, title, headers, rows); the
    counters by process only when there are any."""
    out = [(2, "Counts", ["count", "value"], count_rows(summary))]
    crow = counter_rows(summary)
    if crow:
        out.append((3, "Counters by process", ["process", "counter", "value"], crow))
    return out


INSTRUMENT_HEADERS = ["instrument", "Binance books", "Hyperliquid books", "rejects", "silent",
                      "untradeable s (worst venue)", "strategy books", "fires", "guarded", "position", "paper fills",
                      "paper PnL", "venue position", "tick-to-decision p50", "tick-to-decision p99",
                      "tick-to-decision n", "feed internal p50 / p99, Binance", "feed internal p50 / p99, Hyperliquid",
                      "info age p50 / p99, Binance", "info age p50 / p99, Hyperliquid"]
#: the per-venue latencies each instrument's row shows as "p50 / p99" (the feeds' inst.<NAME>.<tag> intervals)
INSTRUMENT_VENUE_TAGS = ("feed_internal.binance", "feed_internal.hyperliquid", "info_age.binance",
                         "info_age.hyperliquid")


def instrument_rows(summary: dict[str, Any], names: dict[int, str]) -> list[list[str]]:
    """One row per instrument from the processes' ``inst.<ID>.*`` counters, the strategy's
    ``inst.<NAME>.tick_to_decision`` and the feeds' ``inst.<NAME>.feed_internal|info_age.<venue>`` histograms, then
    the fleet's totals (latency: the headline's histograms); empty for a single-instrument session (its numbers are
    the headline's)."""
    counters = summary.get("counters") or {}
    metrics = summary.get("metrics") or {}
    ids = sorted({int(k.split(".")[1]) for block in counters.values() for k in block
                  if k.startswith("inst.") and k.split(".")[1].isdigit()})
    if len(ids) < 2:
        return []

    def get(process: str, i: int, what: str, missing: float = 0.0) -> float:
        if process.startswith("feed-"):
            return _feed_counter(counters, process, i, what)
        v = (counters.get(process) or {}).get(f"inst.{i}.{what}")
        return float(v) if isinstance(v, int | float) else missing

    rows: list[list[float]] = []
    for i in ids:
        rows.append([
            get("feed-binance", i, "books"), get("feed-hyperliquid", i, "books"),
            get("feed-binance", i, "rejects") + get("feed-hyperliquid", i, "rejects"),
            get("feed-binance", i, "stale") + get("feed-hyperliquid", i, "stale"),
            max(get("feed-binance", i, "untradeable_ns"), get("feed-hyperliquid", i, "untradeable_ns")) / 1e9,
            get("strategy", i, "books"), get("strategy", i, "orders"), get("strategy", i, "guards"),
            get("execution", i, "position"), get("execution", i, "paper_fills"), get("execution", i, "paper_pnl"),
            get("execution", i, "venue_position", math.nan),  # a live venue's, read when trading stopped
        ])

    def fmt(r: list[float]) -> list[str]:
        return [f"{r[0]:,.0f}", f"{r[1]:,.0f}", f"{r[2]:,.0f}", f"{r[3]:,.0f}", f"{r[4]:,.1f}", f"{r[5]:,.0f}",
                f"{r[6]:,.0f}", f"{r[7]:,.0f}", f"{r[8]:+g}", f"{r[9]:,.0f}", f"{r[10]:+,.2f}",
                f"{r[11]:+g}" if math.isfinite(r[11]) else "-"]

    def latency(m: dict[str, Any] | None) -> list[str]:
        if not m:
            return ["-", "-", "-"]  # no histogram for it (an older session, or no metrics dir)
        return [pct_cell(m, "p50", 50.0), pct_cell(m, "p99", 99.0), f"{m.get('n', 0):,}"]

    def venues(name: str | None) -> list[str]:
        """p50 / p99 of each venue latency: the instrument's own (``name``), or the fleet's (None)."""
        cells = []
        for tag in INSTRUMENT_VENUE_TAGS:
            m = metrics.get(tag if name is None else instrument_tag(name, tag))
            cells.append(f"{fmt_ns(m.get('p50'))} / {fmt_ns(m.get('p99'))}" if m and m.get("n") else "-")
        return cells

    out = [[names.get(i, str(i)), *fmt(r), *latency(metrics.get(instrument_tag(names.get(i, str(i)),
                                                                                "tick_to_decision"))),
            *venues(names.get(i, str(i)))]
           for i, r in zip(ids, rows, strict=True)]
    total = [sum(col) for col in zip(*rows, strict=True)]
    total[4] = max(r[4] for r in rows)  # the worst instrument, not a sum of times
    cells = fmt(total)
    cells[8] = cells[11] = "-"  # positions in different units do not add up
    out.append([f"all {len(ids)}", *cells, *latency(metrics.get("tick_to_decision")), *venues(None)])
    return out


def instrument_series(summary: dict[str, Any], names: dict[int, str]
                      ) -> tuple[list[str], list[float], list[float], list[float]] | None:
    """(names, Binance books, Hyperliquid books, orders) per instrument for the chart; None for one instrument."""
    rows = instrument_rows(summary, names)
    if not rows:
        return None
    counters = summary.get("counters") or {}
    ids = sorted({int(k.split(".")[1]) for block in counters.values() for k in block
                  if k.startswith("inst.") and k.split(".")[1].isdigit()})

    def get(process: str, i: int, what: str) -> float:
        v = (counters.get(process) or {}).get(f"inst.{i}.{what}")
        return float(v) if isinstance(v, int | float) else 0.0

    return ([names.get(i, str(i)) for i in ids], [_feed_counter(counters, "feed-binance", i, "books") for i in ids],
            [_feed_counter(counters, "feed-hyperliquid", i, "books") for i in ids],
            [get("strategy", i, "orders") for i in ids])


def _feed_counter(counters: dict[str, Any], feed: str, i: int, what: str) -> float:
    """Instrument ``i``'s ``what`` from ``feed``'s venue: summed over every feed process of that venue (one
    share carries the instrument when the plan split the venue; the others have no counter for it)."""
    venue = feed_venue(feed)
    total = 0.0
    for process, block in counters.items():
        if feed_venue(process) == venue:
            v = (block or {}).get(f"inst.{i}.{what}")
            total += float(v) if isinstance(v, int | float) else 0.0
    return total


def process_rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, p in (summary.get("processes") or {}).items():
        died = p.get("died_after_s")
        rows.append([
            name, str(p.get("status", "?")).upper() if p.get("status") != "ok" else "ok",
            "-" if p.get("exit_code") is None else str(p.get("exit_code")),
            f"{died:.1f} s" if isinstance(died, int | float) else "-",
            str(p.get("restarts", 0)), str(p.get("wait_policy", "-")), ",".join(map(str, p.get("cpus", []))) or "-",
            str(p.get("log", "-")),
        ])
    return rows


def death_rows(summary: dict[str, Any]) -> list[list[str]]:
    """Every death of a fleet process the session restarted (or gave up on), in time order."""
    rows = []
    for name, p in (summary.get("processes") or {}).items():
        for d in p.get("deaths") or []:
            after = d.get("restarted_after_s")
            book, order = d.get("first_book_after_s"), d.get("first_order_after_s")
            rows.append([f"{d.get('at_s', 0):.1f} s", name, str(d.get("pid", "-")),
                         str(d.get("signal") or d.get("exit_code")), f"{d.get('uptime_s', 0):.1f} s",
                         "-" if after is None else f"{after:.2f} s", str(d.get("new_pid", "not restarted")),
                         "-" if book is None else f"{book:.2f} s", "-" if order is None else f"{order:.2f} s"])
    return sorted(rows, key=lambda r: float(r[0].split()[0]))


PROCESS_HEADERS = ["process", "status", "exit code", "died after", "restarts", "wait policy", "cpus", "log"]
def warming_line(summary: dict) -> str | None:
    """One sentence on shadow-order warming (StrategyConfig.shadow_every_ms): real fires' tick-to-decision with
    and without it, from the same session's A/B windows, with each side's n."""
    metrics = summary.get("metrics") or {}
    warm, cold = metrics.get("tick_to_decision_warmed") or {}, metrics.get("tick_to_decision_unwarmed") or {}
    if not warm.get("n") and not cold.get("n"):
        return None
    text = (f"Fire-path warming: real fires' tick-to-decision p50 {fmt_ns(warm.get('p50'))} with shadow orders "
            f"flowing (n={warm.get('n', 0):,}) vs {fmt_ns(cold.get('p50'))} without (n={cold.get('n', 0):,})")
    if warm.get("p50") and cold.get("p50"):
        text += f": {cold['p50'] / warm['p50']:.2f}x"
    qw, qc = metrics.get("queue_transit_warmed") or {}, metrics.get("queue_transit_unwarmed") or {}
    if qw.get("n") and qc.get("n"):
        text += (f"; queue transit {fmt_ns(qw.get('p50'))} (n={qw['n']:,}) vs {fmt_ns(qc.get('p50'))} "
                 f"(n={qc['n']:,})")
    return text + ". Few fires make a wide interval: compare over long sessions."


AB_ARMS = ("naive", "model")


def ab_table(summary: dict) -> tuple[list[str], list[list[str]], str] | None:
    """The naive/model A/B of one session (StrategyConfig.signal = "ab"): per arm its share of the time, its real
    orders, its fires' tick-to-decision (p50, p99, n) and its paper fills' mean markouts with n. (headers, rows,
    one sentence on the windows), or None when the session ran no A/B."""
    counters = summary.get("counters") or {}
    st, ex = counters.get("strategy") or {}, counters.get("execution") or {}
    window_ns = st.get("ab.window_ns") or 0
    if not window_ns:
        return None
    metrics = summary.get("metrics") or {}
    horizons = [ex.get(f"paper.markout_ms.{i}") for i in range(3)]
    headers = ["arm", "share of time", "orders", "tick-to-decision p50", "p99", "n", "paper fills"] + [
        f"markout {fmt_ns(h * 1e6) if h else f'#{i}'} (bps, n)" for i, h in enumerate(horizons)]
    total = sum(st.get(f"ab.{arm}_ns") or 0 for arm in AB_ARMS)
    rows = []
    for arm in AB_ARMS:
        m = metrics.get(f"tick_to_decision_{arm}") or {}
        share = (st.get(f"ab.{arm}_ns") or 0) / total if total else None
        row = [arm, "-" if share is None else f"{share:.0%}", f"{st.get(f'ab.orders.{arm}', 0):,}",
               pct_cell(m, "p50", 50.0), pct_cell(m, "p99", 99.0), f"{m.get('n', 0):,}",
               f"{ex.get(f'paper.arm.{arm}.fills', 0):,}"]
        for i in range(3):
            mean, n = ex.get(f"paper.arm.{arm}.markout.{i}"), ex.get(f"paper.arm.{arm}.markout_n.{i}", 0)
            row.append(f"{'-' if mean is None else f'{mean:+.2f}'} (n={n:,})")
        rows.append(row)
    line = (f"Naive/model A/B: windows of {window_ns / 1e9:g} s alternate the naive rule (first) and the model over "
            f"{total / 1e9:.1f} s; the model's features are updated on every book in both. Orders carry their arm "
            "(wire.OrderFlags.MODEL); a position opened in one arm may be closed by the other's exit rule.")
    return headers, rows, line


def chaos_line(summary: dict) -> str | None:
    """One sentence on a chaos run (``invoke bench --chaos``): how many kills, how often, how many restarted."""
    chaos = summary.get("chaos")
    if not chaos:
        return None
    kills = chaos.get("kills", [])
    deaths = {(name, d.get("pid")): d for name, p in summary.get("processes", {}).items() for d in p.get("deaths", [])}
    restarted = sum(1 for k in kills if deaths.get((k["process"], k["pid"]), {}).get("new_pid") is not None)
    return (f"Chaos: {len(kills)} hot processes killed with SIGKILL, one every {chaos.get('every_s', 0):g} s; "
            f"{restarted} restarted by the supervisor (each death is in the table below).")


DEATH_HEADERS = ["at", "process", "pid", "exit / signal", "uptime", "restarted after", "new pid",
                 "first book after", "first order after"]


def continuity_line(summary: dict[str, Any]) -> str | None:
    """One sentence proving (or not) that the session's restarts lost or doubled no order
    (caerus.session.continuity); None for a session without deaths."""
    c = summary.get("continuity")
    if not c or not summary.get("restarts"):
        return None
    pos = c.get("positions") or {}
    verdict = "nothing lost uncounted or doubled" if not c.get("unexplained") and not c.get("duplicates") else \
        "CONTINUITY BROKEN"
    strategy, engine = pos.get("strategy"), pos.get("engine")
    where = "" if strategy is None or engine is None else \
        f"; positions at the end: strategy {strategy:+g}, engine {engine:+g} BTC"
    cap = c.get("capture")
    if cap:
        rings = cap.get("rings") or {}
        where += (f"; capture read {sum(r.get('records', 0) for r in rings.values())} ring records across "
                  f"{cap.get('writer_restarts', 0)} writer restart(s), {sum(r.get('lost', 0) for r in rings.values())}"
                  " lost")
    return (f"Order continuity: {verdict}. {c.get('consumed', 0)} orders consumed over {c.get('strategy_runs', 0)} "
            f"strategy run(s); {c.get('gaps', 0)} missing in sequence, {c.get('counted_lost', 0)} of them counted "
            f"lost at an engine restart, {c.get('engine_deaths', 0)} engine death(s) (each may lose the order it "
            f"held), {c.get('unexplained', 0)} unexplained, {c.get('duplicates', 0)} doubled{where}. First book / "
            f"first order after a death are read every {c.get('watch_period_s', 0):g} s.")


RSS_HEADERS = ["process", "start MB", "end MB", "max MB", "slope MB/min", "samples"]


def rss_rows(summary: dict[str, Any]) -> list[list[str]]:
    """Resident memory per fleet process over the session (``summary.json`` "rss"); empty for older sessions."""
    rows = []
    for name, r in (summary.get("rss") or {}).items():
        slope = r.get("slope_mb_per_min")
        rows.append([name, f"{r['start_mb']:.1f}", f"{r['end_mb']:.1f}", f"{r['max_mb']:.1f}",
                     "n/a" if slope is None else f"{slope:+.3f}", str(r.get("samples", ""))])
    return rows


def _v(x: Any) -> str:
    if isinstance(x, dict) and "unavailable" in x:
        return f"unavailable ({x['unavailable']})"
    if isinstance(x, dict):
        return ", ".join(f"{k}={_v(v)}" for k, v in x.items())
    if isinstance(x, list):
        return ",".join(map(str, x))
    return str(x)


def _chrony(c: Any) -> str:
    if not isinstance(c, dict):
        return "-"
    if "unavailable" in c:
        return _v(c)
    return (f"{c.get('refname', '?')} stratum {c.get('stratum')}, last offset {c.get('last_offset_s')} s, "
            f"rms {c.get('rms_offset_s')} s, leap {c.get('leap')}")


def _model(m: Any) -> str:
    """The trained model a session traded (env.json ``model``, caerus.strategy.model_signal.identity)."""
    if not isinstance(m, dict):
        return "none (naive rule)"
    return (f"{m.get('kind')} {m.get('path')}, sha256 {m.get('hash')}, horizon {m.get('horizon_ms')} ms, "
            f"entry {m.get('entry_bps')} bps, feature schema v{m.get('schema_version')}"
            + (f"; A/B with the naive rule, {m['ab_window_s']:g} s windows" if m.get("ab_window_s") else ""))


def env_rows(env: dict[str, Any] | None) -> list[list[str]]:
    if not env:
        return [["env.json", "missing"]]
    topo = env.get("topology") or {}
    k = env.get("kernel") or {}
    iso = env.get("isolation") or {}
    py = env.get("python") or {}
    chrony = env.get("chrony") or {}
    rows = [
        ["host", _v(env.get("hostname", "-"))],
        ["cpu", _v(env.get("cpu_model", "-"))],
        ["cpus / cores / threads per core", f"{_v(topo.get('logical_cpus'))} / {_v(topo.get('physical_cores'))} / "
                                            f"{_v(topo.get('threads_per_core'))}"],
        ["kernel", _v(k.get("release", "-"))],
        ["kernel cmdline", _v(k.get("cmdline", "-"))],
        ["isolated cpus", _v(iso.get("isolated")) or "(none)"],
        ["nohz_full", _v(iso.get("nohz_full")) or "(none)"],
        ["governor", _v(env.get("governor", "-"))],
        ["THP", _v(env.get("thp", "-"))],
        ["clocksource", _v(env.get("clocksource", "-"))],
        ["chrony at start", _chrony(chrony.get("start"))],
        ["chrony at end", _chrony(chrony.get("end"))],
        ["python", f"{py.get('version', '-')} ({py.get('implementation', '')})"],
        ["packages", ", ".join(f"{n} {v}" for n, v in (py.get("packages") or {}).items())],
        ["git", _v(env.get("git", "-"))],
        ["EC2", _v(env.get("ec2", "-"))],
        ["signal model", _model(env.get("model"))],
    ]
    plan = env.get("plan") or {}
    for name, p in (plan.get("placements") or {}).items():
        rows.append([f"plan: {name}", f"cpus {_v(p.get('cpus'))}, {p.get('wait_policy')}"
                                      f"{', dedicated' if p.get('dedicated') else ''}"])
    return rows


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def html_table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
