"""Training: folds by time with a purge, a reproducible model file whose exported forms equal the fitted model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from caerus import cli
from caerus.research.models import train as train_mod
from caerus.research.models.data import training_rows
from caerus.research.models.train import (
    TREES_GRID,
    TrainOptions,
    _fit,
    decision_cost,
    export_linear,
    export_trees,
    train,
)
from caerus.research.models.walkforward import folds
from caerus.strategy.model_signal import Model, load_model, scorer
from tests.unit.research.models.conftest import line


def test_folds_are_by_time_and_purged_by_the_horizon() -> None:
    t = np.arange(0, 100_000_000_000, 10_000_000, dtype=np.int64)  # a row every 10 ms for 100 s
    h = 1_000_000_000
    for f in folds(t, 4, h):
        assert t[f.train].max() + 2 * h <= f.val_start  # purge (horizon) + embargo (one more horizon)
        assert t[f.val].min() >= f.val_start and t[f.val].max() < f.val_end
        assert f.purged == 200  # 2 s of rows at 100 per second
        assert len(np.intersect1d(f.train, f.val)) == 0


def test_train_twice_gives_the_same_file_and_a_model_that_loads(tmp_path: Path) -> None:
    out = [tmp_path / "a.json", tmp_path / "b.json"]
    for p in out:
        assert cli.main(["train", "-o", str(p), "--market", "known-edge", "--seeds", "1", "--minutes", "4",
                         "--folds", "3"]) == 0
    assert out[0].read_bytes() == out[1].read_bytes()
    m = load_model(out[0])
    doc = json.loads(out[0].read_text())
    assert m.hash == doc["hash"] and len(doc["selection"]["candidates"][0]["folds"]) == 3
    assert doc["training"]["ranges"][0]["t_train_end"] < doc["training"]["ranges"][0]["t_last"]
    assert set(doc["libraries"]) >= {"scikit-learn", "lightgbm", "numpy"}
    cands = doc["selection"]["candidates"]
    assert len(cands) == len(train_mod.LINEAR_GRID) + len(TREES_GRID)  # every candidate recorded, with its cost
    for c in cands:
        assert c["cost"] > 0 and c["cost_unit"] == ("node visits" if c["kind"] == "trees" else "nonzero weights")
        assert c["over_budget"] == (c["cost"] > train_mod.MAX_NODE_VISITS)
    assert doc["selection"]["max_node_visits"] == train_mod.MAX_NODE_VISITS > 0
    assert doc["selection"]["chosen"]["cost"] <= train_mod.MAX_NODE_VISITS


def _visits(tree: dict, x: np.ndarray) -> int:
    """Nodes visited walking one exported tree for x (the reference the cost is checked against)."""
    n, i = 0, 0 if tree["feature"] else -1
    while i >= 0:
        n += 1
        i = tree["left"][i] if x[tree["feature"][i]] <= tree["threshold"][i] else tree["right"][i]
    return n


def test_decision_cost_is_the_mean_walked_path_length_and_deterministic() -> None:
    ds, _ = training_rows([line(1)], 1000.0)
    X = ds.X[:3000]
    fitted = _fit("trees", {"num_leaves": 8, "n_estimators": 10, "learning_rate": 0.1}, ds.X, ds.y, 1)
    trees = export_trees(fitted)["trees"]
    want = sum(_visits(t, x) for x in X for t in trees) / len(X)  # type: ignore[union-attr]
    got = decision_cost("trees", fitted, X)
    assert got == pytest.approx(want, rel=1e-12) and got == decision_cost("trees", fitted, X)
    assert 10 < got < 10 * 7  # at least one split per tree, at most depth 7 for 8 leaves
    lin = _fit("linear", {"alpha": 1.0}, ds.X, ds.y, 1)
    assert decision_cost("linear", lin, X) == np.count_nonzero(export_linear(lin)["weights"])


def test_budget_excludes_the_best_candidate_when_it_costs_too_much(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deeper, longer ensemble with the best validation R^2 is recorded but not chosen once it is over budget;
    the cheaper one in budget is, and the rule says so."""
    monkeypatch.setattr(train_mod, "TREES_GRID", ({"num_leaves": 2, "n_estimators": 5, "learning_rate": 0.1},
                                                  {"num_leaves": 8, "n_estimators": 30, "learning_rate": 0.1}))
    ds, src = training_rows([line(1)], 1000.0)
    free = train(ds, src, TrainOptions(n_folds=3, kinds=("trees",), max_node_visits=0), {"source": "test"})
    sel = free["selection"]
    costs = [c["cost"] for c in sel["candidates"]]  # type: ignore[index]
    assert sel["chosen"]["params"]["num_leaves"] == 8 and costs[0] < costs[1]  # type: ignore[index]
    assert not any(c["over_budget"] for c in sel["candidates"])  # type: ignore[index, union-attr]
    budget = int(costs[1]) - 1
    tight = train(ds, src, TrainOptions(n_folds=3, kinds=("trees",), max_node_visits=budget), {"source": "test"})
    sel = tight["selection"]
    assert sel["chosen"]["params"]["num_leaves"] == 2 and sel["max_node_visits"] == budget  # type: ignore[index]
    assert [c["over_budget"] for c in sel["candidates"]] == [False, True]  # type: ignore[index, union-attr]
    assert [c["cost"] for c in sel["candidates"]] == costs  # type: ignore[index, union-attr]
    assert "1 over budget, not chosen" in sel["rule"]  # type: ignore[index, operator]
    assert tight["hash"] != free["hash"]


