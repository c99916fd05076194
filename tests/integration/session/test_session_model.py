"""A session trading a trained model (``signal = "model"``) names it by its content hash in env.json and the
report; a model the strategy would refuse stops the session before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from caerus import cli

ROOT = Path(__file__).resolve().parents[3]


def _session(out: Path, strategy_cfg: Path, shm: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "caerus", "session", "--duration", "6", "--out", str(out),
                           "--reports", str(out.parent / "reports"), "--progress", "lines", "--stop-grace", "15",
                           "--no-capture", "--strategy-config", str(strategy_cfg)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)})


def test_the_models_hash_is_in_env_json_and_the_report(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    assert cli.main(["train", "-o", str(model), "--seeds", "1", "--minutes", "3", "--folds", "2"]) == 0
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
    assert cli.main(["train", "-o", str(model), "--seeds", "1", "--minutes", "3", "--folds", "2"]) == 0
    doc = json.loads(model.read_text())
    doc["decision"]["entry_bps"] = 0.01  # edited after training: the content hash no longer matches
    model.write_text(json.dumps(doc))
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{model}"\n')
    res = _session(tmp_path / "sessions", cfg, Path("/dev/shm") / f"caerus-test-model-bad-{os.getpid()}")
    assert res.returncode == 2
    assert "content hash" in res.stderr and str(model) in res.stderr
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())
