"""Report generation for a long session: >= 10^7 samples per metric across interval histograms, goal <= 30 s.

Builds a synthetic session folder (caerus.session.synthetic: one .hlog per recording process, 1 s intervals,
7 metrics) and times ``render_sessions`` on it -- decode every interval, merge, percentiles, charts, Markdown and
self-contained HTML, index. In-run reference: decoding + merging the same .hlog files alone
(``load_metrics``), so the ratio says how much the rendering adds on top of reading the data.

    python -m benchmarks.report_gen [--quick] [--json PATH]
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import at_most, benchmark_parser, emit, summarize
from caerus.metrics.summary import load_metrics
from caerus.report.render import render_sessions
from caerus.session.synthetic import make_session

GOAL_S = 30.0


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--intervals", type=int, help="interval histograms per metric (default 3600; quick 300)")
    parser.add_argument("--per-interval", type=int, help="samples per interval (default 2800; quick 2000)")
    parser.add_argument("--repeat", type=int, help="timed renders (default 1; quick 2)")
    args = parser.parse_args(argv)
    intervals = args.intervals or (300 if args.quick else 3600)
    per = args.per_interval or (2000 if args.quick else 2800)
    repeat = args.repeat or (2 if args.quick else 1)
    tmp = Path(tempfile.mkdtemp(prefix="caerus-report-gen-"))
    try:
        t0 = time.perf_counter()
        d = make_session(tmp / "sessions", intervals=intervals, samples_per_interval=per, seed=args.seed)
        setup_s = time.perf_counter() - t0
        sm = load_metrics(d)
        n_min = min(md.n for md in sm.metrics.values())
        print(f"synthetic session: {len(sm.metrics)} metrics x {intervals} intervals, >= {n_min:,} samples per "
              f"metric (built in {setup_s:.1f} s)")
        ref_ns, render_ns = [], []
        for i in range(repeat):
            t = time.perf_counter_ns()
            load_metrics(d)
            ref_ns.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            render_sessions([d], tmp / f"reports{i}")
            render_ns.append(time.perf_counter_ns() - t)
        best = min(render_ns) / 1e9
        goals = [at_most("report generation (s)", best, GOAL_S, "s")]
        if not args.quick and n_min < 10**7:
            print(f"warning: only {n_min:,} samples per metric (< 10^7): the goal is not measured as specified")
        emit(
            "report_gen",
            {"render_session": summarize(render_ns), "reference_decode_merge": summarize(ref_ns)},
            ratios={"render / decode+merge": min(render_ns) / max(1, min(ref_ns))},
            goals=goals,
            quick=args.quick,
            json_path=args.json,
            extra={"intervals": intervals, "samples_per_interval": per, "samples_per_metric_min": n_min,
                   "metrics": len(sm.metrics)},
        )
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
