"""A model file is input, not code (issue 44): every tree must be a tree (each node and leaf reached once from the
root: no shared subtree, no cycle, nothing unreachable) before any code is generated from it, its sizes are capped
by named limits, and a config may pin the content hash it expects; each refusal is one line.

Without these checks the hostile files here would make the loader generate gigabytes of code (a 20-node DAG) or the
arrays form walk forever (a self-loop). Every refusal asserted here happens in load_model or while scorer builds a
form, so with the checks reverted a test fails at once ("DID NOT RAISE"): nothing refused is ever compiled or
evaluated. The real strategy entry on these files: tests/integration/strategy/test_strategy_model_file.py."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from caerus.config import ConfigError, load_config
from caerus.research.models.data import training_rows
from caerus.research.models.train import _fit, export_trees
from caerus.strategy import model_signal
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import N_FEATURES
from caerus.strategy.model_signal import Model, ModelError, load_model, scorer, strategy_model
from tests.fixtures.model_files import chain, dag, tree, trees_doc, write
from tests.unit.research.models.conftest import line


def _hand_built(trees: list[dict]) -> Model:
    """A Model made from arrays without load_model, as tests and benchmarks make them."""
    return Model(path="-", kind="trees", hash="0" * 64, horizon_ms=1000.0, entry_bps=1.0, exit_bps=0.0,
                 reversal_bps=3.0, trees=tuple(trees))


# -- trees must be trees ---------------------------------------------------------------------------------------------


def test_a_dag_is_refused_by_the_loader_naming_its_tree_and_node(tmp_path: Path) -> None:
    valid = chain(3)
    shared = tree([1, 2, -1], [2, -2, -3], 4)  # node 2 is node 0's right child and node 1's left child
    p = write(tmp_path / "m.json", trees_doc([valid, shared]))
    with pytest.raises(ModelError, match=r"tree 1 is not a tree: node 1's left child is node 2, already node 0's "
                                         r"right child \(a shared subtree\)"):
        load_model(p)
    with pytest.raises(ModelError, match="tree 0 is not a tree: node 0's right child is node 1"):
        load_model(write(tmp_path / "dag.json", trees_doc([dag(20)])))


def test_a_self_loop_is_refused_before_the_arrays_form_could_walk_it(tmp_path: Path) -> None:
    """Node 1 is its own left child: the arrays form's walk would never end for a row that goes left there. The
    loader refuses the file; a Model built from the arrays by hand is refused by scorer in both forms."""
    loop = tree([1, 1], [-1, -2], 3)
    p = write(tmp_path / "loop.json", trees_doc([chain(2), loop]))
    want = r"tree 1 is not a tree: node 1's left child is node 1, itself \(a cycle\)"
    with pytest.raises(ModelError, match=want):
        load_model(p)
    for form in ("trees_arrays", "trees_code"):
        with pytest.raises(ModelError, match=want):
            scorer(_hand_built([chain(2), loop]), form)  # never evaluated: refused while the form is built


def test_a_longer_cycle_is_named_a_cycle(tmp_path: Path) -> None:
    cycle = tree([1, 2, 1], [-1, -2, -3], 4)  # 0 -> 1 -> 2 -> 1
    with pytest.raises(ModelError, match=r"tree 0 is not a tree: node 2's left child is node 1, its ancestor "
                                         r"\(a cycle\)"):
        load_model(write(tmp_path / "m.json", trees_doc([cycle])))


def test_an_unreachable_node_or_a_leaf_reached_twice_is_refused(tmp_path: Path) -> None:
    unreached = tree([1, -2, -4], [-1, -3, -4], 4)  # node 2 hangs off nothing
    with pytest.raises(ModelError, match=r"tree 0 is not a tree: node 2 is not reachable from the root \(node 0\)"):
        load_model(write(tmp_path / "u.json", trees_doc([unreached])))
    twice = tree([1, -2], [-1, -2], 3)  # leaf 1 is both children of node 1; leaf 2 is reached by no one
    with pytest.raises(ModelError, match="tree 0 is not a tree: node 1's right child, leaf 1, is already node 1's "
                                         "left child"):
        load_model(write(tmp_path / "t.json", trees_doc([twice])))


# -- named limits ------------------------------------------------------------------------------------------------------


def test_the_code_form_has_a_depth_limit_and_the_arrays_form_evaluates_deeper_trees(tmp_path: Path) -> None:
    deep = load_model(write(tmp_path / "deep.json", trees_doc([chain(model_signal.MAX_CODE_DEPTH + 1)])))
    with pytest.raises(ModelError, match=f"tree 0 is {model_signal.MAX_CODE_DEPTH + 1} levels deep, over "
                                         f"MAX_CODE_DEPTH = {model_signal.MAX_CODE_DEPTH}"):
        scorer(deep)
    x = [-1.0] * N_FEATURES  # feature 0 below every threshold: left at every node, to the last leaf
    assert scorer(deep, "trees_arrays")(x) == model_signal.MAX_CODE_DEPTH + 1.0
    at_limit = load_model(write(tmp_path / "ok.json", trees_doc([chain(model_signal.MAX_CODE_DEPTH)])))
    assert scorer(at_limit)(x) == scorer(at_limit, "trees_arrays")(x) == model_signal.MAX_CODE_DEPTH


@pytest.mark.parametrize(("limit", "value", "trees", "message"), [
    ("MAX_TREE_DEPTH", 5, [chain(6)], "tree 0 is deeper than MAX_TREE_DEPTH = 5 levels (node 5 at level 6)"),
    ("MAX_TREE_NODES", 5, [chain(3), chain(6)], "tree 1 has 6 nodes, over MAX_TREE_NODES = 5"),
    ("MAX_TREES", 2, [chain(1)] * 3, "3 trees, over MAX_TREES = 2"),
    ("MAX_MODEL_BYTES", 500, [chain(30)], "over MAX_MODEL_BYTES = 500 bytes"),
])
def test_each_loader_limit_refuses_a_file_past_it_naming_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: int, trees: list[dict],
        message: str) -> None:
    p = write(tmp_path / "m.json", trees_doc(trees))
    load_model(p)  # within the real limits
    monkeypatch.setattr(model_signal, limit, value)
    with pytest.raises(ModelError) as exc:
        load_model(p)
    assert str(exc.value) == f"model {p}: {message}"


def test_the_generated_code_size_is_capped_naming_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = load_model(write(tmp_path / "m.json", trees_doc([chain(10)] * 20)))
    size = len(model_signal._trees_code([model_signal._check_tree(t, k) for k, t in enumerate(m.trees)], 0.0))
    monkeypatch.setattr(model_signal, "MAX_CODE_BYTES", size // 2)
    with pytest.raises(ModelError, match=rf"model {m.path}: trees 0-\d+ of 20 already generate \d+ bytes of code, "
                                         rf"over MAX_CODE_BYTES = {size // 2}: use form trees_arrays"):
        scorer(m)
    assert scorer(m, "trees_arrays")([0.0] * N_FEATURES) == 20 * 10.0  # each tree: left throughout, to leaf 10


def test_a_deeply_nested_file_is_not_json_in_one_line(tmp_path: Path) -> None:
    p = tmp_path / "nested.json"
    p.write_text("[" * 100_000)
    with pytest.raises(ModelError, match=r"not JSON \(nested too deeply\)"):
        load_model(p)


def test_a_fifo_or_a_folder_at_the_model_path_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO planted at the path would block a plain open until someone writes to it. Bounded here: the load runs
    in a daemon thread joined with a timeout, and a blocked open is released by opening the FIFO's other end."""
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    got: list[BaseException] = []
    t = threading.Thread(target=lambda: _catch(got, fifo), daemon=True)
    t.start()
    t.join(JOIN_TIMEOUT_S)
    blocked = t.is_alive()
    if blocked:  # release it: a writer that opens and closes gives the reader end of file
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(JOIN_TIMEOUT_S)
    assert not blocked, "load_model blocked on a FIFO"
    assert [str(e) for e in got] == [f"model {fifo}: not a regular file"]
    with pytest.raises(ModelError, match=f"model {tmp_path}: not a regular file"):
        load_model(tmp_path)


