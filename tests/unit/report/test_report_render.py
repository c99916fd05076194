"""Reports from synthetic session folders: every metric present, caveats, died processes, comparison, index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from caerus.metrics import hdr
from caerus.metrics.summary import load_metrics
from caerus.report import tables
from caerus.report.render import SessionNotFound, newest_session, render_sessions
from caerus.session.collect import family_total, headline_counts

ROOT = Path(__file__).resolve().parents[3]


def test_session_folder_has_collected_files(two_sessions: tuple[Path, Path, Path]) -> None:
    _, a, _ = two_sessions
    for tag in hdr.FLEET_TAGS:
        assert (a / f"{tag}.hgrm").exists(), tag
    summary = json.loads((a / "summary.json").read_text())
    assert summary["metrics"]["tick_to_decision"]["n"] == 12 * 500
    assert summary["metrics"]["tick_to_decision"]["clock_artifacts"] == 3
    assert summary["processes"]["feed-hyperliquid"]["status"] == "died"
    assert any("feed-hyperliquid DIED" in c for c in summary["caveats"])


@pytest.mark.slow
def test_report_contains_every_metric_and_caveats(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, a, _ = two_sessions
    out = tmp_path / "reports"
    result = render_sessions([a], out)
    md = (a / "report.md").read_text()
    page = (a / "report.html").read_text()
    for tag in hdr.FLEET_TAGS:
        assert tables.label(tag) in md, tag
        assert tables.label(tag) in page, tag
    # the headline p99 is the histogram's p99, formatted
    merged = load_metrics(a).metrics["tick_to_decision"].hist
    assert tables.fmt_ns(hdr.percentile(merged, 99.0)) in md
    assert "NOT ISOLATED" in md and "3 clock artifact(s)" in md
    # the order path: measured segments from their histograms, the rest named with the reason
    assert "## The order path" in md and "The order path" in page
    assert "Not measured in this session: " in md and "stack (the Binance feed read with websockets' asyncio" in md
    assert "No kernel receive stamps (t_wire) this session" in md
    assert "feed-hyperliquid" in page and 'class="died"' in page
    # the count tables, the same in both pages
    assert "## Counts\n" in md and "<h2>Counts</h2>" in page
    assert "### Counters by process\n" in md and "<h3>Counters by process</h3>" in page
    # self-contained: every image inline, nothing fetched
    srcs = re.findall(r'src="([^"]+)"', page)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert len(srcs) >= 4
    for rel in re.findall(r"\]\((charts/[^)]+)\)", md):
        assert (a / rel).stat().st_size > 1000
    assert (out / a.name / "report.html").exists() and (out / a.name / "meta.json").exists()
    assert Path(result["index"]).exists()


@pytest.mark.slow
def test_comparison_and_index_list_every_session(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, a, b = two_sessions
    out = tmp_path / "reports"
    result = render_sessions([a, b], out)
    comp = Path(result["comparison"]).read_text()
    assert a.name in comp and b.name in comp
    assert comp.count("data:image/png;base64,") == len(hdr.FLEET_TAGS)
    index = (out / "index.html").read_text()
    assert a.name in index and b.name in index and "compare-" in index
    assert index.index(f'href="{b.name}/report.html"') < index.index(f'href="{a.name}/report.html"')  # newest first
    # a later render of one session keeps the others in the index
    render_sessions([b], out)
    assert a.name in (out / "index.html").read_text()


def test_newest_session_and_clear_errors(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, _, b = two_sessions
    assert newest_session(root) == b
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(SessionNotFound, match="no session folders"):
        newest_session(empty)
    with pytest.raises(SessionNotFound, match="not a session folder"):
        render_sessions([empty], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # validated before writing anything


@pytest.mark.slow
def test_session_without_summary_still_renders(two_sessions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, _, b = two_sessions
    c = tmp_path / "20260103T000000Z-cccc"
    c.mkdir()
    for f in b.glob("*.hlog"):
        (c / f.name).write_bytes(f.read_bytes())
    render_sessions([c], tmp_path / "out")
    md = (c / "report.md").read_text()
    assert "summary.json is missing" in md
    assert tables.label("tick_to_decision") in md


def test_headline_counts_do_not_double_count() -> None:
    total, by = family_total({"rejects": 5, "reject.crossed": 3, "reject.locked": 2, "rejected_bytes": 9},
                             ("rejects",), ("reject",))
    assert (total, by) == (5, {"crossed": 3, "locked": 2})
    total, by = family_total({"reject.crossed": 3, "reject.locked": 2}, ("rejects",), ("reject",))
    assert total == 5
    # the counter names the fleet publishes (feed outputs, strategy/execution apps, capture pipeline)
    hc = headline_counts({"feed-binance": {"books": 10, "rejects": 2, "reject.crossed": 2, "reconnects": 1,
                                           "fail.closed_by_peer": 1},
                          "feed-hyperliquid": {"books": 5, "rejects": 0, "reconnects": 0},
                          "strategy": {"books.binance": 99, "orders": 4, "orders.entry": 4},
                          "execution": {"orders": 4, "books": 15, "paper.pnl.realized": 1.0,
                                        "paper.pnl.total": 2.5},
                          "capture": {"lost.book.binance": 2, "records.book.binance": 10}},
                         {"orders": 4, "ring_lost": 1})
    assert hc["books"] == 15 and hc["fires"] == 4 and hc["ring_losses"] == 3
    assert hc["rejects"] == 2 and hc["rejects_by"] == {"feed-binance:crossed": 2}
    assert hc["reconnects"] == 1 and hc["paper_pnl"] == 2.5




def test_warming_line_compares_real_fires_with_and_without_shadows() -> None:
    from caerus.report.tables import warming_line

    assert warming_line({"metrics": {"tick_to_decision": {"n": 5, "p50": 50_000}}}) is None  # no shadows: no line
    line = warming_line({"metrics": {"tick_to_decision_warmed": {"n": 40, "p50": 20_000},
                                     "tick_to_decision_unwarmed": {"n": 38, "p50": 50_000},
                                     "queue_transit_warmed": {"n": 40, "p50": 9_000},
                                     "queue_transit_unwarmed": {"n": 38, "p50": 27_000}}})
    assert line is not None
    assert "20 us with shadow orders flowing (n=40) vs 50 us without (n=38): 2.50x" in line
    assert "queue transit 9 us (n=40) vs 27 us (n=38)" in line
    one_sided = warming_line({"metrics": {"tick_to_decision_warmed": {"n": 3, "p50": 20_000}}})
    assert one_sided is not None and "x;" not in one_sided and "n=0" in one_sided


def test_headline_leaves_out_optional_metrics_without_samples_but_never_a_fleet_metric() -> None:
    from caerus.report.tables import headline_rows, label

    rows = headline_rows({"metrics": {"tick_to_decision_warmed": {"n": 0}, "wire_to_wire": {"n": 3, "p50": 9e5},
                                      "tick_to_decision": {"n": 0}}})
    labels = [r[0] for r in rows]
    assert label("wire_to_wire") in labels and label("tick_to_decision_warmed") not in labels
    assert label("tick_to_decision") in labels and label("queue_transit") in labels  # fleet tags always shown


@pytest.mark.slow
def test_rss_over_time_is_drawn_from_the_sessions_samples(two_sessions: tuple[Path, Path, Path],
                                                          tmp_path: Path) -> None:
    _, a, b = two_sessions
    assert (a / "rss.csv").is_file()  # the synthetic session writes its samples as a real one does
    render_sessions([a], tmp_path / "reports")
    md = (a / "report.md").read_text()
    assert "Resident memory (RSS) per process over the session" in md
    assert (a / "charts" / "rss.png").stat().st_size > 1000
    # a damaged file costs its chart, named, not the report
    (b / "rss.csv").write_text("process,t_s\nfeed-binance,zero\n")
    render_sessions([b], tmp_path / "reports-b")
    md_b = (b / "report.md").read_text()
    assert "Resident memory: " in md_b and "rss.csv" in md_b and "expected process,t_s,rss_bytes" in md_b
