"""Session reports: ``report.md`` + self-contained ``report.html`` per session, a comparison for several, and an
index of every rendered session.

Layout written by ``render_sessions(paths, out_dir)``:

* ``<session>/report.md``, ``<session>/report.html``, ``<session>/charts/*.png`` (the report travels with its data)
* ``<out_dir>/<session-name>/`` the same files plus ``meta.json`` (what the index shows)
* ``<out_dir>/compare-<hash>/report.{md,html}`` when several sessions were given
* ``<out_dir>/index.html`` listing every session and comparison rendered into ``out_dir`` so far

A session's report opens with the answer (caerus.report.answer): its paper fills and PnL against latency from a
backtest of its captured books at its own latency, which rendering runs once when the folder has no result yet
(caerus.report.pricing: ``<session>/report-backtest/``).

Numbers come from the ``.hlog`` files (decoded again here, never trusted from a cache); process status, counters
and options from ``summary.json``; machine facts from ``env.json``. A session without ``summary.json`` (its runner
died) still renders from its hlogs, with that stated.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import shutil
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caerus import instruments
from caerus.metrics import rss
from caerus.metrics.caveats import caveats
from caerus.metrics.summary import SessionMetrics, load_metrics
from caerus.report import answer, charts, market, path, pricing, samples, tables

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}td:first-child,th:first-child{text-align:left}
table.kv td{text-align:left}
.caveats{background:#fff6e0;border:1px solid #e8c060;padding:.6em 1.2em}
.died{color:#b00;font-weight:bold} img{max-width:100%} code{background:#f4f4f4}
"""


class SessionNotFound(FileNotFoundError):
    """A path given as a session is not a session folder."""


@dataclass
class Session:
    path: Path
    name: str
    summary: dict[str, Any]
    env: dict[str, Any] | None
    metrics: SessionMetrics
    summary_missing: bool


def _is_session(p: Path) -> bool:
    return p.is_dir() and ((p / "summary.json").exists() or (p / "config.toml").exists() or any(p.glob("*.hlog")))


def newest_session(sessions_dir: Path) -> Path:
    """The most recent session folder under ``sessions_dir`` (by start time in its name, then mtime)."""
    sessions_dir = Path(sessions_dir)
    if not sessions_dir.is_dir():
        raise SessionNotFound(f"no sessions folder {sessions_dir}: run `invoke bench` first")
    found = [p for p in sessions_dir.iterdir() if _is_session(p)]
    if not found:
        raise SessionNotFound(f"no session folders in {sessions_dir}: run `invoke bench` first")
    return max(found, key=lambda p: (p.name[:16], p.stat().st_mtime))


def load_session(path: Path) -> Session:
    path = Path(path)
    if not path.is_dir():
        raise SessionNotFound(f"session folder {path} does not exist")
    if not _is_session(path):
        raise SessionNotFound(f"{path} is not a session folder (no summary.json, config.toml or .hlog files)")
    summary_path = path / "summary.json"
    missing = not summary_path.exists()
    try:
        summary = {} if missing else json.loads(summary_path.read_text())
    except ValueError as exc:
        raise SessionNotFound(f"{summary_path} is not valid JSON: {exc}") from None
    try:
        env = json.loads((path / "env.json").read_text())
    except (OSError, ValueError):
        env = None
    sm = load_metrics(path)
    # The hlogs are the source of truth for numbers; keep the summary's extras (sidecar counts) when present.
    fresh = {md.tag: md.stats() for md in sm.ordered()}
    summary.setdefault("session", path.name)
    summary["metrics"] = fresh
    summary["hlog_bad_lines"] = {k: [list(x) for x in v] for k, v in sm.bad_lines.items()}
    return Session(path=path, name=summary.get("session", path.name), summary=summary, env=env, metrics=sm,
                   summary_missing=missing)


