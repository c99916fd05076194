"""The backtest reads captured books only through caerus.data: the same books in a chDB capture store (written by
capture's own store code) and in Debian's clickhouse-server 18.16 (inserted as the Kafka sink encodes them) give
identical BookEvents and identical backtests; `caerus backtest --clickhouse URL --start --end` runs on the server;
a URL carrying a password is refused as capture refuses it and the password is never repeated; the password comes
from a 0600 file only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from caerus import instruments as inst_mod
from caerus.capture import rows
from caerus.capture.clickhouse import ClickHouseHttp
from caerus.capture.kafka import json_rows
from caerus.capture.store import ChdbStore
from caerus.research.backtest import events as events_mod
from caerus.research.backtest import runner, sources
from caerus.research.backtest.latency import LatencyModel
from tests.fixtures.capture_clickhouse import ClickHouseServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SESSION = "BT"
MS = 1_000_000


def _captured_books() -> pd.DataFrame:
    """120 s of the offline market model as capture stores it: t_recv a seeded 0.2-3 ms after the exchange time,
    t_publish 700 ns later; one REJECTED row (kept by the store, skipped by the strategy as live)."""
    ev = sources.offline_market(120, seed=3).events
    n = len(ev)
    rng = np.random.default_rng(7)
    t_recv = ev.t_exchange + rng.integers(200_000, 3 * MS, n)
    flags = ev.flags.copy()
    flags[n // 2] |= 0x20  # BookFlags.REJECTED
    df = pd.DataFrame({
        "venue": ev.venue, "flags": flags, "symbol": ev.symbol, "conn": np.ones(n, np.uint16),
        "reason": np.zeros(n, np.uint8), "seq": ev.seq, "t_exchange": ev.t_exchange, "t_recv": t_recv,
        "t_publish": t_recv + 700, "bid_px": ev.bid_px, "bid_qty": ev.bid_qty, "ask_px": ev.ask_px,
        "ask_qty": ev.ask_qty, "t_wire": np.zeros(n, np.int64)})
    return df[list(rows.BOOK_COLUMNS)]


@pytest.fixture
def both(tmp_path: Path, clickhouse_server: ClickHouseServer) -> tuple[Path, str, pd.DataFrame]:
    df = _captured_books()
    folder = tmp_path / SESSION
    folder.mkdir()
    inst_mod.save(inst_mod.DEFAULT, folder / inst_mod.FILE_NAME)
    store = ChdbStore(folder / "capture")
    try:
        store.insert("books", df, SESSION)
    finally:
        store.close()
    ch = ClickHouseHttp(clickhouse_server.url)
    ch.ensure_schema()
    lines = json_rows("books", df, SESSION)
    for k in range(0, len(lines), 5000):
        ch.insert_json("books", lines[k:k + 5000])
    return folder, clickhouse_server.url, df


def _same(a: events_mod.BookEvents, b: events_mod.BookEvents, float_ulps: int = 0) -> None:
    for c in events_mod.COLUMNS:
        x, y = getattr(a, c), getattr(b, c)
        if float_ulps and x.dtype.kind == "f":
            np.testing.assert_array_max_ulp(x, y, maxulp=float_ulps)
        else:
            np.testing.assert_array_equal(x, y, err_msg=c)


def test_store_session_and_clickhouse_give_the_captured_books_and_the_same_backtest(
        both: tuple[Path, str, pd.DataFrame]) -> None:
    folder, url, df = both
    want = events_mod.BookEvents.from_columns({c: df[c].to_numpy() for c in df.columns})
    t0, t1 = int(df["t_recv"].min()), int(df["t_recv"].max()) + 1
    local = sources.from_session(folder)
    remote = sources.from_clickhouse(url, t0, t1)
    _same(local.events, want)
    _same(sources.from_store(folder / "capture").events, want)
    # 18.16 parses the inserted JSON floats with its fast parser, not always correctly rounded: within 1 ulp
    _same(remote.events, want, float_ulps=1)
    assert "ClickHouse http://127.0.0.1:" in remote.description
    # a range: [start, end) of t_recv on both engines
    mid = int(np.median(df["t_recv"]))
    part = sources.from_clickhouse(url, t0, mid).events
    _same(part, want.between(None, mid), float_ulps=1)
    _same(sources.from_session(folder, None, mid).events, part, float_ulps=1)
    opts = runner.BacktestOptions(latency=LatencyModel.constant(MS), seed=2)
    a, _ = runner.run_backtest(local, opts)
    b, _ = runner.run_backtest(remote, opts)
    assert a["metrics"]["total"]["orders"] > 0
    key = ("reason", "side", "qty", "trigger_seq", "trigger_t_recv", "t_seen", "t_match", "outcome", "fill_qty")
    assert [[o[k] for k in key] for o in a["orders"]] == [[o[k] for k in key] for o in b["orders"]]
    for k in ("px", "fill_px"):
        np.testing.assert_allclose([o[k] for o in a["orders"]], [o[k] for o in b["orders"]], rtol=1e-12)
    with pytest.raises(sources.SourceError, match=r"no captured books in http://127\.0\.0\.1:\d+ for t_recv in"):
        sources.from_clickhouse(url, t1 + 1, t1 + 2)
    with pytest.raises(sources.SourceError, match=r"no captured books in .*capture for t_recv in"):
        sources.from_session(folder, t1 + 1, t1 + 2)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "backtest", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)


def test_the_cli_backtests_a_clickhouse_range_and_keeps_the_password_out_of_urls_and_messages(
        both: tuple[Path, str, pd.DataFrame], clickhouse_server: ClickHouseServer, tmp_path: Path) -> None:
    _folder, url, df = both
    t0, t1 = str(int(df["t_recv"].min())), str(int(df["t_recv"].max()) + 1)
    res = _cli("--clickhouse", url, "--start", t0, "--end", t1, "--latency", "1ms", "--out", str(tmp_path / "o"),
               "--no-html")
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "result.json").read_text())
    assert doc["metrics"]["total"]["orders"] > 0
    # the writer user's password only from a 0600 file
    secret = clickhouse_server.writer_password
    pw = tmp_path / "ch.pass"
    pw.write_text(secret + "\n")
    os.chmod(pw, 0o600)
    res = _cli("--clickhouse", url, "--clickhouse-user", clickhouse_server.writer_user, "--clickhouse-password-file",
               str(pw), "--start", t0, "--end", t1, "--latency", "1ms", "--out", str(tmp_path / "o2"), "--no-html")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "o2" / "result.json").read_text())["orders"] == doc["orders"]
    os.chmod(pw, 0o644)
    res = _cli("--clickhouse", url, "--clickhouse-user", clickhouse_server.writer_user, "--clickhouse-password-file",
               str(pw), "--start", t0, "--end", t1, "--out", str(tmp_path / "o3"))
    assert res.returncode == 2 and "0600" in res.stderr and secret not in res.stderr + res.stdout
    # credentials in the URL: refused before any request, the password never repeated
    with_pw = url.replace("http://", f"http://{clickhouse_server.writer_user}:{secret}@")
    res = _cli("--clickhouse", with_pw, "--start", t0, "--end", t1, "--out", str(tmp_path / "o4"))
    assert res.returncode == 2
    assert "the URL carries a password" in res.stderr
    assert secret not in res.stderr + res.stdout
    assert res.stderr.count("\n") == 1
    assert not (tmp_path / "o4").exists()
    with pytest.raises(sources.SourceError) as err:
        sources.from_clickhouse(with_pw, int(t0), int(t1))
    assert secret not in str(err.value) and "carries a password" in str(err.value)
    # a user in the URL is refused too (the user goes in --clickhouse-user)
    res = _cli("--clickhouse", url.replace("http://", "http://writer@"), "--start", t0, "--end", t1)
    assert res.returncode == 2 and "--clickhouse-user" in res.stderr
