"""`caerus data import`: every format on a fixture cut from (or derived from) a real capture, counted exactly; the
live feed's refusals reproduced; the clock offset; the store read back by caerus.data and the backtest's loader."""

from __future__ import annotations

import gzip
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from caerus import data
from caerus.cli import main
from caerus.data.imports import ImportOptions, ImportRefused, load_meta, recv_on_venue_clock, run_import
from caerus.research.backtest import sources
from caerus.wire import BookFlags, RejectReason

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
USDM = FIX / "usdm_btcusdt_20240808_head.gz"
SPOT = FIX / "spot_btcusdt_20240808_head.gz"
CM = FIX / "cm_btcusd_perp_20240808_head.gz"
HL = FIX / "hyperliquid_btcusd_20250126.gz"


def lines(path: Path) -> list[tuple[int, dict]]:
    out = []
    for ln in gzip.decompress(path.read_bytes()).split(b"\n"):
        if ln:
            ts, _, frame = ln.partition(b" ")
            out.append((int(ts), json.loads(frame)))
    return out


def kinds(path: Path) -> Counter[str]:
    c: Counter[str] = Counter()
    for _, f in lines(path):
        if "lastUpdateId" in f:
            c["rest_snapshot"] += 1
        elif "stream" in f:
            tail = f["stream"].split("@")[1]
            c["depth" if tail.startswith("depth") else tail] += 1
        else:
            c[f["channel"]] += 1
    return c


def imp(store: Path, *files: Path, **kw: object) -> list[dict]:
    outcome = run_import(store, list(files), ImportOptions(jobs=1, **kw), out=None)  # type: ignore[arg-type]
    assert outcome.ok, outcome.errors
    return outcome.entries


def write_gz(path: Path, rows: list[tuple[int, bytes]]) -> Path:
    path.write_bytes(gzip.compress(b"\n".join(b"%d %s" % (t, f) for t, f in rows) + b"\n"))
    return path


def test_hftbacktest_binance_usdm_counts_and_clock(tmp_path: Path) -> None:
    (e,) = imp(tmp_path / "s", USDM)
    k = kinds(USDM)
    assert e["frames"] == sum(k.values()) == 400
    assert e["read"] == {"bookTicker": k["bookTicker"], "depth": k["depth"], "rest_snapshot": 1, "trade": k["trade"]}
    assert e["stored"] == {"valid": k["bookTicker"], "rejected": 0}
    assert not any(e["refused"].values()) and e["dropped"] == {}
    assert e["not_stored"] == {"trade": k["trade"], "depth": k["depth"], "rest_snapshot": 1}
    # the offset: median over every frame carrying E (bookTicker, depth, trade), t_recv - E, computed here directly
    want = np.median([t - f["data"]["E"] * 1_000_000 for t, f in lines(USDM) if "stream" in f])
    assert e["clock_offset_ns"] == pytest.approx(want, abs=1_000_000)
    assert -1.30e9 < e["clock_offset_ns"] < -1.24e9  # the recorder ran ~1.27 s behind the venue (README, FACTS)
    assert e["markets"] == [{"venue": "binance", "product": "usdm", "symbol": "BTCUSDT", "slot": "binance",
                             "role": "leader", "instrument": "BTCUSDT", "instrument_id": 0}]
    assert e["licence"] and "MIT" in e["licence"][0]["first_line"]


