"""The store side of an import: where each market's books go, committing a file's staged rows, and the two files
beside the store that say what it holds (``import.json``, ``instruments.json``).

Slots. The research code reads venue ``binance`` as the leader and ``hyperliquid`` as the follower. A market goes
to its own venue's slot unless ``--as`` names the other (``--as hyperliquid`` / ``--as follower`` puts, say, COIN-M
books in the follower's slot); its instrument is ``--instrument NAME`` or a name of its own (USD-M ``BTCUSDT``,
COIN-M ``BTCUSDPERP``, spot ``BTCUSDTSPOT``, Hyperliquid ``BTC``), so USD-M, COIN-M and spot of one asset sit side by
side as distinct instruments. One (session, slot, instrument) holds one market: putting a second market there is
refused, naming both. import.json records every market's true venue, product, symbol and files, and every summary
prints them, so nothing downstream can take COIN-M for Hyperliquid.

Commit. Workers' rows (staging Arrow files) go into ``caerus.books`` by INSERT ... SELECT (several small files in
one, a big file's pieces one each: worker.STAGE_PIECE_ROWS rows at most per INSERT) that fills in each file's
session, slot, instrument ids, its number in ``conn`` (which ties each row to its import.json entry), the import's
own sequence numbers continued from the store's, and the derived times; then import.json is rewritten
(atomically); a failed commit deletes what it stored. A file already imported (same content hash) is refused.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from caerus import instruments as inst_mod
from caerus.capture.rows import VENUE_ENUM
from caerus.capture.store import ChdbStore
from caerus.data.sql import quote
from caerus.wire import Venue

from . import worker
from .checks import DERIVE_T_EXCHANGE, DERIVE_T_RECV
from .meta import META_NAME
from .records import ImportRefused, Market
from .worker import FileResult, remove_stages

META_FORMAT = 1
DEFAULT_SESSION = "import"
SLOTS = {"binance": "binance", "hyperliquid": "hyperliquid", "leader": "binance", "follower": "hyperliquid"}
ROLES = {"binance": "leader", "hyperliquid": "follower"}
MAX_FILES = (1 << 16) - 1  # conn is a UInt16: file numbers 1..65535
_NAME = re.compile(r"[^A-Za-z0-9]")
STAGE_SUFFIX = ".arrows"
#: rows gathered before a commit (several small files go in one INSERT; a bigger file goes alone)
COMMIT_ROWS = 200_000
_GLOB = re.compile(r"[*?{}]")  # what chDB's file() reads as a pattern (not [ ]: tested)


@dataclass
class _Pending:
    """A file added to the next commit: its number, what was read, its import.json entry, where its rows go."""

    n: int
    r: FileResult
    entry: dict[str, Any]
    code: int  # the venue slot's code
    ids: list[int]  # instrument id per sym index
    bases: list[int]  # sequence base per sym index (time rule; 0 else)

    @property
    def rows(self) -> int:
        return self.r.stored_valid + self.r.stored_rejected


def default_instrument(m: Market) -> str:
    """The instrument a market is stored as when ``--instrument`` does not say: distinct per market of one asset."""
    base = _NAME.sub("", m.symbol).upper() if m.venue != "hyperliquid" else _NAME.sub("", m.symbol)
    if m.venue == "binance" and m.product == "spot":
        base += "SPOT"
    return base[:20] or "X"


def _licence_near(path: Path) -> list[dict[str, str]]:
    """LICENSE* files in the file's folder or the two above it (provenance travels with the data)."""
    out = []
    for folder in [path.parent, path.parent.parent, path.parent.parent.parent]:
        try:
            found = sorted(folder.glob("LICENSE*")) + sorted(folder.glob("LICENCE*"))
        except OSError:
            continue
        for lic in found:
            try:
                first = next((ln.strip() for ln in lic.read_text(errors="replace").splitlines() if ln.strip()), "")
            except OSError:
                continue
            out.append({"file": str(lic), "first_line": first[:200]})
        if found:
            break
    return out