def _session_charts(s: Session) -> dict[str, tuple[str, bytes]]:
    """chart file stem -> (caption, PNG)."""
    ms = s.metrics.metrics
    ordered = [md for md in s.metrics.ordered() if not tables.is_instrument_tag(md.tag)]  # Instruments table's
    lat = [md for md in ordered if not md.tag.startswith("info_age")]
    age = [md for md in ordered if md.tag.startswith("info_age")]
    t0 = s.summary.get("started_ns", 0) / 1e9 or min((float(md.t_start.min()) for md in ordered
                                                       if md.t_start.size), default=0.0)
    out: dict[str, tuple[str, bytes]] = {}
    if lat:
        out["nines_latency"] = ("Latency percentile distributions (nines axis)",
                                charts.nines_chart([(md.tag, md.hist) for md in lat], "Fleet latencies"))
        out["over_time_latency"] = ("Latency over time: max and p99 per interval",
                                    charts.over_time_chart(lat, t0, "Latency per interval"))
    if age:
        out["nines_info_age"] = ("Information age percentile distributions (nines axis)",
                                 charts.nines_chart([(md.tag, md.hist) for md in age], "Information age"))
        out["hist_info_age"] = ("Information age per venue",
                                charts.histogram_chart([(md.tag, md.hist) for md in age], "Information age"))
        out["over_time_info_age"] = ("Information age over time: max and p99 per interval",
                                     charts.over_time_chart(age, t0, "Information age per interval"))
    out["path"] = ("The order path: each segment from its own histogram (missing ones named below the table)",
                   charts.path_chart(_path_rows(s)))
    inst = tables.instrument_series(s.summary, _instrument_names(s))
    if inst:
        out["instruments"] = ("Per instrument: books per venue and the strategy's orders",
                              charts.instruments_chart(*inst))
        curve = _cost_curve(s)
        if curve is not None:
            caption, doc = curve
            out["cost_curve"] = (caption, charts.cost_curve_chart(doc))
    sweep = _latency_sweep(s)
    if sweep is not None:
        out["latency_sweep"] = (sweep[0], charts.latency_sweep_chart(sweep[1]))
    fires = (s.summary.get("exec") or {}).get("fires_per_s") or []
    if fires:
        out["fire_rate"] = ("Fire rate: orders per second (from the exec ring)",
                            charts.rate_chart([(float(t), float(n)) for t, n in fires], "Fire rate", "orders/s"))
    rss_file = s.path / rss.SERIES_FILE
    if rss_file.is_file():
        try:
            out["rss"] = ("Resident memory (RSS) per process over the session (sampled from outside every 5 s)",
                          charts.rss_chart(rss.read_series(rss_file), "Resident memory"))
        except ValueError as exc:  # a damaged file costs its chart, named, not the report
            out["rss"] = (f"Resident memory: {exc}", charts.rss_chart({}, "Resident memory"))
    if not ms:
        out["nines_latency"] = ("No metrics", charts.nines_chart([], "no .hlog data in this session"))
    return out


def _path_rows(s: Session) -> list[path.Row]:
    return path.rows({tag: m.hist for tag, m in s.metrics.metrics.items()})


PATH_HEADERS = ["segment", "from -> to", "p50", "p99", "n"]


def _path_table(s: Session) -> tuple[list[list[str]], str]:
    """The path's rows as table cells, and the sentence naming what was not measured."""
    rows = _path_rows(s)
    cells = [[("  span: " if r.span else "") + r.segment.label, f"{r.segment.start} -> {r.segment.end}",
              samples.cell(tables.fmt_ns(r.p50), 50.0, r.n), samples.cell(tables.fmt_ns(r.p99), 99.0, r.n),
              f"{r.n:,}" if r.measured else "not measured"]
             for r in rows]
    return cells, path.missing_sentence(rows)


def _when(ns: int | None) -> str:
    if not ns:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns / 1e9))


def _overview_rows(s: Session) -> list[list[str]]:
    sm = s.summary
    opts = sm.get("options") or {}
    rows = [
        ["session", s.name],
        ["started", _when(sm.get("started_ns"))],
        ["duration (planned / actual)", f"{sm.get('duration_s', '-')} s / {sm.get('elapsed_s', '-')} s"],
        *market.market_rows(s.env),
        ["options", ", ".join(f"{k}={v}" for k, v in opts.items()) or "-"],
        ["isolated", "yes" if sm.get("isolated") else "NO"],
        ["hlog files", ", ".join(s.metrics.files) or "(none)"],
    ]
    if s.summary_missing:
        rows.append(["summary.json", "MISSING (runner did not finish): numbers from the .hlog files only"])
    return rows


