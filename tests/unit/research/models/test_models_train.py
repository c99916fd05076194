"""Training: folds by time with a purge, a reproducible model file whose exported forms equal the fitted model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from caerus import cli
from caerus.research.models.data import training_rows
from caerus.research.models.train import TrainOptions, _fit, export_linear, export_trees, train
from caerus.research.models.walkforward import folds
from caerus.strategy.model_signal import FORMS, Model, load_model, scorer
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


@pytest.mark.parametrize("kind", ["linear", "trees"])
def test_exported_forms_equal_the_fitted_model(kind: str) -> None:
    ds, _ = training_rows([line(1)], 1000.0)
    fitted = _fit(kind, {"alpha": 10.0} if kind == "linear" else
                  {"num_leaves": 8, "n_estimators": 30, "learning_rate": 0.1}, ds.X, ds.y, 1)
    part = export_linear(fitted) if kind == "linear" else export_trees(fitted)
    m = Model(path="-", kind=kind, hash="0" * 64, horizon_ms=1000.0, entry_bps=1.0, exit_bps=0.0,
              reversal_bps=3.0, intercept=part.get("intercept", part.get("init", 0.0)),  # type: ignore[arg-type]
              weights=tuple(part.get("weights", ())), trees=tuple(part.get("trees", ())))  # type: ignore[arg-type]
    want = fitted.predict(ds.X[:2000])
    for form in FORMS:
        if form.startswith(kind[:5]) or (kind == "linear" and form == "linear"):
            f = scorer(m, form)
            got = np.array([f(list(x)) for x in ds.X[:2000]])
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


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
