"""What a running ``caerus exporter`` costs the hot path: tick-to-decision with the exporter on and off.

Each repetition is a real local session (``caerus session``, the strategy in ``mode = "bench"``: an order on every
Binance book, paper transport, no capture). "on" sessions start the exporter (``--exporter-port``) and this process
scrapes it every second, as Prometheus would; "off" sessions have no exporter. Arms alternate in ABBA order so
machine noise falls on both, and the ratio on / off of the merged tick-to-decision p50 and p99 is the cost
(issue 31: <= 1.05). The exporter reads only what the processes already publish (counter blocks, 1 s .hlog
intervals), so a ratio above 1 is the exporter's CPU time competing with the fleet on a small machine, not work
added per message.

    python -m benchmarks.exporter_overhead [--quick] [--json PATH] [--seconds S] [--rounds R]
"""

from __future__ import annotations

import socket
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks.common import at_most, benchmark_parser, emit, run_session, summarize_histogram

ARMS = ("off", "on")
STRATEGY_TOML = 'mode = "bench"\norder_qty = 0.001\nmax_position = 0.002\n'
EXECUTION_TOML = "[risk]\nmax_order_qty = 0.01\nmax_position = 0.25\nmax_orders_per_s = 100\nprice_band_bps = 500.0\n"
GOAL_RATIO = 1.05


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Scraper(threading.Thread):
    """GET /metrics every second until stopped (each request bounded); counts the answers with samples."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.halt = threading.Event()
        self.scrapes = 0

    def run(self) -> None:
        while not self.halt.wait(1.0):
            try:
                with urllib.request.urlopen(self.url, timeout=2.0) as r:
                    if b"caerus_latency_seconds_bucket" in r.read():
                        self.scrapes += 1
            except (urllib.error.URLError, OSError):
                pass  # the exporter starts after the emulator and the fleet: early polls find nothing


def main(argv: list[str] | None = None) -> int:
    from caerus.metrics import hdr
    from caerus.metrics.summary import load_metrics

    p = benchmark_parser(__doc__)
    p.add_argument("--seconds", type=float, help="length of each session")
    p.add_argument("--rounds", type=int, help="ABBA rounds (each: off, on, on, off)")
    args = p.parse_args(argv)
    seconds = args.seconds or (8.0 if args.quick else 20.0)
    rounds = args.rounds or 1
    merged = {arm: hdr.new_histogram() for arm in ARMS}
    scrapes = 0
    with tempfile.TemporaryDirectory(prefix="caerus-exporter-") as tmp:
        work = Path(tmp)
        (work / "strategy.toml").write_text(STRATEGY_TOML)
        (work / "execution.toml").write_text(EXECUTION_TOML)
        common = ["--transport", "paper", "--strategy-config", str(work / "strategy.toml"),
                  "--execution-config", str(work / "execution.toml")]
        order = [a for _ in range(rounds) for a in ("off", "on", "on", "off")]
        for i, arm in enumerate(order):
            extra, scraper = list(common), None
            if arm == "on":
                port = _free_port()
                extra += ["--exporter-port", str(port)]
                scraper = Scraper(port)
                scraper.start()
            try:
                d = run_session("exporter_overhead", work / f"sessions-{arm}", seconds, args.seed + i // 2, extra,
                                timeout_s=seconds * 4 + 180)
            finally:
                if scraper is not None:
                    scraper.halt.set()
                    scraper.join(timeout=5.0)
                    scrapes += scraper.scrapes
            m = load_metrics(d).metrics.get("tick_to_decision")
            if m is not None:
                hdr.add_into(merged[arm], m.hist)
    metrics = {f"tick_to_decision exporter {arm}": summarize_histogram(h)
               for arm, h in merged.items() if h.get_total_count()}
    on, off = metrics.get("tick_to_decision exporter on"), metrics.get("tick_to_decision exporter off")
    ratios, goals = {}, []
    if on and off and off["p50"] and off["p99"]:
        ratios["tick_to_decision_p50_with_over_without_exporter"] = on["p50"] / off["p50"]
        ratios["tick_to_decision_p99_with_over_without_exporter"] = on["p99"] / off["p99"]
        goals.append(at_most("exporter on/off tick_to_decision p50", ratios[
            "tick_to_decision_p50_with_over_without_exporter"], GOAL_RATIO, unit="x"))
    emit("exporter_overhead", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"seconds": seconds, "rounds": rounds, "order": order, "scrapes_with_samples": scrapes})
    print(f"scrapes with samples during the 'on' sessions: {scrapes}")
    if not scrapes:
        raise SystemExit("exporter_overhead: no scrape of the exporter returned latency samples; the 'on' arm "
                         "did not measure a working exporter")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