#: where benchmarks/symbols_scaling leaves its newest result for the reports (beside a session folder's parent,
#: or in the reports folder)
COST_CURVE_FILE = "symbols_scaling.json"


def _cost_curve(s: Session) -> tuple[str, dict[str, Any]] | None:
    """The newest cost curve measured on this machine, for a many-instrument session's report (None if none)."""
    for folder in (s.path.parent, s.path.parent.parent / "reports"):
        f = folder / COST_CURVE_FILE
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("benchmark") == "symbols_scaling":
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime((doc.get("started_ns") or 0) / 1e9))
            return (f"The cost curve: benchmarks/symbols_scaling as last run here ({when}, {f}); not this session's "
                    f"own measurement", doc)
    return None


#: where `caerus backtest --session S --latency-sweep ...` leaves its sweep (S/backtest/latency_sweep.json)
LATENCY_SWEEP_FILE = ("backtest", "latency_sweep.json")


def _latency_sweep(s: Session) -> tuple[str, dict[str, Any]] | None:
    """A backtest's latency sweep of this session, when one exists (read as a file: reports never import research)."""
    f = s.path.joinpath(*LATENCY_SWEEP_FILE)
    try:
        doc = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and doc.get("kind") == "latency_sweep" and doc.get("points")):
        return None
    return (f"Latency sensitivity: a backtest of this session's books with its measured latency plus each added "
            f"latency ({f}; seed {doc.get('seed')})", doc)


def _instrument_names(s: Session) -> dict[int, str]:
    """Instrument id -> name from the session's instruments.json (ids alone when it is missing or unreadable)."""
    try:
        return {i.id: i.name for i in instruments.load(s.path / instruments.FILE_NAME)}
    except instruments.InstrumentError:
        return {}


def _markdown(s: Session, cav: list[str], chart_files: dict[str, tuple[str, bytes]]) -> str:
    md = [f"# Session {s.name}\n"]
    md.append(answer.markdown(answer.opening(s.path, s.summary, s.env)))
    md.append("## The session\n")
    md.append(tables.markdown_table(["", ""], _overview_rows(s)))
    if cav:
        md.append("## Caveats\n")
        md += [f"- {c}" for c in cav]
        md.append("")
    md.append("## Headline\n")
    md.append(tables.markdown_table(tables.HEADLINE_HEADERS, tables.headline_rows(s.summary)))
    md += [note + "\n" for note in tables.headline_notes(s.summary)]
    warming = tables.warming_line(s.summary)
    if warming:
        md.append(warming + "\n")
    ab = tables.ab_table(s.summary)
    if ab:
        md += ["## Naive rule vs model (in-session A/B)\n", ab[2] + "\n", tables.markdown_table(ab[0], ab[1])]
    inst_rows = tables.instrument_rows(s.summary, _instrument_names(s))
    if inst_rows:
        md.append("## Instruments\n")
        md.append(tables.markdown_table(tables.INSTRUMENT_HEADERS, inst_rows))
    cells, gaps = _path_table(s)
    md.append("## The order path\n")
    md.append(tables.markdown_table(PATH_HEADERS, cells))
    md.append(gaps + "\n")
    for stem, (caption, _) in chart_files.items():
        md.append(f"### {caption}\n\n![{caption}](charts/{stem}.png)\n")
    md.append("## Processes\n")
    md.append(tables.markdown_table(tables.PROCESS_HEADERS, tables.process_rows(s.summary)))
    deaths = tables.death_rows(s.summary)
    if deaths:
        md.append("### Deaths and restarts\n")
        chaos = tables.chaos_line(s.summary)
        if chaos:
            md.append(chaos + "\n")
        continuity = tables.continuity_line(s.summary)
        if continuity:
            md.append(continuity + "\n")
        md.append(tables.markdown_table(tables.DEATH_HEADERS, deaths))
    rss_rows = tables.rss_rows(s.summary)
    if rss_rows:
        md.append("## Memory (RSS)\n")
        md.append(tables.markdown_table(tables.RSS_HEADERS, rss_rows))
    for level, title, headers, rows in tables.count_tables(s.summary):
        md.append(f"{'#' * level} {title}\n")
        md.append(tables.markdown_table(headers, rows))
    md.append("## Environment\n")
    md.append(tables.markdown_table(["", ""], tables.env_rows(s.env)))
    return "\n".join(md)


