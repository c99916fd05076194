"""``--market replay:DATASET``: a real capture as the session's market, and what the report says about it.

A dataset is named by a path:

* an imported store (a folder ``caerus data import`` filled, with its ``import.json``): the hftbacktest files of its
  leader slot (``binance``), found at the paths import.json records; the store's record also gives each file's true
  market, its span and its clock offset;
* one hftbacktest capture file (``<receive ns> <frame>`` lines, gzip or not).

venue-sim plays the files' raw Binance USD-M frames at their receive pace (caerus.sim.core.capture_file) and models the
Hyperliquid side with the ``default`` market's follower following the replayed mid (caerus.sim.core.replay_market).
Everything a replay cannot serve is refused here, before anything starts, naming the file: a store whose leader
came from a format without frames (Binance public-data CSV, Tardis), spot or COIN-M frames (the emulated Binance
is USD-M), a Hyperliquid capture, a file that moved since its import.

:func:`market_record` builds ``env.json``'s ``market`` (what the report's header names: real vs modelled, venue,
product, symbol, files, dates); :func:`add_played` adds how far the capture played (venue-sim's
``venue-sim.replay.json``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caerus.data.imports import load_meta
from caerus.data.imports.records import ImportRefused

PREFIX = "replay:"
#: the market whose Hyperliquid settings model the follower of a replay
FOLLOWER_MARKET = "default"
#: venue-sim's record of what it replayed (caerus.sim.emulator.VenueEmulator._write_replay_record)
PLAYED_FILE = "venue-sim.replay.json"


def is_replay(market: str) -> bool:
    return market.startswith(PREFIX)


@dataclass(frozen=True)
class Dataset:
    """A resolved ``replay:`` dataset: the files venue-sim plays and what is known about them."""

    spec: Path  # the path as named (resolved)
    files: tuple[Path, ...]
    names: tuple[str, ...]  # the emulated instruments (catalogue names: BTC)
    symbols: tuple[str, ...]  # the capture's Binance symbols (BTCUSDT)
    head_rate_hz: float  # bookTicker frames per second over the files' first lines (the plan's rate estimate)
    clock_offset_ns: int | None  # the recorder's receive clock against the venue's (import.json, else the head's)
    store: Path | None = None  # the imported store named, if one was
    files_meta: list[dict[str, Any]] = field(default_factory=list)  # import.json's entries of the played files
    other_markets: list[dict[str, Any]] = field(default_factory=list)  # the store's markets not played


def _store_files(store: Path) -> tuple[tuple[Path, ...], list[dict[str, Any]], list[dict[str, Any]], int | None]:
    try:
        meta = load_meta(store)
    except ImportRefused as exc:
        raise ValueError(f"replay dataset {store}: {exc}") from None
    leader = [f for f in meta.get("files", []) if any(m.get("slot") == "binance" for m in f.get("markets", []))]
    if not leader:
        raise ValueError(f"replay dataset {store}: the store holds no Binance (leader slot) market to replay")
    bad = [f for f in leader if f.get("format") != "hftbacktest"]
    if bad:
        f = bad[0]
        raise ValueError(f"replay dataset {store}: {f.get('name')} was imported from {f.get('format')}, which holds no "
                         f"venue frames; replay serves raw frames: import an hftbacktest capture")
    for f in leader:
        for m in f.get("markets", []):
            if m.get("slot") == "binance" and m.get("product") != "usdm":
                raise ValueError(f"replay dataset {store}: {f.get('name')} is binance {m.get('product')} "
                                 f"{m.get('symbol')}; the emulated Binance venue is USD-M futures")
        if not Path(f["path"]).is_file():
            raise ValueError(f"replay dataset {store}: {f['path']} (imported as file {f.get('n')}) is not there any "
                             f"more; replay serves the capture's own frames")
    others = [m for m in meta.get("markets", []) if m.get("slot") != "binance"]
    return tuple(Path(f["path"]) for f in leader), leader, others, meta.get("clock_offset_ns_by_slot", {}).get(
        "binance")


def resolve(market: str) -> Dataset:
    """The dataset ``replay:PATH`` names; ValueError naming what cannot be replayed."""
    from caerus.sim.core.capture_file import inspect

    path = Path(market[len(PREFIX):]).expanduser()
    if not str(path) or str(path) == ".":
        raise ValueError("replay dataset: give a path, replay:STORE or replay:CAPTURE.gz")
    store: Path | None = None
    files_meta: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    offset: int | None = None
    if path.is_dir():
        store = path.resolve()
        files, files_meta, others, offset = _store_files(store)
    elif path.is_file():
        files = (path.resolve(),)
    else:
        raise ValueError(f"replay dataset {path}: no such store or capture file")
    info = inspect(files)
    return Dataset(path.resolve(), files, info.names, info.symbols, info.head_rate_hz,
                   offset if offset is not None else info.clock_offset_ns, store, files_meta, others)


def _utc(ns: int | None) -> str | None:
    if not ns:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns / 1e9))


def market_record(ds: Dataset, ready: dict[str, Any] | None) -> dict[str, Any]:
    """``env.json``'s ``market`` for a replay: the real Binance side (true venue, product, symbols, files, when they
    were recorded, the recorder's clock offset) and the modelled Hyperliquid side (which market, which settings)."""
    capture = (ready or {}).get("capture") or {}
    files = []
    for i, f in enumerate(ds.files):
        meta = next((m for m in ds.files_meta if Path(m.get("path", "")) == f), None)
        entry: dict[str, Any] = {"path": str(f), "name": f.name}
        if meta is not None:
            entry.update({"recorded_from": _utc(meta.get("t_recv_first")), "recorded_to": _utc(meta.get("t_recv_last")),
                          "span_s": round((meta["t_recv_last"] - meta["t_recv_first"]) / 1e9, 1)
                          if meta.get("t_recv_first") and meta.get("t_recv_last") else None,
                          "book_frames": (meta.get("read") or {}).get("bookTicker"),
                          "clock_offset_ns": meta.get("clock_offset_ns"), "import_file": meta.get("n")})
        elif i == 0:
            entry["recorded_from"] = _utc(capture.get("first_recv_ns"))
        files.append(entry)
    return {
        "kind": "replay",
        "dataset": str(ds.spec),
        "store": str(ds.store) if ds.store else None,
        "binance": {"real": True, "venue": "binance", "product": "usdm", "symbols": list(ds.symbols),
                    "instruments": list(ds.names), "files": files, "clock_offset_ns": ds.clock_offset_ns,
                    "served": capture.get("served")},
        "hyperliquid": {**(capture.get("hyperliquid") or {"real": False}), "market": FOLLOWER_MARKET},
        "not_played": [f"{m.get('role')} (slot {m.get('slot')}): {m.get('venue')} {m.get('product')} "
                       f"{m.get('symbol')}" for m in ds.other_markets],
    }


def emulated_record(market: str, seed: int, symbols: tuple[str, ...]) -> dict[str, Any]:
    """``env.json``'s ``market`` for a session on the market model: both venues modelled."""
    return {"kind": "emulated", "market": market, "seed": seed, "instruments": list(symbols),
            "binance": {"real": False}, "hyperliquid": {"real": False}}


def add_played(record: dict[str, Any], session_dir: Path) -> dict[str, Any]:
    """The replay record with how far the capture played (venue-sim's record; ``played: None`` when venue-sim did
    not write it, e.g. killed)."""
    try:
        doc = json.loads((session_dir / PLAYED_FILE).read_text())
    except (OSError, ValueError):
        return {**record, "played": None}
    played = doc.get("played") or {}
    first, last = played.get("first_recv_ns"), played.get("last_recv_ns")
    return {**record, "played": {
        "frames": played.get("frames_served"), "from": _utc(first), "to": _utc(last),
        "span_s": round((last - first) / 1e9, 1) if first and last else None,
        "finished": played.get("finished"), "counts": played.get("counts")}}