def test_budget_no_candidate_fits_and_negative_budget_are_one_line_errors(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    base = ["train", "-o", str(tmp_path / "m.json"), "--seeds", "1", "--minutes", "4", "--folds", "2"]
    assert cli.main([*base, "--max-node-visits", "-1"]) == 2
    assert "--max-node-visits must be >= 0" in capsys.readouterr().err
    assert cli.main([*base, "--kind", "trees", "--max-node-visits", "1"]) == 2
    err = capsys.readouterr().err
    assert "no candidate within --max-node-visits 1" in err and err.count("\n") == 1
    assert not (tmp_path / "m.json").exists()


def _as_model(kind: str, part: dict) -> Model:
    return Model(path="-", kind=kind, hash="0" * 64, horizon_ms=1000.0, entry_bps=1.0, exit_bps=0.0,
                 reversal_bps=3.0, intercept=part.get("intercept", part.get("init", 0.0)),
                 weights=tuple(part.get("weights", ())), trees=tuple(part.get("trees", ())))


def test_exported_linear_form_equals_the_fitted_model() -> None:
    ds, _ = training_rows([line(1)], 1000.0)
    fitted = _fit("linear", {"alpha": 10.0}, ds.X, ds.y, 1)
    f = scorer(_as_model("linear", export_linear(fitted)), "linear")
    got = np.array([f(list(x)) for x in ds.X[:2000]])
    np.testing.assert_allclose(got, fitted.predict(ds.X[:2000]), rtol=1e-9, atol=1e-9)  # the scaling is folded in


@pytest.mark.parametrize("params", TREES_GRID)
def test_exported_tree_forms_give_lightgbm_predictions_bit_for_bit(params: dict) -> None:
    """Both tree forms add the same leaves in LightGBM's order, so they equal its own predict to the last bit: on
    real feature vectors, on random ones, and on ones whose every feature sits exactly on a split threshold (the
    ``<=`` side taken)."""
    ds, _ = training_rows([line(1)], 1000.0)
    fitted = _fit("trees", params, ds.X, ds.y, 1)
    m = _as_model("trees", export_trees(fitted))
    rng = np.random.default_rng(7)
    real = ds.X[rng.choice(len(ds.X), 5000, replace=False)]
    noise = rng.normal(ds.X.mean(axis=0), 3.0 * ds.X.std(axis=0) + 1e-9, size=(5000, ds.X.shape[1]))
    thresholds = [np.array(sorted({thr for t in m.trees for f, thr in zip(t["feature"], t["threshold"], strict=True)
                                   if f == j}) or [0.0]) for j in range(ds.X.shape[1])]
    on_split = np.column_stack([rng.choice(th, 5000) for th in thresholds])
    on_split[:, 0] = np.nextafter(on_split[:, 0], np.inf)  # and just past one
    for X in (real, noise, on_split):
        want = fitted.predict(X)
        for form in ("trees_code", "trees_arrays"):
            f = scorer(m, form)
            got = np.array([f(list(map(float, x))) for x in X])
            assert got.tobytes() == want.tobytes(), (form, int(np.flatnonzero(got != want)[0]))
    assert len(m.trees) == params["n_estimators"]


def test_look_ahead_shifted_target_leaves_no_validation_edge() -> None:
    """Trained on a target 5 s in the future (what the features cannot know), the chosen model's validation R^2
    falls to about 0, against a clearly positive one on the real target."""
    lines = [line(1), line(2)]
    r2 = {}
    for shift in (0.0, 5000.0):
        ds, src = training_rows(lines, 1000.0, shift_ms=shift)
        doc = train(ds, src, TrainOptions(n_folds=3, kinds=("linear",)), {"source": "test"})
        r2[shift] = max(c["mean_r2"] for c in doc["selection"]["candidates"])  # type: ignore[index, union-attr]
    assert r2[0.0] > 0.05
    assert r2[5000.0] < 0.01
