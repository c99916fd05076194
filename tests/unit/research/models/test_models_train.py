"""Training: folds by time with a purge, a reproducible model file whose exported forms equal the fitted model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from caerus import cli
from caerus.research.models.data import training_rows
from caerus.research.models.train import TREES_GRID, TrainOptions, _fit, export_linear, export_trees, train
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
        assert cli.main(["train", "-o", str(p), "--seeds", "1", "--minutes", "4", "--folds", "3"]) == 0
    assert out[0].read_bytes() == out[1].read_bytes()
    m = load_model(out[0])
    doc = json.loads(out[0].read_text())
    assert m.hash == doc["hash"] and len(doc["selection"]["candidates"][0]["folds"]) == 3
    assert doc["training"]["ranges"][0]["t_train_end"] < doc["training"]["ranges"][0]["t_last"]
    assert set(doc["libraries"]) >= {"scikit-learn", "lightgbm", "numpy"}


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
