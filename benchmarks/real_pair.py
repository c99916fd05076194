"""The research loop on real co-recorded markets: which one leads, by how much (with an interval), and the verdict on
the pair the data picks.

The shared captures (../shared/data/real: hftbacktest's recordings of Binance USD-M, spot and COIN-M BTC on one
recorder, 2024-08-08 23:54-23:59 UTC, and spot and COIN-M for the next five minutes) are imported with `caerus data
import` into one store per pair (leader in Binance's slot, follower in Hyperliquid's: the true markets are recorded and
printed), their lead-lag estimated on both clocks (caerus.research.calibrate.leadlag: Hayashi-Yoshida, block-bootstrap
interval), and `caerus verdict` run on the pair whose lead is clearest (the largest peak correlation among pairs whose
interval on the venues' clock excludes 0), at the follower's real taker fee (Binance COIN-M and USD-M regular tier:
5 bps; spot: 10 bps).

    python -m benchmarks.real_pair [--data ../shared/data/real] [--cache DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from caerus.data.imports import ImportOptions, run_import
from caerus.research.backtest import sources
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyModel, latency_points
from caerus.research.calibrate.leadlag import lead_lag
from caerus.research.verdict import pipeline, render
from caerus.wire import Venue

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"  # beside the checkout
#: taker fee a leg of the market traded (the follower), regular tier, bps
TAKER_BPS = {"usdm": 5.0, "coinm": 5.0, "spot": 10.0}


@dataclass(frozen=True)
class Pair:
    name: str
    leader: str  # file under the data folder
    follower: str

    @property
    def follower_product(self) -> str:
        return self.follower.split("/")[0].replace("cm", "coinm")


PAIRS = (
    Pair("usdm -> coinm, 2024-08-08", "usdm/btcusdt_20240808.gz", "cm/btcusd_perp_20240808.gz"),
    Pair("usdm -> spot, 2024-08-08", "usdm/btcusdt_20240808.gz", "spot/btcusdt_20240808.gz"),
    Pair("spot -> coinm, 2024-08-08", "spot/btcusdt_20240808.gz", "cm/btcusd_perp_20240808.gz"),
    Pair("spot -> coinm, 2024-08-09 (the next window)", "spot/btcusdt_20240809.gz", "cm/btcusd_perp_20240809.gz"),
)


def store_of(pair: Pair, data: Path, cache: Path) -> Path:
    """The pair imported into a store of its own (reused when already there)."""
    store = cache / pair.name.split(",")[0].replace(" -> ", "-") / pair.leader.split("_")[-1].split(".")[0]
    if not (store / "import.json").is_file():
        for path, slot in ((pair.leader, "leader"), (pair.follower, "follower")):
            out = run_import(store, [data / path], ImportOptions(jobs=1, instrument="BTC", slot=slot), out=None)
            if out.errors:
                raise ValueError(f"{path}: {out.errors[0]}")
    return store


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.real_pair", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA, help="the real captures' folder")
    p.add_argument("--cache", type=Path, default=Path("/tmp/caerus-real-pairs"), help="imported stores go here")
    p.add_argument("--out", type=Path, default=Path("/tmp/caerus-real-pair-verdict"), help="verdict files")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    args = p.parse_args(argv)
    rows, best = [], None
    print(f"{'pair':<46} {'clock':<9} {'lag ms [95% CI]':>26} {'corr peak / at 0':>17} {'books':>15}")
    for pair in PAIRS:
        try:
            store = store_of(pair, args.data, args.cache)
        except (OSError, ValueError) as exc:
            print(f"{pair.name:<46} not imported: {exc}")
            continue
        ev = sources.from_store(store).events
        for clock in ("exchange", "recv"):
            ll = lead_lag(ev, int(Venue.BINANCE), int(Venue.HYPERLIQUID), clock=clock)
            ci = "n/a" if math.isnan(ll.lo_ms) else f"[{ll.lo_ms:+.1f}, {ll.hi_ms:+.1f}]"
            print(f"{pair.name:<46} {clock:<9} {f'{ll.lag_ms:+.1f} {ci}':>26} "
                  f"{f'{ll.corr_peak:.3f} / {ll.corr_zero:.3f}':>17} {f'{ll.n_leader}/{ll.n_follower}':>15}")
            rows.append({"pair": pair.name, "store": str(store), **ll.describe()})
            clear = clock == "exchange" and not math.isnan(ll.lo_ms) and (ll.lo_ms > 0 or ll.hi_ms < 0)
            if clear and (best is None or ll.corr_peak > best[1]):
                best = (pair, ll.corr_peak, store)
    result: dict[str, object] = {"benchmark": "real_pair", "lead_lag": rows}
    if best is None:
        print("\nno pair has a lead whose interval excludes 0: no verdict")
    else:
        pair, _, store = best
        fee = TAKER_BPS[pair.follower_product]
        print(f"\nthe clearest lead: {pair.name}; its verdict at the follower's taker fee ({fee:g} bps a leg):\n")
        src = pipeline.loaded_source("real pair", [(pair.name, sources.from_store(store))],
                                     f"binance {pair.follower_product}")
        latency = LatencyModel.default()
        doc = pipeline.run(src, pipeline.VerdictOptions(), latency, FillRules(fee_bps=fee), args.out,
                           latency_points(latency))
        print(render.render(doc))
        result["verdict"] = doc
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