JOIN_TIMEOUT_S = 10.0


def _catch(into: list[BaseException], path: Path) -> None:
    try:
        load_model(path)
    except BaseException as exc:  # handed to the test's thread to assert on
        into.append(exc)


# -- a valid model is unchanged --------------------------------------------------------------------------------------


def test_a_trained_trees_model_file_loads_and_both_forms_equal_lightgbm_bit_for_bit(tmp_path: Path) -> None:
    """The checks refuse nothing LightGBM exports and change no number: the file's trees evaluate in both forms to
    LightGBM's own predictions, to the last bit (a regression guard: this passes with or without the checks)."""
    ds, _ = training_rows([line(1)], 1000.0)
    fitted = _fit("trees", {"num_leaves": 16, "n_estimators": 10, "learning_rate": 0.3}, ds.X, ds.y, 1)
    exported = export_trees(fitted)
    m = load_model(write(tmp_path / "m.json", trees_doc(exported["trees"], exported["init"])))  # type: ignore[arg-type]
    X = ds.X[:2000]
    want = fitted.predict(X)  # type: ignore[attr-defined]
    for form in ("trees_code", "trees_arrays"):
        f = scorer(m, form)
        got = np.array([f(list(x)) for x in X])
        assert np.array_equal(got, want), form


# -- the pinned content hash -----------------------------------------------------------------------------------------


def test_the_pin_accepts_the_pinned_content_whatever_its_layout(tmp_path: Path) -> None:
    doc = trees_doc([chain(3)])
    spaced = write(tmp_path / "spaced.json", doc, separators=None)
    (tmp_path / "indented.json").write_text(json.dumps(doc, indent=2))
    for p in (spaced, tmp_path / "indented.json"):
        assert load_model(p, doc["hash"]).hash == doc["hash"]
        assert load_model(p, doc["hash"].upper()).hash == doc["hash"]
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{spaced}"\nmodel_sha256 = "{doc["hash"]}"\n')
    assert strategy_model(cfg)["hash"] == doc["hash"]  # type: ignore[index]
    cfg.write_text(f'signal = "model"\nmodel = "{spaced}"\nmodel_sha256 = "{"0" * 64}"\n')
    with pytest.raises(ModelError, match=f"content sha256 {doc['hash']} is not the pinned model_sha256 {'0' * 64}"):
        strategy_model(cfg)


def test_the_pin_setting_is_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('signal = "model"\nmodel = "m.json"\nmodel_sha256 = "a3f9dca909e77509"\n')  # a prefix is no pin
    with pytest.raises(ConfigError, match=r"\$\.model_sha256"):
        load_config(StrategyConfig, cfg, "strategy")
    cfg.write_text(f'model_sha256 = "{"a" * 64}"\n')
    with pytest.raises(ConfigError, match="model_sha256 pins a model file"):
        load_config(StrategyConfig, cfg, "strategy")
