"""A session trading a trained model (``signal = "model"``) names it by its content hash in env.json and the
report; a model the strategy would refuse (a tampered file, or another than the config pins) stops the session
before anything starts; ``signal = "ab"`` alternates naive and model windows, tags each order with its arm and
reports both arms."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from caerus import cli
from caerus.capture.store import ChdbStore
from caerus.strategy.ab import arm_at
from caerus.wire import ExecFlags, OrderFlags
from tests.fixtures.model_files import chain, trees_doc, write

pytestmark = pytest.mark.serial("whole-fleet sessions: the plan pins the hot processes to CPUs")

ROOT = Path(__file__).resolve().parents[3]


def _session(out: Path, strategy_cfg: Path, shm: Path, *extra: str,
             duration: float = 6) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "session", "--duration", str(duration), "--out", str(out),
                           "--reports", str(out.parent / "reports"), "--progress", "lines", "--stop-grace", "15",
                           "--strategy-config", str(strategy_cfg), *(extra or ("--no-capture",))],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)})


def test_the_models_hash_is_in_env_json_and_the_report(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    assert cli.main(["train", "-o", str(model), "--market", "known-edge", "--seeds", "1", "--minutes", "3",
                     "--folds", "2"]) == 0
    doc = json.loads(model.read_text())
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{model}"\n')
    shm = Path("/dev/shm") / f"caerus-test-model-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    try:
        res = _session(tmp_path / "sessions", cfg, shm)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    (d,) = [p for p in (tmp_path / "sessions").iterdir() if p.is_dir()]
    env = json.loads((d / "env.json").read_text())
    assert env["model"]["hash"] == doc["hash"] and env["model"]["kind"] == doc["kind"]
    assert env["model"]["path"] == str(model)
    md = (d / "report.md").read_text()
    assert f"sha256 {doc['hash']}" in md


def test_a_tampered_model_stops_the_session_before_it_starts(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    assert cli.main(["train", "-o", str(model), "--market", "known-edge", "--seeds", "1", "--minutes", "3",
                     "--folds", "2"]) == 0
    doc = json.loads(model.read_text())
    doc["decision"]["entry_bps"] = 0.01  # edited after training: the content hash no longer matches
    model.write_text(json.dumps(doc))
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{model}"\n')
    res = _session(tmp_path / "sessions", cfg, Path("/dev/shm") / f"caerus-test-model-bad-{os.getpid()}")
    assert res.returncode == 2
    assert "content hash" in res.stderr and str(model) in res.stderr
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())


def test_a_model_other_than_the_pinned_one_stops_the_session_before_it_starts(tmp_path: Path) -> None:
    """The strategy config pins a content hash (model_sha256); the file was edited and re-hashed: `caerus session`
    refuses it at option checking, one line naming both hashes, and starts nothing."""
    pinned, edited = trees_doc([chain(3)]), trees_doc([chain(3)], init=0.25)
    model = write(tmp_path / "model.json", edited)
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{model}"\nmodel_sha256 = "{pinned["hash"]}"\n')
    res = _session(tmp_path / "sessions", cfg, Path("/dev/shm") / f"caerus-test-model-pin-{os.getpid()}")
    assert res.returncode == 2
    (msg,) = [ln for ln in res.stderr.splitlines() if "sha256" in ln]
    assert f"model {model}: content sha256 {edited['hash']} is not the pinned model_sha256 {pinned['hash']}" in msg
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())


def test_an_ab_session_alternates_naive_and_model_windows_and_reports_both_arms(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    assert cli.main(["train", "-o", str(model), "--market", "known-edge", "--seeds", "1", "--minutes", "3",
                     "--folds", "2"]) == 0
    cfg = tmp_path / "strategy.toml"
    # 2 s windows; a short cooldown, and the market the model was trained on with a jump every second, so both
    # arms trade within seconds (the cost-aware model enters only past its fees: on another market it may not)
    cfg.write_text(f'signal = "ab"\nmodel = "{model}"\nsignal_ab_window_s = 2.0\ncooldown_ms = 100.0\n'
                   'entry_bps = 2.0\nwarmup_ms = 200.0\n')
    shm = Path("/dev/shm") / f"caerus-test-model-ab-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    try:
        res = _session(tmp_path / "sessions", cfg, shm, "--market", "known-edge", "--jumps-per-min", "120",
                       duration=14)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert res.returncode == 0, f"session failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    (d,) = [p for p in (tmp_path / "sessions").iterdir() if p.is_dir()]
    summary = json.loads((d / "summary.json").read_text())
    st, ex = summary["counters"]["strategy"], summary["counters"]["execution"]
    assert st["ab.window_ns"] == 2_000_000_000
    for arm in ("naive", "model"):
        assert st[f"ab.orders.{arm}"] > 0, arm
        assert st[f"ab.{arm}_ns"] > 0, arm
        assert summary["metrics"][f"tick_to_decision_{arm}"]["n"] > 0, arm
        assert ex[f"paper.arm.{arm}.fills"] > 0, arm
        assert ex[f"paper.arm.{arm}.markout_n.0"] > 0, arm
    assert st["ab.orders.naive"] + st["ab.orders.model"] == st["orders"]
    # every captured order was decided in its arm's window (by the trigger book's t_seen)
    store = ChdbStore(d / "capture")
    try:
        df = store.query_df(f"SELECT flags, t_seen FROM caerus.orders FINAL "
                            f"WHERE bitAnd(flags, {int(ExecFlags.REPLY) | int(OrderFlags.SHADOW)}) = 0")
    finally:
        store.close()
    arms = [(int(f) & int(OrderFlags.MODEL) != 0, arm_at(st["ab.t0_ns"], st["ab.window_ns"], int(t)) == 1)
            for f, t in df.itertuples(index=False)]
    assert len(arms) == st["orders"]
    assert {tagged for tagged, _ in arms} == {False, True}
    assert all(tagged == in_model_window for tagged, in_model_window in arms)
    md = (d / "report.md").read_text()
    assert "Naive rule vs model (in-session A/B)" in md
    table = md.split("Naive rule vs model (in-session A/B)")[1]
    assert "| naive |" in table and "| model |" in table
    assert "A/B with the naive rule, 2 s windows" in md  # the environment table names the A/B