def _img(png: bytes, caption: str) -> str:
    b64 = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{b64}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style></head><body>{body}</body></html>\n")


def _html(s: Session, cav: list[str], chart_files: dict[str, tuple[str, bytes]]) -> str:
    parts = [f"<h1>Session {html.escape(s.name)}</h1>", answer.html_section(answer.opening(s.path, s.summary, s.env)),
             "<h2>The session</h2>", tables.html_table(["", ""], _overview_rows(s), "kv")]
    died = [n for n, p in (s.summary.get("processes") or {}).items() if p.get("status") in ("died", "failed_to_start")]
    if died:
        parts.append(f'<p class="died">Process(es) died during the session: {html.escape(", ".join(died))}</p>')
    if cav:
        parts.append('<div class="caveats"><h2>Caveats</h2><ul>'
                     + "".join(f"<li>{html.escape(c)}</li>" for c in cav) + "</ul></div>")
    parts.append("<h2>Headline</h2>")
    parts.append(tables.html_table(tables.HEADLINE_HEADERS, tables.headline_rows(s.summary)))
    parts += [f"<p>{html.escape(note)}</p>" for note in tables.headline_notes(s.summary)]
    warming = tables.warming_line(s.summary)
    if warming:
        parts.append(f"<p>{html.escape(warming)}</p>")
    ab = tables.ab_table(s.summary)
    if ab:
        parts += ["<h2>Naive rule vs model (in-session A/B)</h2>", f"<p>{html.escape(ab[2])}</p>",
                  tables.html_table(ab[0], ab[1])]
    inst_rows = tables.instrument_rows(s.summary, _instrument_names(s))
    if inst_rows:
        parts += ["<h2>Instruments</h2>", tables.html_table(tables.INSTRUMENT_HEADERS, inst_rows)]
    cells, gaps = _path_table(s)
    parts += ["<h2>The order path</h2>", tables.html_table(PATH_HEADERS, cells), f"<p>{html.escape(gaps)}</p>"]
    parts.append("<h2>Distributions and time series</h2>")
    parts += [_img(png, caption) for caption, png in chart_files.values()]
    parts.append("<h2>Processes</h2>")
    parts.append(tables.html_table(tables.PROCESS_HEADERS, tables.process_rows(s.summary)))
    deaths = tables.death_rows(s.summary)
    if deaths:
        chaos = tables.chaos_line(s.summary)
        continuity = tables.continuity_line(s.summary)
        parts += ["<h3>Deaths and restarts</h3>", *([f"<p>{html.escape(chaos)}</p>"] if chaos else []),
                  *([f"<p>{html.escape(continuity)}</p>"] if continuity else []),
                  tables.html_table(tables.DEATH_HEADERS, deaths)]
    rss_rows = tables.rss_rows(s.summary)
    if rss_rows:
        parts += ["<h2>Memory (RSS)</h2>", tables.html_table(tables.RSS_HEADERS, rss_rows)]
    for level, title, headers, rows in tables.count_tables(s.summary):
        parts.append(f"<h{level}>{title}</h{level}>")
        parts.append(tables.html_table(headers, rows))
    parts.append("<h2>Environment</h2>")
    parts.append(tables.html_table(["", ""], tables.env_rows(s.env), "kv"))
    return _page(f"Caerus session {s.name}", "".join(parts))


def _write_report(dest: Path, md: str, page: str, chart_files: dict[str, tuple[str, bytes]]) -> None:
    (dest / "charts").mkdir(parents=True, exist_ok=True)
    for stem, (_, png) in chart_files.items():
        (dest / "charts" / f"{stem}.png").write_bytes(png)
    (dest / "report.md").write_text(md)
    (dest / "report.html").write_text(page)