def test_imported_store_reads_back_through_caerus_data_and_the_backtest_loader(tmp_path: Path) -> None:
    store = tmp_path / "s"
    imp(store, USDM)
    books = data.books(store)
    frames = [(t, f["data"]) for t, f in lines(USDM) if f.get("stream", "").endswith("@bookTicker")]
    assert len(books) == len(frames)
    got = books.sort_values(["t_recv", "seq"]).reset_index(drop=True)
    assert got["seq"].tolist() == [d["u"] for _, d in frames]
    assert got["t_recv"].tolist() == [t for t, _ in frames]
    assert got["t_exchange"].tolist() == [d["E"] * 1_000_000 for _, d in frames]
    assert got["bid_px"].tolist() == [float(d["b"]) for _, d in frames]
    assert got["ask_qty"].tolist() == [float(d["A"]) for _, d in frames]
    assert set(got["flags"]) == {int(BookFlags.VALID)} and set(got["conn"]) == {1}
    assert set(got["symbol"].astype(str)) == {"BTCUSDT"} and set(got["venue"].astype(str)) == {"binance"}
    # receive times on the venue's clock: t_recv - the file's offset (meta.py)
    meta = load_meta(store)
    offset = meta["files"][0]["clock_offset_ns"]
    assert offset < -1_000_000_000  # the recorder ran ~1.27 s behind the venue
    on_venue = recv_on_venue_clock(got["t_recv"].to_numpy(), got["conn"].to_numpy(), store)
    assert (on_venue == got["t_recv"].to_numpy() - offset).all()
    # the backtest's loader reads them so (research compares receive times with venue times), and names the market
    loaded = sources.from_store(store)
    assert len(loaded.events) == len(frames)
    assert loaded.events.t_recv.tolist() == sorted(t - offset for t, _ in frames)
    assert "binance usdm BTCUSDT" in loaded.description and "venues' clock" in loaded.description


def test_spot_bookticker_has_no_event_time_so_its_venue_time_is_derived_from_the_offset(tmp_path: Path) -> None:
    store = tmp_path / "s"
    (e,) = imp(store, SPOT)
    k = kinds(SPOT)
    assert e["markets"][0]["product"] == "spot" and e["markets"][0]["instrument"] == "BTCUSDTSPOT"
    assert e["stored"]["valid"] == k["bookTicker"] and e["derived"] == {"t_exchange": k["bookTicker"], "t_recv": 0}
    # the clock comes from the depth and trade frames (their E), not from bookTicker (it has none)
    assert e["clock"]["samples"] == k["depth"] + k["trade"]
    books = data.books(store)
    assert (books["t_exchange"] == books["t_recv"] - e["clock_offset_ns"]).all()


def test_a_file_whose_clock_cannot_be_placed_is_refused_unless_an_offset_is_given(tmp_path: Path) -> None:
    only_bt = [(t, json.dumps(f, separators=(",", ":")).encode()) for t, f in lines(SPOT)
               if f.get("stream", "").endswith("@bookTicker")]
    src = write_gz(tmp_path / "spot_bookticker_only.gz", only_bt)
    out = run_import(tmp_path / "s", [src], ImportOptions(jobs=1), out=None)
    assert out.entries == [] and len(out.errors) == 1
    assert "spot_bookticker_only.gz" in out.errors[0] and "--clock-offset-ms" in out.errors[0]
    assert data.sessions(tmp_path / "s").empty if (tmp_path / "s" / "chdb").exists() else True
    (e,) = imp(tmp_path / "s", src, clock_offset_ms=-1270.0)
    assert e["clock"]["source"] == "given" and e["clock_offset_ns"] == -1_270_000_000
    books = data.books(tmp_path / "s")
    assert len(books) == len(only_bt)
    assert (books["t_exchange"] - books["t_recv"] == 1_270_000_000).all()


def test_coinm_and_hyperliquid_recordings(tmp_path: Path) -> None:
    cm, hl = imp(tmp_path / "s", CM, HL)
    k = kinds(CM)
    assert cm["markets"][0]["product"] == "coinm" and cm["markets"][0]["instrument"] == "BTCUSDPERP"
    assert cm["stored"]["valid"] == k["bookTicker"] and cm["frames"] == 300
    h = kinds(HL)
    assert hl["read"] == {"l2Book": h["l2Book"], "trades": h["trades"]}
    assert hl["stored"] == {"valid": h["l2Book"], "rejected": 0} and hl["not_stored"] == {"trades": h["trades"]}
    assert hl["markets"][0]["slot"] == "hyperliquid" and hl["clock"]["samples"] == h["l2Book"]
    books = data.books(tmp_path / "s", venues=["hyperliquid"])
    assert set(books["flags"]) == {int(BookFlags.VALID | BookFlags.DEPTH)}
    assert sorted(books["seq"]) == list(range(1, h["l2Book"] + 1))  # the import numbers them, as the feed does


