"""Baseline storage: machine keys, round trips, per-mode sections, unreadable files named."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.regress.baselines import (
    BaselineError,
    BaselineFile,
    BaselineMetric,
    BaselineMode,
    MachineIdentity,
    baseline_path,
    load_baseline,
    machine_identity,
    machine_key,
    save_baseline,
    with_mode,
)

IDENT = MachineIdentity(cpu="Intel(R) Xeon(R) Platinum 8488C", cores=8, kernel="6.1.0-18-cloud-amd64", arch="x86_64")


def _mode(value: float, revision: str = "abc") -> BaselineMode:
    return BaselineMode(created="2026-12-02T12:00:00Z", revision=revision, dirty=False, repetitions=9,
                        references={"ipc_hop": "ipc_hop/queue (same stat, same run)"},
                        metrics={"ipc_hop/swmr.p50": BaselineMetric(direction="lower", samples=[value] * 9,
                                                                    median=value),
                                 "ipc_hop/ratio.speedup": BaselineMetric(direction="higher", samples=[40.0, 41.5],
                                                                         median=40.75)})


def test_machine_key_from_cpu_cores_kernel() -> None:
    assert machine_key(IDENT) == "intel-xeon-platinum-8488c-8c-6.1.0-18-cloud-amd64"
    other_kernel = MachineIdentity(cpu=IDENT.cpu, cores=8, kernel="6.1.0-19-cloud-amd64")
    fewer_cores = MachineIdentity(cpu=IDENT.cpu, cores=4, kernel=IDENT.kernel)
    assert len({machine_key(IDENT), machine_key(other_kernel), machine_key(fewer_cores)}) == 3
    here = machine_identity()
    assert here.cores >= 1 and here.kernel
    assert baseline_path(Path("/b"), machine_key(here)).name == machine_key(here) + ".json"


def test_round_trip(tmp_path: Path) -> None:
    key = machine_key(IDENT)
    doc = with_mode(None, key, IDENT, "quick", _mode(0.031))
    path = save_baseline(tmp_path, doc)
    assert path == tmp_path / f"{key}.json"
    back = load_baseline(tmp_path, key)
    assert back == doc
    assert back.modes["quick"].metrics["ipc_hop/swmr.p50"].samples == [0.031] * 9
    assert '"ipc_hop/swmr.p50"' in path.read_text()  # human-readable, diffable JSON


def test_updating_one_mode_keeps_the_other(tmp_path: Path) -> None:
    key = machine_key(IDENT)
    save_baseline(tmp_path, with_mode(None, key, IDENT, "full", _mode(0.02, "full-rev")))
    stored = load_baseline(tmp_path, key)
    save_baseline(tmp_path, with_mode(stored, key, IDENT, "quick", _mode(0.03, "quick-rev")))
    back = load_baseline(tmp_path, key)
    assert set(back.modes) == {"full", "quick"}
    assert back.modes["full"].revision == "full-rev" and back.modes["quick"].revision == "quick-rev"


def test_missing_baseline_is_none(tmp_path: Path) -> None:
    assert load_baseline(tmp_path, "nothing-here") is None


def test_unreadable_baseline_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text('{"key": "k", "machine": {"cpu": "x"}}')
    with pytest.raises(BaselineError, match=r"k\.json is not a valid baseline file"):
        load_baseline(tmp_path, "k")
    (tmp_path / "k.json").write_text("not json")
    with pytest.raises(BaselineError, match=r"k\.json"):
        load_baseline(tmp_path, "k")


def test_key_mismatch_and_schema_are_checked(tmp_path: Path) -> None:
    doc = BaselineFile(key="a", machine=IDENT, modes={})
    save_baseline(tmp_path, doc)
    (tmp_path / "a.json").rename(tmp_path / "b.json")
    with pytest.raises(BaselineError, match="says key 'a'"):
        load_baseline(tmp_path, "b")
    save_baseline(tmp_path, BaselineFile(key="c", machine=IDENT, modes={}, schema=99))
    with pytest.raises(BaselineError, match="schema 99"):
        load_baseline(tmp_path, "c")


def test_bad_machine_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="machine key"):
        baseline_path(tmp_path, "../escape")
