"""The real ``caerus strategy`` entry on a hostile or unpinned model file (issue 44): it exits 2 before attaching
anything, with one line.

Each child runs under an address-space limit and a timeout: the unfixed loader needed ~4.5 GiB and ~70 s to compile
the 20-node DAG, so with the checks reverted the child dies of MemoryError (or the timeout) instead of eating the
host, and the test fails."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from caerus.strategy.model_signal import load_model
from tests.fixtures.model_files import chain, dag, trees_doc, write

ROOT = Path(__file__).resolve().parents[3]
CHILD_AS_BYTES = 1 << 30  # the fixed strategy refuses these files at ~40 MiB RSS
CHILD_TIMEOUT_S = 120


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_BYTES, CHILD_AS_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _strategy(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    """``caerus strategy`` with this TOML: it exits 2 before attaching when it refuses its model; otherwise it goes
    on to attach the book rings, absent here, and exits 1 after 0.1 s."""
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(config)
    shm = tmp_path / "shm"
    shm.mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "caerus", "strategy", "--segment", "a", "--segment", "b", "--order-segment", "o",
         "--exec-segment", "e", "--config", str(cfg), "--attach-timeout", "0.1"],
        capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False, cwd=ROOT, preexec_fn=_limit_child,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm)})


def test_the_20_node_dag_of_issue_44_stops_the_strategy_in_one_line(tmp_path: Path) -> None:
    """The reproducer's file (20 nodes, ~900 bytes as json.dumps lays it out): exit 2 with one line naming the
    tree and the node, not gigabytes of generated code."""
    model = write(tmp_path / "dag.json", trees_doc([dag(20)]), separators=None)
    assert len(model.read_bytes()) < 1000
    res = _strategy(tmp_path, f'signal = "model"\nmodel = "{model}"\n')
    assert res.returncode == 2, res.stderr[-2000:]
    (msg,) = res.stderr.strip().splitlines()
    assert msg == (f"error: model {model}: tree 0 is not a tree: node 0's right child is node 1, already node 0's "
                   "left child (a shared subtree)")


def test_a_model_other_than_the_pinned_one_stops_the_strategy_in_one_line_naming_both_hashes(tmp_path: Path) -> None:
    """The threat: the file is edited and its own ``hash`` recomputed, so it passes its self-check. The config's
    pin is compared with the hash computed from the content, so the strategy stops before attaching anything."""
    pinned = trees_doc([chain(3)])
    edited = trees_doc([chain(3)], init=0.25)  # another model, with a correct hash of its own
    model = write(tmp_path / "model.json", edited)
    load_model(model)  # it passes its self-check
    res = _strategy(tmp_path, f'signal = "model"\nmodel = "{model}"\nmodel_sha256 = "{pinned["hash"]}"\n')
    assert res.returncode == 2, res.stderr[-2000:]
    (msg,) = res.stderr.strip().splitlines()
    assert msg == (f"error: model {model}: content sha256 {edited['hash']} is not the pinned model_sha256 "
                   f"{pinned['hash']}")


def test_the_pinned_model_starts_the_strategy(tmp_path: Path) -> None:
    """The same pin on the pinned file: the model is accepted and the strategy goes on to attach its rings (absent
    here: it gives up after --attach-timeout)."""
    doc = trees_doc([chain(3)])
    model = write(tmp_path / "model.json", doc)
    res = _strategy(tmp_path, f'signal = "model"\nmodel = "{model}"\nmodel_sha256 = "{doc["hash"]}"\n')
    assert res.returncode == 1, res.stderr[-2000:]
    assert res.stderr == "error: book segment 'a' did not appear within 0.1 s\n"
