"""The report opens with the answer (issue 46 item 5): the strategy's paper fills with their n, and PnL against
latency from the backtest of the session's books at its own latency -- read from the files the session and the
backtest left, or, when there is no capture store or the backtest failed, a sentence saying so.

These sessions are synthetic (in integration: making one probes the machine's chrony, as a real one does) and the
backtest's files are written by the test; the real backtest of a real session is test_report_answer.py."""

from __future__ import annotations

import json
from pathlib import Path

from caerus.report import answer, pricing
from caerus.report.render import render_sessions
from caerus.session.synthetic import make_session

POINTS = [
    {"point": "0", "label": "order path 0 (optimistic; not the fleet's)", "order_path_ns": 0, "orders": 24,
     "fills": 22, "fill_rate": 22 / 24, "pnl_marked": -1.1183, "pnl_realised": -0.001, "fees": 1.1173,
     "markout_1s_bps": -0.85},
    {"point": "p50", "label": "order path p50 2,236.3 us, every order", "order_path_ns": 2_236_280, "orders": 24,
     "fills": 22, "fill_rate": 22 / 24, "pnl_marked": -1.1193, "pnl_realised": -0.002, "fees": 1.1173,
     "markout_1s_bps": -0.85},
    {"point": "p99", "label": "order path p99 7,303.7 us, every order", "order_path_ns": 7_303_704, "orders": 23,
     "fills": 20, "fill_rate": 20 / 23, "pnl_marked": -1.3203, "pnl_realised": -0.003, "fees": 1.0173,
     "markout_1s_bps": -0.86},
    {"point": "2x", "label": "every drawn order latency doubled", "order_path_ns": None, "orders": 23, "fills": 20,
     "fill_rate": 20 / 23, "pnl_marked": -1.3203, "pnl_realised": -0.003, "fees": 1.0173, "markout_1s_bps": -0.86},
]


def _result(session: Path) -> dict[str, object]:
    seg = {"n": 22, "p50_ns": 100_000, "p99_ns": 2_000_000, "origin": "measured"}
    return {
        "assumptions": {
            "seed": 1, "data": {"books": 3353, "span_s": 28.3},
            "latency": {"source": f"measured: session {session.name} (venue segments: profile fleet-2vcpu)",
                        "order_path": {"p50_ns": 2_236_280, "p99_ns": 7_303_704, "draws": 200_000},
                        "segments": {"seen_to_decision": seg, "queue_transit": seg, "pickup_to_sent": seg,
                                     "wire": {"n": 0, "p50_ns": 1_615_737, "p99_ns": 6_439_098,
                                              "origin": "profile fleet-2vcpu: published"}}},
            "fills": {"rule": "IOC vs the top of book", "hl_block": {"block_ns": 69_000_000, "block_source": "est"}},
        },
        "metrics": {"total": {"orders": 24, "fills": 22, "pnl": {"marked": -1.1193, "realised": -0.002,
                                                                 "fees": 1.1173},
                              "markouts": {"100ms": {"n": 22, "mean_bps": -1.93},
                                           "1000ms": {"n": 21, "mean_bps": -0.85},
                                           "5000ms": {"n": 19, "mean_bps": 0.86}}}},
        "latency_points": {"points": POINTS},
    }


def _paper() -> dict[str, object]:
    def acct(fills: int, pnl: float, n1: int) -> dict[str, object]:
        return {"fills": fills, "realized": 0.1, "unrealized": 0.0, "fees": 0.5, "total_pnl": pnl,
                "markouts": {"100ms": {"n": fills, "mean_bps": -1.0, "pending": 0},
                             "1000ms": {"n": n1, "mean_bps": 2.0, "pending": fills - n1},
                             "5000ms": {"n": 0, "mean_bps": None, "pending": fills}}}

    return {"config": {"fee_bps": 4.5, "markout_ms": [100.0, 1000.0, 5000.0]}, "engine": {"orders": 30},
            # two instruments: the section pools every account, not the first instrument's only
            "instruments": {"0": {"hyperliquid": acct(20, -0.75, 18)}, "1": {"hyperliquid": acct(5, 0.25, 5)}},
            "venues": {"hyperliquid": acct(20, -0.75, 18)}}