def _meta(s: Session, cav: list[str], kind: str = "session") -> dict[str, Any]:
    m = s.summary.get("metrics") or {}
    ttd, tte = m.get("tick_to_decision") or {}, m.get("tick_to_eval") or {}
    return {
        "kind": kind, "name": s.name, "started_ns": s.summary.get("started_ns"),
        "duration_s": s.summary.get("elapsed_s", s.summary.get("duration_s")),
        "tick_to_decision": {"p50": ttd.get("p50"), "p99": ttd.get("p99"), "n": ttd.get("n", 0)},
        "tick_to_eval": {"p50": tte.get("p50"), "p99": tte.get("p99"), "n": tte.get("n", 0)},
        "died": [n for n, p in (s.summary.get("processes") or {}).items()
                 if p.get("status") in ("died", "failed_to_start")],
        "caveats": len(cav), "source": str(s.path.resolve()),
    }


def render_session(path: Path, out_dir: Path | None = None) -> Session:
    """Render one session into its folder (and into ``out_dir/<name>/`` when given)."""
    s = load_session(path)
    pricing.ensure(s.path)  # the opening section's backtest (a subprocess; kept once it succeeded)
    cav = caveats(s.summary, s.env)
    if s.summary_missing:
        cav.insert(0, "summary.json is missing: the session runner did not finish; process status and counts "
                      "are unknown.")
    chart_files = _session_charts(s)
    md = _markdown(s, cav, chart_files)
    page = _html(s, cav, chart_files)
    _write_report(s.path, md, page, chart_files)
    if out_dir is not None:
        dest = Path(out_dir) / s.path.name
        if dest.resolve() != s.path.resolve():
            _write_report(dest, md, page, chart_files)
            (dest / "meta.json").write_text(json.dumps(_meta(s, cav), indent=1))
    return s


def render_comparison(sessions: list[Session], out_dir: Path) -> Path:
    """Several sessions side by side: a headline table per metric and overlaid nines charts."""
    key = hashlib.sha1("\n".join(s.name for s in sessions).encode()).hexdigest()[:10]
    dest = Path(out_dir) / f"compare-{key}"
    headers, rows = tables.comparison_rows([s.summary for s in sessions])
    tags: list[str] = []
    for s in sessions:
        for metric in s.metrics.ordered():
            if metric.tag not in tags and not tables.is_instrument_tag(metric.tag):
                tags.append(metric.tag)
    chart_files: dict[str, tuple[str, bytes]] = {}
    for tag in tags:
        series = [(s.name, s.metrics.metrics[tag].hist) for s in sessions if tag in s.metrics.metrics]
        chart_files[f"nines_{tag}"] = (f"{tables.label(tag)}: percentile distributions",
                                       charts.nines_chart(series, tables.label(tag)))
    names = ", ".join(s.name for s in sessions)
    cav_lines = []
    for s in sessions:
        for c in caveats(s.summary, s.env):
            cav_lines.append(f"{s.name}: {c}")
    md = [f"# Comparison of {len(sessions)} sessions\n", f"Sessions: {names}\n", "## Headline\n",
          tables.markdown_table(headers, rows)]
    if cav_lines:
        md += ["## Caveats\n", *[f"- {c}" for c in cav_lines], ""]
    md += [f"### {cap}\n\n![{cap}](charts/{stem}.png)\n" for stem, (cap, _) in chart_files.items()]
    links = "".join(f'<li><a href="{_href(s.path.name, "..")}">{html.escape(s.name)}</a></li>' for s in sessions)
    body = [f"<h1>Comparison of {len(sessions)} sessions</h1><ul>{links}</ul>", "<h2>Headline</h2>",
            tables.html_table(headers, rows)]
    if cav_lines:
        body.append('<div class="caveats"><h2>Caveats</h2><ul>'
                    + "".join(f"<li>{html.escape(c)}</li>" for c in cav_lines) + "</ul></div>")
    body += [_img(png, cap) for cap, png in chart_files.values()]
    _write_report(dest, "\n".join(md), _page("Caerus comparison", "".join(body)), chart_files)
    (dest / "meta.json").write_text(json.dumps({"kind": "comparison", "name": dest.name,
                                                "sessions": [s.name for s in sessions],
                                                "started_ns": max(s.summary.get("started_ns") or 0
                                                                  for s in sessions)}, indent=1))
    return dest