class ImportTarget:
    """A capture store (created when absent) being imported into, with its import.json and instruments.json."""

    def __init__(self, store_dir: Path) -> None:
        self.dir = Path(store_dir)
        if (self.dir.parent / inst_mod.FILE_NAME).is_file():
            raise ImportRefused(f"{self.dir} is a session's capture store (its folder holds instruments.json, which "
                                "names its instruments): import into a store of its own")
        if _GLOB.search(str(self.dir.resolve())):
            # chDB's file() reads the staged rows by a path pattern: such a character would match other files
            raise ImportRefused(f"{self.dir}: a store path holding any of * ? {{ }} cannot be imported into "
                                "(the staged rows are read by a path pattern); choose another folder")
        self.meta_path = self.dir / META_NAME
        self.inst_path = self.dir / inst_mod.FILE_NAME
        if self.dir.exists() and (self.dir / "chdb").is_dir() and not self.meta_path.is_file():
            raise ImportRefused(f"{self.dir} holds a capture store that was not made by caerus data import "
                                f"(no {META_NAME}): import into a new folder")
        self.meta = self._load_meta()
        self.stage_dir = self.dir / ".import-stage"
        self.stage_dir.mkdir(parents=True, exist_ok=True)
        self._store: ChdbStore | None = None  # opened by open() or at the first commit (chDB takes ~0.5-1 s)
        self._pending: list[_Pending] = []  # files added, not yet flushed
        self._meta_before = self.meta  # import.json as it was before the files pending (restored if a flush fails)
        self._seq_bases: dict[tuple[int, int], int] = {}  # (venue, instrument) -> the next time-rule file's base
        if not self.meta_path.is_file():
            self._write_meta()  # from now on the store is an import's, even if the first file is refused

    def _load_meta(self) -> dict[str, Any]:
        if not self.meta_path.is_file():
            return {"format": META_FORMAT, "files": [], "markets": []}
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise ImportRefused(f"{self.meta_path}: unreadable ({exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != META_FORMAT:
            raise ImportRefused(f"{self.meta_path}: not an import record of format {META_FORMAT}")
        return meta

    def open(self) -> ChdbStore:
        """The store, opened now if it is not yet (run.py opens it while the readers read, not before)."""
        if self._store is None:
            self._store = ChdbStore(self.dir)
        return self._store

    @property
    def store(self) -> ChdbStore:
        return self.open()

    def instruments(self) -> inst_mod.InstrumentSet | None:
        return inst_mod.load(self.inst_path) if self.inst_path.is_file() else None

    def stage_path(self, n: int) -> Path:
        return self.stage_dir / f"{n}{STAGE_SUFFIX}"

    def next_number(self) -> int:
        return len(self.meta["files"]) + 1

    def already(self, digest: str) -> dict[str, Any] | None:
        return next((f for f in self.meta["files"] if f.get("blake2b") == digest), None)

    # --- markets -> slots and instruments -----------------------------------------------------------------------

    def place(self, r: FileResult, session: str, slot: str | None, instrument: str | None) -> list[dict[str, Any]]:
        """Where each market of ``r`` goes: slot, instrument (and its id); ImportRefused on a clash."""
        if instrument is not None and len(r.markets) > 1:
            raise ImportRefused(f"{r.path}: --instrument names one instrument, and the file holds "
                                f"{len(r.markets)} markets ({', '.join(m.symbol for m in r.markets)})")
        placed = []
        for m in r.markets:
            s = slot or (m.venue if m.venue in ROLES else None)
            if s is None:
                raise ImportRefused(f"{r.path}: market {m.label} has no venue slot of its own; give --as "
                                    "binance|hyperliquid (leader|follower)")
            name = instrument or default_instrument(m)
            for other in self.meta["markets"]:
                if (other["session"], other["slot"], other["instrument"]) == (session, s, name) and \
                        (other["venue"], other["product"], other["symbol"]) != (m.venue, m.product, m.symbol):
                    raise ImportRefused(
                        f"{r.path}: session {session!r}, slot {s} ({ROLES[s]}), instrument {name} already holds "
                        f"{other['venue']} {other['product']} {other['symbol']}; {m.label} would mix with it: give "
                        "another --instrument, --as or --session")
            placed.append({"market": m, "slot": s, "instrument": name, "role": ROLES[s]})
        return placed

    def _instrument_ids(self, placed: list[dict[str, Any]], r: FileResult) -> list[int]:
        insts = list(self.instruments() or [])
        by_name = {i.name: i for i in insts}
        ids = []
        for p in placed:
            name = p["instrument"]
            if name not in by_name:
                m: Market = p["market"]
                px_dec, qty_dec = r.tick.get(m.symbol, [2, 3])
                taken_b = {i.binance_symbol for i in insts}
                taken_c = {i.hl_coin for i in insts}
                bsym = m.symbol if m.venue == "binance" and m.product == "usdm" and m.symbol not in taken_b else name
                coin = m.symbol if m.venue == "hyperliquid" and m.symbol not in taken_c else name
                inst = inst_mod.Instrument(
                    id=len(insts), name=name, binance_symbol=bsym if bsym not in taken_b else f"{name}X",
                    hl_coin=coin if coin not in taken_c else f"{name}X", tick_size=10.0 ** -px_dec,
                    lot_size=10.0 ** -qty_dec, min_qty=10.0 ** -qty_dec, min_notional=0.0, hl_asset=len(insts),
                    sz_decimals=min(6, qty_dec))
                insts.append(inst)
                by_name[name] = inst
            ids.append(by_name[name].id)
        if len(insts) != len(list(self.instruments() or [])):
            inst_mod.save(inst_mod.InstrumentSet(insts), self.inst_path)
        return ids

    # --- commit ---------------------------------------------------------------------------------------------------

    def add(self, n: int, r: FileResult, session: str, slot: str | None, instrument: str | None,
            provenance: str | None) -> dict[str, Any]:
        """Take file ``n`` into the next commit (``flush``): checked and placed now (ImportRefused, its staged rows
        dropped, if it cannot go in), its rows stored and import.json written at the flush. Returns its entry."""
        try:
            dup = self.already(r.blake2b)
            if dup is not None:
                raise ImportRefused(f"{r.path}: already imported into {self.dir} as file {dup['n']} "
                                    f"({dup['path']}, same content)")
            if n > MAX_FILES:
                raise ImportRefused(f"{r.path}: a store takes at most {MAX_FILES} imported files (conn is 16-bit)")
            placed = self.place(r, session, slot, instrument)
        except ImportRefused:
            remove_stages(r.stages)
            raise
        if not self._pending:
            self._meta_before = copy.deepcopy(self.meta)
        ids = self._instrument_ids(placed, r)
        code = int(Venue[placed[0]["slot"].upper()]) if placed else int(Venue.BINANCE)
        bases = [self._next_seq_base(code, i, last) if r.rule == "time" else 0
                 for i, last in zip(ids, r.last_seq, strict=True)]
        entry = self._entry(n, r, session, placed, ids, provenance)
        # in the record now, so the next file's duplicate and slot checks see this one
        self.meta["files"].append(entry)
        for p, i in zip(placed, ids, strict=True):
            self._market(session, p, i, n)
        self._pending.append(_Pending(n, r, entry, code, ids, bases))
        return entry

    @property
    def pending_rows(self) -> int:
        return sum(p.rows for p in self._pending)

    def flush(self) -> None:
        """Store the rows of every file added since the last flush, then write import.json.

        Several small files go in one INSERT ... SELECT, not one each: chDB's cost of an INSERT has a fixed part (a
        part written per INSERT, then merged in the background): the staged rows of 18 small files cost 0.61-0.67
        us/row of chDB CPU inserted one file at a time, 0.38-0.39 four files at a time, 0.33-0.35 all at once
        (measured here). An INSERT reads at most worker.STAGE_PIECE_ROWS rows (a big file's pieces go one each), which
        bounds chDB's memory. Each row's per-file constants (conn, venue slot, instrument ids, sequence base, clock
        offset) come from the staging file it was read from (``_file``). If an INSERT fails, the rows this flush
        already stored are deleted again: a file's number is only ever used by rows of the file import.json names."""
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        try:
            took = {p.n: [0.0, 0.0, 0] for p in batch}  # wall s, CPU s, INSERTs
            for group in insert_groups(batch):
                wall, cpu = self._insert(group)
                rows = sum(k for _, _, k in group)
                for p, _, k in group:
                    # the INSERT alone (chDB's threads included), each file's share by its rows
                    t = took[p.n]
                    t[0] += wall * k / rows
                    t[1] += cpu * k / rows
                    t[2] += 1
            for p in batch:
                wall, cpu, inserts = took[p.n]
                p.entry.update(commit_s=round(wall, 3), commit_cpu_s=round(cpu, 3), commit_files=len(batch),
                               commit_inserts=int(inserts))
            self._write_meta()
        except BaseException as exc:
            self._forget(batch, exc)
            self.meta, self._seq_bases = self._meta_before, {}
            raise
        finally:
            for p in batch:
                remove_stages(p.r.stages)

    def _forget(self, batch: list[_Pending], exc: BaseException) -> None:
        """Delete whatever rows of ``batch``'s files are in the store (an INSERT before the failed one stored them)."""
        if self._store is None:
            return
        conns = ", ".join(str(p.n) for p in batch)
        try:
            self._store.query(f"DELETE FROM caerus.books WHERE conn IN ({conns})")
        except Exception as e:  # the store itself failing: say which rows may remain
            exc.add_note(f"and the rows of files {conns} stored before the failure could not be deleted ({e}): "
                         f"delete them (DELETE FROM caerus.books WHERE conn IN ({conns})) before importing again")

    def _insert(self, group: list[tuple[_Pending, str, int]]) -> tuple[float, float]:
        """One INSERT ... SELECT of the staging files in ``group`` (each with its file and its rows)."""
        names = [Path(path).name for _, path, _ in group]
        if len(names) == 1:
            source = group[0][1]
        else:
            source = str(self.stage_dir / ("{" + ",".join(n.removesuffix(STAGE_SUFFIX) for n in names) + "}"
                                           + STAGE_SUFFIX))
        files = list({p.n: p for p, _, _ in group}.values())

        def per_file(values: dict[int, int], default: str) -> str:
            """A value per file, chosen by the staging file (``_file``) a row comes from."""
            return f"transform(_file, {names}, {[values[p.n] for p, _, _ in group]}, {default})"

        # a row's market: its file's number and its sym index within the file (a file holds < 65536 markets)
        numbers = {p.n: p.n for p in files}
        key = f"(toUInt64({per_file(numbers, 'toUInt64(0)')}) * 65536 + sym)"
        keys = [p.n * 65536 + k for p in files for k in range(len(p.ids))]
        ids = [i for p in files for i in p.ids]
        bases = [b for p in files for b in p.bases]
        sym_expr = f"toUInt16(transform({key}, {keys}, {ids}, toUInt64(0)))" if keys else "toUInt16(0)"
        base_expr = f"transform({key}, {keys}, {bases}, toInt64(0))" if keys else "toInt64(0)"
        offset = per_file({p.n: p.r.offset_ns or 0 for p in files}, "toInt64(0)")
        session = {p.entry["session"] for p in files}
        if len(session) != 1:
            raise ValueError(f"one commit holds one session's files, not {sorted(session)}")
        w0, c0 = time.perf_counter(), time.process_time()
        self.store.query(
            "INSERT INTO caerus.books (session, venue, flags, symbol, conn, reason, seq, t_exchange, t_recv, "
            "t_publish, bid_px, bid_qty, ask_px, ask_qty, t_wire) "
            f"SELECT {quote(session.pop())}, "
            f"CAST(toUInt8({per_file({p.n: p.code for p in files}, 'toUInt8(0)')}) AS {VENUE_ENUM}), flags, "
            f"{sym_expr}, toUInt16({per_file(numbers, 'toUInt16(0)')}), reason, "
            f"if(seq > 0, seq + {base_expr}, seq), "
            f"if(derive = {DERIVE_T_EXCHANGE}, t_recv - {offset}, t_exchange), "
            f"if(derive = {DERIVE_T_RECV}, t_exchange + {offset}, t_recv), toInt64(0), "
            "bid_px, bid_qty, ask_px, ask_qty, toInt64(0) "
            f"FROM file({quote(source)}, 'ArrowStream') "
            # no collapsing of equal keys at insert (every reader of caerus.books reads FINAL, which
            # collapses them): ~30% less chDB CPU per row, measured 0.67 -> 0.46 us/row here
            "SETTINGS optimize_on_insert = 0")
        return time.perf_counter() - w0, time.process_time() - c0

    def _next_seq_base(self, code: int, symbol: int, last_seq: int) -> int:
        """The number to add to a time-rule file's own record numbers so they continue the market's in the store:
        the store's newest, then each file added after it continues from the one before (flushed or not)."""
        key = (code, symbol)
        if key not in self._seq_bases:
            text = self.store.query(f"SELECT max(seq) FROM caerus.books WHERE venue = {code} AND symbol = {symbol}")
            try:
                self._seq_bases[key] = int(text.strip() or 0)
            except ValueError:
                self._seq_bases[key] = 0
        base = self._seq_bases[key]
        self._seq_bases[key] = base + last_seq
        return base

    def _entry(self, n: int, r: FileResult, session: str, placed: list[dict[str, Any]], ids: list[int],
               provenance: str | None) -> dict[str, Any]:
        counts = r.counts
        return {
            "n": n, "conn": n, "path": r.path, "name": Path(r.path).name, "size": r.size, "blake2b": r.blake2b,
            "format": r.format, "session": session,
            "markets": [{**asdict(p["market"]), "slot": p["slot"], "role": p["role"], "instrument": p["instrument"],
                         "instrument_id": i} for p, i in zip(placed, ids, strict=True)],
            "frames": r.frames,
            "read": {k[5:]: v for k, v in sorted(counts.items()) if k.startswith("read.")},
            "stored": {"valid": r.stored_valid, "rejected": r.stored_rejected},
            "refused": dict(sorted(r.refused.items())) | {k[8:]: v for k, v in sorted(counts.items())
                                                          if k.startswith("refused.")},
            "dropped": {k[8:]: v for k, v in sorted(counts.items()) if k.startswith("dropped.")},
            "not_stored": not_stored(counts),
            "derived": r.derived, "clock": r.clock, "clock_measured": r.measured,
            "clock_offset_ns": r.offset_ns, "ordering_rule": r.rule,
            "t_recv_first": r.t_recv_first, "t_recv_last": r.t_recv_last, "notes": r.notes,
            "provenance": provenance, "licence": _licence_near(Path(r.path)),
            "imported_ns": time.time_ns(), "read_cpu_s": round(r.cpu_s, 3),
            "commit_s": None, "commit_cpu_s": None, "commit_files": None, "commit_inserts": None,  # by flush()
        }

    def _market(self, session: str, p: dict[str, Any], inst_id: int, n: int) -> None:
        m: Market = p["market"]
        key = (session, p["slot"], p["instrument"])
        for other in self.meta["markets"]:
            if (other["session"], other["slot"], other["instrument"]) == key:
                other["files"].append(n)
                return
        self.meta["markets"].append({"session": session, "slot": p["slot"], "role": p["role"],
                                     "instrument": p["instrument"], "instrument_id": inst_id, "venue": m.venue,
                                     "product": m.product, "symbol": m.symbol, "files": [n]})

    def _write_meta(self) -> None:
        files = self.meta["files"]
        for mk in self.meta["markets"]:
            offs = [f["clock_offset_ns"] for f in files if f["n"] in mk["files"] and f["clock_offset_ns"] is not None]
            mk["clock_offset_ns"] = int(np.median(offs)) if offs else None
        by_slot: dict[str, list[int]] = {}
        for f in files:
            for mk in f["markets"]:
                if f["clock_offset_ns"] is not None:
                    by_slot.setdefault(mk["slot"], []).append(f["clock_offset_ns"])
        every = [f["clock_offset_ns"] for f in files if f["clock_offset_ns"] is not None]
        self.meta["clock_offset_ns"] = int(np.median(every)) if every else None
        self.meta["clock_offset_spread_ns"] = int(max(every) - min(every)) if every else None
        self.meta["clock_offset_ns_by_slot"] = {k: int(np.median(v)) for k, v in sorted(by_slot.items())}
        self.meta["about"] = (
            "Written by `caerus data import` (docs/research.md, 'Bring your own data'). clock_offset_ns: how far the "
            "receive clock runs ahead of the venue clock, the median of t_recv - t_exchange over frames carrying both "
            "(ns; negative: receive stamps earlier than the venue's). Top level: median over files (spread: max - "
            "min); per slot, market and file below. Each book row's conn is its file's n. slot binance = leader, "
            "hyperliquid = follower; markets[] says which real market each holds.")
        tmp = self.meta_path.with_name(self.meta_path.name + ".tmp")
        tmp.write_text(json.dumps(self.meta, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.meta_path)

    def close(self) -> None:
        """Close the store. Files added and not flushed (an import stopped by an error) are dropped, not stored:
        import.json never names a file whose rows are not in the store."""
        if self._pending:
            for p in self._pending:
                remove_stages(p.r.stages)
            self.meta, self._pending = self._meta_before, []
        if self._store is not None:
            self._store.close()
        try:
            self.stage_dir.rmdir()
        except OSError:
            pass


def insert_groups(batch: list[_Pending]) -> list[list[tuple[_Pending, str, int]]]:
    """``batch``'s staging files (with their file and rows), in order, in groups of at most STAGE_PIECE_ROWS rows
    (a file's piece has at most that many): one INSERT each. Files with no rows have no staging file."""
    groups: list[list[tuple[_Pending, str, int]]] = []
    rows = 0
    for p in batch:
        for path, k in zip(p.r.stages, p.r.stage_rows, strict=True):
            if not groups or rows + k > worker.STAGE_PIECE_ROWS:  # the worker's one limit, read when grouping
                groups.append([])
                rows = 0
            groups[-1].append((p, path, k))
            rows += k
    return groups


def not_stored(counts: dict[str, int]) -> dict[str, int]:
    """Frames read and kept out by design (not refused): trades (the capture schema has no trades table), depth
    diffs and REST snapshots (not a top of book), Hyperliquid trades, other streams."""
    out = {}
    for kind in ("trade", "depth", "rest_snapshot", "trades", "other_stream"):
        n = counts.get(f"read.{kind}", 0) - counts.get(f"refused.unreadable_{kind}", 0)
        if n:
            out[kind] = n
    return out