def test_role_mapping_is_recorded_and_shown_and_a_second_market_in_a_slot_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "pair"
    text = io.StringIO()
    run_import(store, [USDM], ImportOptions(jobs=1, instrument="BTC"), out=text)
    run_import(store, [CM], ImportOptions(jobs=1, instrument="BTC", slot="follower"), out=text)
    shown = text.getvalue()
    assert "market binance coinm BTCUSD_PERP -> session import, slot hyperliquid (follower), instrument BTC" in shown
    assert "market binance usdm BTCUSDT -> session import, slot binance (leader), instrument BTC" in shown
    meta = load_meta(store)
    assert [(m["venue"], m["product"], m["symbol"], m["slot"], m["role"]) for m in meta["markets"]] == [
        ("binance", "usdm", "BTCUSDT", "binance", "leader"), ("binance", "coinm", "BTCUSD_PERP", "hyperliquid",
                                                              "follower")]
    # both sides of the pair are instrument 0 (BTC): what calibrate and the backtest pair up
    both = data.books(store, ["BTC"])
    assert set(both["venue"].astype(str)) == {"binance", "hyperliquid"} and set(both["symbol_id"]) == {0}
    out = run_import(store, [SPOT], ImportOptions(jobs=1, instrument="BTC"), out=None)
    assert len(out.errors) == 1 and "already holds binance usdm BTCUSDT" in out.errors[0]
    again = run_import(store, [USDM], ImportOptions(jobs=1, instrument="BTC"), out=None)
    assert "already imported" in again.errors[0]


def test_malformed_and_garbage_frames_are_counted_never_silently_dropped(tmp_path: Path) -> None:
    rows = [(t, json.dumps(f, separators=(",", ":")).encode()) for t, f in lines(USDM)[:120]]
    t0 = rows[-1][0]
    bad_book = b'{"stream":"btcusdt@bookTicker","data":{"e":"bookTicker","u":1,"E":1,"s":"BTCUSDT","b":"x"}}'
    rows += [(t0 + 1, b"this is not json"), (t0 + 2, bad_book), (t0 + 3, b'{"result":null,"id":1}'),
             (t0 + 4, b'{"some":"shape"}')]
    src = write_gz(tmp_path / "bad.gz", rows)
    (e,) = imp(tmp_path / "s", src)
    assert e["dropped"] == {"not_json": 1, "control": 1, "unknown": 1}
    assert e["refused"]["malformed"] == 1 and e["stored"]["rejected"] == 1
    assert e["frames"] == 124
    books = data.books(tmp_path / "s")
    rej = books[books["flags"] == int(BookFlags.REJECTED)]
    assert rej["reason"].tolist() == [int(RejectReason.MALFORMED)] and rej["bid_px"].isna().all()
    assert rej["t_recv"].tolist() == [t0 + 2]


def test_a_line_without_a_receive_stamp_is_a_bad_line(tmp_path: Path) -> None:
    raw = gzip.decompress(USDM.read_bytes()).split(b"\n")[:20]
    raw.insert(5, b"notatime {}")
    src = tmp_path / "x.gz"
    src.write_bytes(gzip.compress(b"\n".join(raw) + b"\n"))
    (e,) = imp(tmp_path / "s", src)
    assert e["dropped"] == {"bad_line": 1} and e["frames"] == 21


