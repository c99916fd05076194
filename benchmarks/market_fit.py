"""Goodness of fit: the emulator's markets against real Binance, statistic by statistic, with a distance each.

Real: the shared co-recorded captures of 2024-08-08 (``--data``, default ``../shared/data/real`` beside the
repository; the test fixtures cut from them when that folder is absent, said in the output): USD-M BTCUSDT (the
market compared), USD-M ETHUSDT, COIN-M BTCUSD_PERP and spot BTCUSDT, imported with ``caerus data import`` into a
capture store (``--store``, kept; a fresh temporary one otherwise) and read with caerus.data.books on the
recorder's own clock (receive stamps: one clock for every file of the day, so two markets' times compare as
recorded).

Models, each run offline (caerus.sim.core.offline: the books the feeds would receive, on the scheduled send times) for
the real capture's length, ``--seeds`` seeds pooled, with BTC and ETH emulated:

* ``default``: the emulator's default market (``--market NAME=FILE|PRESET`` adds or replaces columns);
* ``calibrated``: a market calibrated on the real USD-M BTCUSDT books with ``caerus calibrate --binance-only``
  (caerus.research.calibrate.fit.calibrate_leader): Binance's price settings and quote arrivals fitted, every
  Hyperliquid setting carried from the default preset (there is no co-recorded Hyperliquid capture); its TOML is
  written to ``--calibrated-out``.

Statistics and distances: caerus.research.fit_stats (inter-arrivals, bursts, updates per second, spreads, mid
returns at 100 ms and 1 s: relative error for a scalar, Kolmogorov-Smirnov D and Wasserstein-1 for a
distribution, each with its sample sizes) and two lead-lag curves:

* like with like: two instruments on one venue, real USD-M BTCUSDT vs ETHUSDT against the model's Binance BTC vs
  ETH (the model's common factor, ``factor_share``);
* different pairs: real USD-M BTCUSDT -> COIN-M BTCUSD_PERP (and -> spot) against the model's Binance BTC ->
  Hyperliquid BTC. The model has no second Binance market of one asset, and the real captures no Hyperliquid of the
  same minutes: the distance says how far the modelled cross-venue lead-lag is from a real cross-market one, not
  how well Hyperliquid is modelled (its settings are assumed, docs/emulator.md).

Prints markdown tables (``--markdown PATH`` writes them too: docs/emulator.md keeps them) and the JSON document
(``--json PATH``).

    python -m benchmarks.market_fit [--quick] [--seeds N] [--market NAME=FILE|PRESET ...] [--data DIR]
        [--store DIR] [--calibrated-out PATH] [--markdown PATH] [--json PATH]
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.common import benchmark_parser, emit, summarize
from caerus import instruments as instruments_mod
from caerus.research import fit_stats as fs
from caerus.sim.core import offline
from caerus.sim.core.catalogue import BY_NAME
from caerus.sim.core.market_config import load_market
from caerus.wire import BookFlags, Venue

REPO = Path(__file__).resolve().parent.parent
SHARED = next((d / "shared" / "data" / "real" for d in REPO.parents if (d / "shared" / "data" / "real").is_dir()),
              REPO.parent / "shared" / "data" / "real")
FIXTURES = REPO / "tests" / "fixtures" / "data" / "real"
#: role -> (file in the shared folder, its fixture cut, the instrument the import names it)
REAL_FILES = {
    "usdm_btc": ("usdm/btcusdt_20240808.gz", "usdm_btcusdt_20240808_head.gz", "BTCUSDT"),
    "usdm_eth": ("usdm/ethusdt_20240808.gz", None, "ETHUSDT"),
    "coinm_btc": ("cm/btcusd_perp_20240808.gz", "cm_btcusd_perp_20240808_head.gz", "BTCUSDPERP"),
    "spot_btc": ("spot/btcusdt_20240808.gz", "spot_btcusdt_20240808_head.gz", "BTCUSDTSPOT"),
}
#: lags of the lead-lag curves (ms) and the return interval they correlate
LAGS_MS = np.arange(-500.0, 1500.0 + 1, 10.0)
CURVE_STEP_MS = 100.0


@dataclass(frozen=True)
class Real:
    """The real markets read back from the store, and where they came from."""

    markets: dict[str, fs.Quotes]
    what: str
    store: Path


def import_real(data: Path | None, store: Path) -> tuple[list[Path], str]:
    """The real files (or the fixtures) imported into ``store`` with caerus data import (kept when the store
    already holds an import)."""
    from caerus.data.imports import ImportOptions, run_import

    root = data or SHARED
    if root.is_dir():
        files = [root / f for f, _, _ in REAL_FILES.values() if (root / f).is_file()]
        what = f"real captures in {root}"
    else:
        files = [FIXTURES / fx for _, fx, _ in REAL_FILES.values() if fx is not None]
        what = f"test fixtures in {FIXTURES} ({root} not found: seconds of data, most statistics n/a)"
    if (store / "import.json").is_file():
        return files, what + f", already imported in {store}"
    out = run_import(store, files, ImportOptions(jobs=1), out=None)
    if not out.ok:
        raise SystemExit(f"market_fit: caerus data import failed: {'; '.join(out.errors)}")
    return files, what


def read_real(store: Path) -> dict[str, fs.Quotes]:
    """Each imported market's valid books on the recorder's clock (raw receive stamps)."""
    from caerus import data

    insts = instruments_mod.load(store / instruments_mod.FILE_NAME)
    tab = data.books(store, instruments=insts, frame="arrow")
    symbol = np.asarray(tab.column("symbol").to_pylist())
    flags = tab.column("flags").to_numpy()
    valid = ((flags & int(BookFlags.VALID)) != 0) & ((flags & int(BookFlags.REJECTED | BookFlags.STALE)) == 0)
    t = tab.column("t_recv").to_numpy()
    bid, ask = tab.column("bid_px").to_numpy(), tab.column("ask_px").to_numpy()
    out: dict[str, fs.Quotes] = {}
    for role, (_, _, name) in REAL_FILES.items():
        m = valid & (symbol == name)
        if not m.any():
            continue
        order = np.argsort(t[m], kind="stable")
        out[role] = fs.Quotes.of(name, t[m][order], bid[m][order], ask[m][order], insts.by_name[name].tick_size)
    return out


def calibrate_binance(store: Path, out: Path) -> tuple[Path | None, str]:
    """``caerus calibrate --binance-only`` of the real USD-M BTCUSDT books (the API the CLI runs): the TOML path,
    or None and why not."""
    from caerus import data
    from caerus.research.calibrate.fit import CalibrationError, FitSettings, calibrate_leader
    from caerus.research.calibrate.market_toml import render
    from caerus.sim.core.market_config import FIELDS

    name = REAL_FILES["usdm_btc"][2]
    books = data.books(store, [name], venues=["binance"])
    try:
        cal = calibrate_leader(books, FitSettings(symbol=name))
    except (CalibrationError, ValueError) as exc:
        return None, f"not calibrated: {exc}"
    known = {k: f.default for k, f in FIELDS.items()}
    out.write_text(render(cal, f"{store} ({name}, caerus calibrate --binance-only)", known=known))
    fitted = [line for line in out.read_text().splitlines() if line.startswith("# fitted from these books:")]
    return out, fitted[0][2:] if fitted else "fitted"


def model_run(market: str, seed: int, seconds: float) -> dict[str, fs.Quotes]:
    """One offline run of ``market`` with BTC and ETH: Binance BTC and ETH, Hyperliquid BTC, on scheduled times."""
    cfg = load_market(market, seed=seed, symbols=("BTC", "ETH"))
    cols = offline.columns(cfg, seconds)
    venue = np.asarray(cols["venue"])
    sym = np.asarray(cols["symbol"])
    t = np.asarray(cols["t_ns"], dtype=np.int64)
    bid, ask = np.asarray(cols["bid_px"]), np.asarray(cols["ask_px"])
    out = {}
    for role, v, k, tick in (("binance_btc", Venue.BINANCE, 0, float(BY_NAME["BTC"].tick)),
                             ("binance_eth", Venue.BINANCE, 1, float(BY_NAME["ETH"].tick)),
                             ("hyperliquid_btc", Venue.HYPERLIQUID, 0, 1.0)):
        m = (venue == int(v)) & (sym == k)
        out[role] = fs.Quotes.of(role, t[m], bid[m], ask[m], tick)
    return out


def mean_curve(curves: Sequence[fs.Curve]) -> fs.Curve:
    """The seeds' curves averaged lag by lag (returns pooled: n summed)."""
    stack = np.vstack([c.corr for c in curves]) if curves else np.full((1, LAGS_MS.size), np.nan)
    seen = np.isfinite(stack).sum(axis=0)
    corr = np.where(seen > 0, np.nansum(stack, axis=0) / np.maximum(seen, 1), np.nan)
    return fs.Curve(LAGS_MS.copy(), corr, sum(c.n_returns for c in curves))


