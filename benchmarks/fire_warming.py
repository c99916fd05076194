"""Fire-path warming: real fires' tick-to-decision with and without shadow orders, inside the same sessions.

The real strategy (``mode = "latency_arb"``) fires only when the emulated market jumps: a rare path, cold in the
caches, the branch history and CPython's specialised bytecode. With ``shadow_every_ms`` the strategy rehearses
that path (decision, order ring, execution pickup, risk, the transport's serialisation) without sending; with
``shadow_ab_window_s`` it alternates windows with shadows on and off, and records real fires' tick-to-decision per
window kind. Both arms run in the same processes, on the same market, interleaved: the ratio is the finding.

    python -m benchmarks.fire_warming [--quick] [--json PATH] [--seconds S] [--rounds R]

Metric names: ``tick_to_decision warmed|unwarmed`` (t_decision - t_recv, real fires), ``queue_transit
warmed|unwarmed`` (t_pickup - t_decision, real orders), ``shadow_to_decision`` and ``shadow_pickup_to_done`` (the
rehearsals themselves). Ratios: unwarmed / warmed p50 (above 1: the warming pays).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.common import benchmark_parser, emit, run_session, summarize_histogram

TAGS = {
    "tick_to_decision_warmed": "tick_to_decision warmed",
    "tick_to_decision_unwarmed": "tick_to_decision unwarmed",
    "queue_transit_warmed": "queue_transit warmed",
    "queue_transit_unwarmed": "queue_transit unwarmed",
    "shadow_to_decision": "shadow_to_decision",
    "shadow_pickup_to_done": "shadow_pickup_to_done",
}
# A faster-firing real strategy than the defaults (more samples per arm), otherwise the real one.
STRATEGY_TOML = "cooldown_ms = 200.0\nshadow_every_ms = {every}\nshadow_ab_window_s = {window}\n"


def one_session(work: Path, seconds: float, seed: int, jumps_per_min: float, timeout_s: float) -> Path:
    return run_session("fire_warming", work / "sessions", seconds, seed,
                       ["--strategy-config", str(work / "strategy.toml"), "--jumps-per-min", f"{jumps_per_min:g}"],
                       timeout_s)


def main(argv: list[str] | None = None) -> int:
    from caerus.metrics import hdr
    from caerus.metrics.summary import load_metrics

    p = benchmark_parser(__doc__)
    p.add_argument("--seconds", type=float, help="length of each session")
    p.add_argument("--rounds", type=int, help="sessions")
    p.add_argument("--every-ms", type=float, default=100.0, help="shadow_every_ms (default 100)")
    p.add_argument("--window-s", type=float, default=5.0, help="shadow_ab_window_s (default 5)")
    p.add_argument("--jumps-per-min", type=float, default=60.0, help="emulated market jumps (default 60)")
    args = p.parse_args(argv)
    seconds = args.seconds or (30.0 if args.quick else 120.0)
    rounds = args.rounds or (1 if args.quick else 2)
    merged: dict[str, hdr.HdrHistogram] = {}
    with tempfile.TemporaryDirectory(prefix="caerus-warm-") as tmp:
        work = Path(tmp)
        (work / "strategy.toml").write_text(STRATEGY_TOML.format(every=args.every_ms, window=args.window_s))
        for r in range(rounds):
            d = one_session(work, seconds, args.seed + r, args.jumps_per_min, timeout_s=seconds * 4 + 180)
            for tag, m in load_metrics(d).metrics.items():
                if tag in TAGS:
                    hdr.add_into(merged.setdefault(tag, hdr.new_histogram()), m.hist)
    metrics = {TAGS[t]: summarize_histogram(h) for t, h in merged.items() if h.get_total_count()}
    ratios = {}
    for name in ("tick_to_decision", "queue_transit"):
        w, u = metrics.get(f"{name} warmed"), metrics.get(f"{name} unwarmed")
        if w and u and w["p50"]:
            ratios[f"unwarmed/warmed {name} p50"] = u["p50"] / w["p50"]
    missing = [name for name in TAGS.values() if name not in metrics]
    emit("fire_warming", metrics, ratios=ratios, quick=args.quick, json_path=args.json,
         extra={"seconds": seconds, "rounds": rounds, "shadow_every_ms": args.every_ms,
                "shadow_ab_window_s": args.window_s, "jumps_per_min": args.jumps_per_min, "absent": missing})
    if missing:
        print("absent (no samples): " + ", ".join(missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