def _href(folder: str, parent: str = "") -> str:
    """``[parent/]<folder>/report.html`` as an attribute value: the folder percent-encoded (a name such as
    ``javascript:alert(1)`` stays a relative path, never a scheme, and a quote never ends the attribute)."""
    return html.escape(f"{parent + '/' if parent else ''}{urllib.parse.quote(folder, safe='')}/report.html")


def _index_latency(m: Any) -> str:
    """"p50 / p99 (n)" of a meta.json latency entry, the p99 marked when it is only the maximum; "-" for none."""
    if not isinstance(m, dict) or m.get("p50") is None:
        return "-"
    n = int(m.get("n") or 0)
    return (f"{tables.fmt_ns(m.get('p50'))} / {samples.cell(tables.fmt_ns(m.get('p99')), 99.0, n)} "
            f"(n={n:,})")


def write_index(out_dir: Path) -> Path:
    """``out_dir/index.html``: every session and comparison rendered into ``out_dir``, newest first."""
    out_dir = Path(out_dir)
    entries: list[tuple[str, dict[str, Any]]] = []  # (folder, meta)
    for meta_path in out_dir.glob("*/meta.json"):
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            meta = {"kind": "?", "name": meta_path.parent.name, "broken": True}
        entries.append((meta_path.parent.name, meta))
    entries.sort(key=lambda fe: (fe[1].get("started_ns") or 0, str(fe[1].get("name", ""))), reverse=True)
    rows = []
    for folder, e in entries:
        # the link is the folder the report is in (not the name its summary gives), as a relative URL
        link = f'<a href="{_href(folder)}">{html.escape(str(e.get("name", "?")))}</a>'
        if e.get("kind") == "comparison":
            rows.append(f"<tr><td>{link}</td><td>comparison</td><td colspan=5>"
                        f"{html.escape(', '.join(map(str, e.get('sessions', []))))}</td></tr>")
            continue
        died = e.get("died") or []
        rows.append(
            f"<tr><td>{link}</td><td>{html.escape(_when(e.get('started_ns')))}</td>"
            f"<td>{html.escape(str(e.get('duration_s', '-')))} s</td>"
            f"<td>{html.escape(_index_latency(e.get('tick_to_eval')))}</td>"
            f"<td>{html.escape(_index_latency(e.get('tick_to_decision')))}</td>"
            f"<td>{html.escape(str(e.get('caveats', 0)))}</td>"
            f"<td class=\"{'died' if died else ''}\">{html.escape(', '.join(map(str, died)) or 'ok')}</td></tr>"
        )
    table = ("<table><thead><tr><th>session</th><th>started</th><th>duration</th><th>tick-to-eval p50 / p99 (n), "
             "the headline</th><th>tick-to-decision p50 / p99 (n fires)</th><th>caveats</th><th>processes</th></tr>"
             "</thead><tbody>" + "".join(rows) + "</tbody></table>")
    path = out_dir / "index.html"
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(_page("Caerus sessions", f"<h1>Caerus sessions ({len(entries)})</h1>{table}"))
    return path


def render_sessions(paths: list[Path], out_dir: Path) -> dict[str, Any]:
    """Render each session, a comparison when several, and ``out_dir/index.html``. Bad paths fail first."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise SessionNotFound("no session given")
    for p in paths:  # validate everything before writing anything
        if not _is_session(p):
            raise SessionNotFound(f"{p} is not a session folder (no summary.json, config.toml or .hlog files)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sessions = [render_session(p, out_dir) for p in paths]
    result: dict[str, Any] = {"sessions": [str(s.path / "report.html") for s in sessions]}
    if len(sessions) > 1:
        result["comparison"] = str(render_comparison(sessions, out_dir) / "report.html")
    result["index"] = str(write_index(out_dir))
    return result


def remove_rendered(out_dir: Path, name: str) -> None:
    """Delete one rendered session from ``out_dir`` (the session folder itself is untouched)."""
    target = Path(out_dir) / name
    if target.is_dir() and (target / "meta.json").exists():
        shutil.rmtree(target)