def test_a_session_without_a_capture_store_says_it_could_not_price_latency(tmp_path: Path) -> None:
    s = make_session(tmp_path / "s", intervals=3, samples_per_interval=50, seed=3)
    render_sessions([s], tmp_path / "reports")
    md = (s / "report.md").read_text()
    assert md.index(f"## {answer.TITLE}") < md.index("## The session") < md.index("## Headline")
    assert "PnL against latency was not computed: the session folder has no capture store" in md
    assert "| p50 | order path" not in md
    assert "no capture store" in (s / "report.html").read_text()
    assert not (s / pricing.DIR).exists()  # nothing was run


def test_the_opening_shows_the_paper_fills_and_the_latency_points_the_files_hold(tmp_path: Path) -> None:
    s = make_session(tmp_path / "s", intervals=3, samples_per_interval=50, seed=4)
    (s / "capture").mkdir()
    (s / "capture" / "store").write_text("")
    (s / "paper.json").write_text(json.dumps(_paper()))
    folder = s / pricing.DIR
    folder.mkdir()
    argv, _ = pricing.command(s)
    run = {"argv": argv, "returncode": 0, "why": ""}
    (folder / pricing.RUN).write_text(json.dumps(run))
    (folder / pricing.RESULT).write_text(json.dumps(_result(s)))
    render_sessions([s], tmp_path / "reports")
    assert json.loads((folder / pricing.RUN).read_text()) == run  # a result that exists is kept: nothing reran
    md = (s / "report.md").read_text()
    opening = md[md.index(f"## {answer.TITLE}"):md.index("## The session")]
    # the paper fills of both instruments, pooled: 25 fills, -0.5 USD, the 1 s markout over 23 settled fills
    assert ("| the session: its paper engine's fills (paper.json) | 30 | 25 | -0.5000 | +0.2000 | 1.0000 | "
            "-1.00 (n=25) | +2.00 (n=23; 2 pending) | - (n=0; 25 pending) |") in opening
    assert ("| backtest of the same books at this session's latency (drawn, seed 1) | 24 | 22 | -1.1193 | -0.0020 | "
            "1.1173 | -1.93 (n=22) | -0.85 (n=21) | +0.86 (n=19) |") in opening
    assert ("| 0 | order path 0 (optimistic; not the fleet's) | 24 | 22 | 92% | -1.1183 | - | 1.1173 | -0.85 |"
            in opening)
    assert "| p50 | order path p50 2,236.3 us, every order | 24 | 22 | 92% | -1.1193 | -0.0010 |" in opening
    assert "| p99 | order path p99 7,303.7 us, every order | 23 | 20 | 87% | -1.3203 | -0.2020 |" in opening
    assert "| 2x | every drawn order latency doubled | 23 | 20 | 87% | -1.3203 | -0.2020 |" in opening
    assert "-1.1193 at this session's p50 order path (2.24 ms) and -1.3203 at its p99 (7.3 ms)" in opening
    assert "decision 100 us p50 / 2 ms (= max) p99 (n = 22)" in opening  # 22 fires: their p99 is their max
    assert f"--latency-from {s.resolve()}" in opening and "--start strategy" in opening


def test_a_failed_backtest_is_named_not_hidden(tmp_path: Path) -> None:
    s = make_session(tmp_path / "s", intervals=3, samples_per_interval=50, seed=5)
    (s / "capture").mkdir()
    (s / "capture" / "store").write_text("")
    (s / pricing.DIR).mkdir()
    (s / pricing.DIR / pricing.RUN).write_text(json.dumps(
        {"argv": ["python", "-m", "caerus", "backtest"], "returncode": 2,
         "why": "`caerus backtest` exited with 2: caerus backtest: no books in the store"}))
    summary = json.loads((s / "summary.json").read_text())
    op = answer.opening(s, summary, None)
    assert "not computed: `caerus backtest` exited with 2: caerus backtest: no books in the store" in op.lead[0]
    assert op.points_rows == []