def _fmt(v: float, unit: str) -> str:
    if not math.isfinite(v):
        return "n/a"
    if unit == "share":
        return f"{v:.3f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v:.3g}"


def stats_table(rows: list[fs.Row], names: list[str]) -> list[str]:
    """The markdown table of every statistic: values, each model's distance, the sample sizes."""
    head = (["group", "statistic", "real"] + names + [f"distance: {n}" for n in names]
            + ["n (real; " + "; ".join(names) + ")"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        unit = f" ({r.unit})" if r.unit and r.unit != "share" else ""
        first = next(iter(r.distances.values()), None)
        if r.values:
            vals = [_fmt(r.values.get("real", math.nan), r.unit)] + [_fmt(r.values.get(n, math.nan), r.unit)
                                                                     for n in names]
            dists = [r.distances[n].text() for n in names]
        else:
            vals = ["", *([""] * len(names))]
            dists = [f"{r.distances[n].text()}, {r.distances[n + ':w1'].text()}{unit}" for n in names]
        ns = ([str(first.n_real)] + [str(r.distances[n].n_model) for n in names]) if first else []
        lines.append("| " + " | ".join([r.group, r.stat + (unit if r.values else ""), *vals, *dists, "; ".join(ns)])
                     + " |")
    return lines


def curve_table(pairs: list[tuple[str, str, fs.Curve, dict[str, tuple[str, fs.Curve]]]],
                names: list[str]) -> list[str]:
    """Lead-lag curves: each real pair's peak against each model's, with the curves' distance."""
    head = ["comparison", "real pair", "real peak (lag, corr)"] + [f"{n}: pair, peak" for n in names] + \
        [f"distance: {n} (sup; peak shift)" for n in names] + ["n returns (real; " + "; ".join(names) + ")"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for what, real_pair, real_c, models in pairs:
        cells = [what, real_pair, f"{real_c.peak_ms:+.0f} ms, {real_c.peak:.2f}" if math.isfinite(real_c.peak)
                 else "n/a"]
        for n in names:
            pair, c = models[n]
            cells.append(f"{pair}: {c.peak_ms:+.0f} ms, {c.peak:.2f}" if math.isfinite(c.peak) else f"{pair}: n/a")
        for n in names:
            c = models[n][1]
            cells.append(f"{fs.curve_sup(real_c, c).text()}; {fs.peak_shift(real_c, c).text()}")
        cells.append("; ".join([str(real_c.n_returns)] + [str(models[n][1].n_returns) for n in names]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def parse_markets(specs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in specs:
        name, sep, src = s.partition("=")
        if not sep or not name or not src:
            raise SystemExit(f"market_fit: --market wants NAME=FILE|PRESET, got {s!r}")
        out[name] = src
    return out


def main(argv: list[str] | None = None) -> dict:
    p = benchmark_parser(__doc__)
    p.add_argument("--seeds", type=int, default=0, help="model seeds pooled (default 3, quick 1)")
    p.add_argument("--market", action="append", default=[], metavar="NAME=FILE|PRESET",
                   help="a model column (default: default=default); repeat for several")
    p.add_argument("--no-calibrated", action="store_true", help="leave the calibrated market's column out")
    p.add_argument("--data", type=Path, help="folder of the shared real captures (default ../shared/data/real)")
    p.add_argument("--store", type=Path, help="capture store to import into (kept); default: a temporary one")
    p.add_argument("--calibrated-out", type=Path, help="where the calibrated market's TOML is written")
    p.add_argument("--markdown", type=Path, help="write the markdown tables here too")
    a = p.parse_args(argv)
    seeds = a.seeds or (1 if a.quick else 3)
    markets = parse_markets(a.market) if a.market else {"default": "default"}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="caerus-market-fit-") as tmp:
        store = a.store or Path(tmp) / "store"
        files, what = import_real(a.data, store)
        real = read_real(store)
        if "usdm_btc" not in real:
            raise SystemExit(f"market_fit: no USD-M BTCUSDT books in {store}")
        calibrated_note = "left out (--no-calibrated)"
        if not a.no_calibrated:
            toml, calibrated_note = calibrate_binance(store, a.calibrated_out or Path(tmp) / "calibrated.toml")
            if toml is not None:
                markets["calibrated"] = str(toml)
        usdm = real["usdm_btc"]
        seconds = max(usdm.seconds, 1.0)
        names = list(markets)
        runs = {n: [model_run(src, seed, seconds) for seed in range(1, seeds + 1)] for n, src in markets.items()}
        model_samples = {n: fs.pool([fs.samples(r["binance_btc"]) for r in rs]) for n, rs in runs.items()}
        rows = fs.compare(fs.samples(usdm), model_samples)

        def model_curves(a_role: str, b_role: str) -> dict[str, fs.Curve]:
            return {n: mean_curve([fs.lead_lag(r[a_role], r[b_role], LAGS_MS, CURVE_STEP_MS) for r in rs])
                    for n, rs in runs.items()}

        nan_curve = fs.Curve(LAGS_MS.copy(), np.full(LAGS_MS.shape, np.nan), 0)
        cross_asset = model_curves("binance_btc", "binance_eth")
        cross_venue = model_curves("binance_btc", "hyperliquid_btc")
        pairs = []
        for what_, real_pair, ra, rb, model_pair, curves in (
                ("like with like: two assets, one venue", "USD-M BTCUSDT vs ETHUSDT", "usdm_btc", "usdm_eth",
                 "Binance BTC vs ETH", cross_asset),
                ("different pairs: one asset, two markets", "USD-M -> COIN-M BTC", "usdm_btc", "coinm_btc",
                 "Binance -> Hyperliquid BTC", cross_venue),
                ("different pairs: one asset, two markets", "USD-M -> spot BTC", "usdm_btc", "spot_btc",
                 "Binance -> Hyperliquid BTC", cross_venue)):
            rc = (fs.lead_lag(real[ra], real[rb], LAGS_MS, CURVE_STEP_MS) if ra in real and rb in real
                  else nan_curve)
            pairs.append((what_, real_pair, rc, {n: (model_pair, curves[n]) for n in names}))
    elapsed = time.perf_counter() - t0

    header = [f"real: USD-M BTCUSDT, {usdm.t.size:,} bookTicker updates over {usdm.seconds:.0f} s ({what}); "
              f"models: {', '.join(f'{n} = {markets[n]}' for n in names)}, offline, seeds 1-{seeds} x "
              f"{seconds:.0f} s pooled; calibrated market: {calibrated_note}"]
    md = header + [""] + stats_table(rows, names) + ["", f"Lead-lag: correlation of {CURVE_STEP_MS:g} ms mid returns "
                                                          "against the lag (positive: the first market leads)", ""]
    md += curve_table(pairs, names)
    text = "\n".join(md) + "\n"
    print(text)
    print(f"(took {elapsed:.1f} s)")
    if a.markdown:
        a.markdown.write_text(text)
    results = {
        "rows": [{"group": r.group, "stat": r.stat, "unit": r.unit, "values": r.values,
                  "distances": {k: {"kind": d.kind, "value": d.value, "n_real": d.n_real, "n_model": d.n_model}
                                for k, d in r.distances.items()}} for r in rows],
        "lead_lag": [{"comparison": w, "real_pair": rp, "real": {"peak_ms": rc.peak_ms, "peak": rc.peak,
                                                                 "n": rc.n_returns},
                      "models": {n: {"pair": mp, "peak_ms": c.peak_ms, "peak": c.peak, "n": c.n_returns,
                                     "sup": fs.curve_sup(rc, c).value, "peak_shift_ms": fs.peak_shift(rc, c).value}
                                 for n, (mp, c) in m.items()}} for w, rp, rc, m in pairs],
    }
    metrics = {"inter-arrival, real": summarize(np.diff(usdm.t))}
    metrics |= {f"inter-arrival, {n}": summarize(model_samples[n].gaps_ms * fs.MS) for n in names}
    return emit("market_fit", metrics, quick=a.quick, json_path=a.json,
                extra={"input": what, "files": [str(f) for f in files], "markets": markets, "seeds": seeds,
                       "seconds": seconds, "calibrated": calibrated_note, "elapsed_s": elapsed,
                       "results": results, "markdown": text})


if __name__ == "__main__":
    main()