def test_binance_public_data_csv_needs_an_offset_and_matches_the_recording(tmp_path: Path) -> None:
    zipped = FIX / "BTCUSDT-bookTicker-2024-08-08.zip"
    out = run_import(tmp_path / "s", [zipped], ImportOptions(jobs=1), out=None)
    assert "no receive times" in out.errors[0] and zipped.name in out.errors[0]
    bt, tr = imp(tmp_path / "s", zipped, FIX / "BTCUSDT-trades-2024-08-08.csv", clock_offset_ms=0.0)
    k = kinds(USDM)
    assert bt["format"] == "binance-csv" and bt["stored"] == {"valid": k["bookTicker"], "rejected": 0}
    assert bt["derived"] == {"t_exchange": 0, "t_recv": k["bookTicker"]}
    assert bt["markets"][0] == {"venue": "binance", "product": "usdm", "symbol": "BTCUSDT", "slot": "binance",
                                "role": "leader", "instrument": "BTCUSDT", "instrument_id": 0}
    assert tr["read"] == {"trade": k["trade"]} and tr["stored"] == {"valid": 0, "rejected": 0}
    books = data.books(tmp_path / "s").sort_values("seq")
    frames = [f["data"] for _, f in lines(USDM) if f.get("stream", "").endswith("@bookTicker")]
    assert books["seq"].tolist() == [d["u"] for d in frames]
    assert (books["t_recv"] == books["t_exchange"]).all()  # offset 0: the venue time taken as receive time


def test_tardis_quotes_and_trades(tmp_path: Path) -> None:
    q, t = imp(tmp_path / "s", FIX / "tardis_binance-futures_quotes_2024-08-08_BTCUSDT.csv.gz",
               FIX / "tardis_binance-futures_trades_2024-08-08_BTCUSDT.csv.gz")
    k = kinds(USDM)
    assert q["read"] == {"quote": k["bookTicker"]} and q["stored"] == {"valid": k["bookTicker"], "rejected": 0}
    assert q["ordering_rule"] == "time" and q["markets"][0]["product"] == "usdm"
    assert t["read"] == {"trade": k["trade"]} and t["clock"]["samples"] == k["trade"]
    # microsecond receive stamps of the same frames: the same offset as the recording's, to a millisecond
    (rec,) = imp(tmp_path / "r", USDM)
    assert q["clock_offset_ns"] == pytest.approx(rec["clock_offset_ns"], abs=1_000_000)


def test_hyperliquid_archive(tmp_path: Path) -> None:
    (e,) = imp(tmp_path / "s", FIX / "hyperliquid_archive_20250126_19_l2Book_BTC.lz4")
    h = kinds(HL)
    assert e["format"] == "hyperliquid-archive" and e["read"] == {"l2Book": h["l2Book"]}
    assert e["stored"]["valid"] == h["l2Book"] and e["markets"][0]["symbol"] == "BTC"
    (rec,) = imp(tmp_path / "r", HL)
    assert e["clock_offset_ns"] == pytest.approx(rec["clock_offset_ns"], abs=1_000)  # us receive stamps


def test_cli_import_prints_the_market_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    assert main(["data", "import", str(tmp_path / "s"), str(CM), "--as", "follower", "--instrument", "BTC",
                 "--jobs", "1", "--json", str(report)]) == 0
    text = capsys.readouterr().out
    assert "market binance coinm BTCUSD_PERP" in text and "slot hyperliquid (follower)" in text
    assert "clock_offset_ns" in text
    assert json.loads(report.read_text())["files"][0]["markets"][0]["product"] == "coinm"
    assert main(["data", "import", str(tmp_path / "s"), str(tmp_path / "none.gz")]) == 2


def test_unknown_format_is_refused_naming_the_file(tmp_path: Path) -> None:
    src = tmp_path / "mystery.txt"
    src.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ImportRefused, match=r"mystery\.txt"):
        from caerus.data.imports.formats import detect

        detect(src)
