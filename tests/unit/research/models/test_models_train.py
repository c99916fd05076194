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
from caerus.research.training_data import NAMES, Dataset
from caerus.strategy.model_signal import Model, ModelError, load_model, scorer
from tests.unit.research.models.conftest import line

# long computations (training, calibration round trips, whole pipelines) over module fixtures: the fast tier
# leaves the whole module out
pytestmark = pytest.mark.slow


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
    """A deeper, longer ensemble with the best validation score net of costs is recorded but not chosen once it is
    over budget; the cheaper one in budget is, and the rule says so."""
    monkeypatch.setattr(train_mod, "TREES_GRID", ({"num_leaves": 2, "n_estimators": 2, "learning_rate": 0.1},
                                                  {"num_leaves": 8, "n_estimators": 30, "learning_rate": 0.1}))
    ds, src = training_rows([line(1, market="known-edge")], 1000.0)
    free = train(ds, src, TrainOptions(n_folds=3, kinds=("trees",), max_node_visits=0), {"source": "test"})
    sel = free["selection"]
    costs = [c["cost"] for c in sel["candidates"]]  # type: ignore[index]
    scores = [c["score_bps"] for c in sel["candidates"]]  # type: ignore[index]
    assert sel["chosen"]["params"]["num_leaves"] == 8 and costs[0] < costs[1]  # type: ignore[index]
    assert scores[1] > scores[0]  # chosen by its validation total net of costs
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
    # one 6-minute validation split per line: the real target's R^2 moves with the path (default market before its
    # quote arrivals were refit, issue 46: 0.095 on seeds 1-2, 0.048 on seeds 3-4; since: 0.012 and 0.108), so the
    # check is that it is positive and clearly above the shifted target's, which stays at or below 0
    assert r2[0.0] > 0.0
    assert r2[0.0] > r2[5000.0] + 0.03
    assert r2[5000.0] < 0.01


def _synthetic(edge_bps: float, n: int = 6000, seed: int = 3) -> tuple[Dataset, np.ndarray]:
    """Rows 50 ms apart whose first feature announces the next move exactly: y = edge x sign(x0); the venue's half
    spread is 0.5 bps at both ends, so a round trip costs 1 bps of spread and 2 x 4.5 bps of fees."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(NAMES)))
    y = edge_bps * np.sign(X[:, 0])
    half = np.full(n, 0.5)
    t = np.arange(n, dtype=np.int64) * 50_000_000
    return Dataset(X, y, t, np.zeros(n, dtype=np.int64), half, X[:, 3], half, half, 1000.0, "synthetic"), \
        np.zeros(n, dtype=np.int64)


@pytest.mark.parametrize(("edge", "tradeable"), [(8.0, False), (10.0, False), (20.0, True)])
def test_training_trades_only_an_edge_that_clears_fees_and_spread(edge: float, tradeable: bool) -> None:
    """A perfectly predicted 8 or 10 bps move is no edge against 10 bps of round-trip costs (it would be, gross:
    the old walk scored it positive); 20 bps is."""
    ds, src = _synthetic(edge)
    doc = train(ds, src, TrainOptions(n_folds=3, kinds=("linear",)), {"source": "test"})
    assert doc["tradeable"] is tradeable, doc["decline"]
    val = doc["decision"]["validation"]  # type: ignore[index]
    assert doc["decision"]["costs"]["taker_fee_bps_per_leg"] == 4.5  # type: ignore[index]
    if tradeable:
        assert doc["decline"] is None and val["total_bps"] == pytest.approx(val["entries"] * (edge - 10.0))
    else:
        assert "no candidate has a positive validation edge net of costs" in str(doc["decline"])
        assert val["total_bps"] <= 0.0
    cheap = train(ds, src, TrainOptions(n_folds=3, kinds=("linear",), fee_bps=0.0), {"source": "test"})
    assert cheap["tradeable"] is (edge > 1.0)  # without fees only the spread is left to clear


def test_a_declined_model_is_written_refused_by_the_strategy_and_exits_non_zero(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's placebo (the no-lead preset): Hyperliquid ignores Binance (no catch-up, no fade, no arbitrage: own
    moves only). Train exits 3 in one line, the file says it is not tradeable, and the strategy's loader refuses it."""
    out = tmp_path / "m.json"
    rc = cli.main(["train", "-o", str(out), "--market", "no-lead", "--seeds", "1,2", "--minutes", "4",
                   "--folds", "2"])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "no tradeable model" in err
    doc = json.loads(out.read_text())
    assert doc["tradeable"] is False and doc["decline"]
    with pytest.raises(ModelError, match="is not tradeable"):
        load_model(out)


def test_the_naive_rule_is_matched_to_the_models_validation_turnover() -> None:
    ds, src = training_rows([line(1, market="known-edge"), line(2, market="known-edge")], 1000.0)
    doc = train(ds, src, TrainOptions(n_folds=3, kinds=("linear",)), {"source": "test"})
    dec = doc["decision"]
    assert doc["tradeable"]
    grid = doc["selection"]["candidates"][0]["validation_grid"]  # type: ignore[index]
    m = dec["naive_matched"]  # type: ignore[index]
    assert m["entry_bps"] in train_mod.ENTRY_GRID and len(grid) == len(train_mod.ENTRY_GRID)
    gap = abs(m["entries"] - dec["validation"]["entries"])  # type: ignore[index]
    assert gap <= 0.5 * dec["validation"]["entries"]  # type: ignore[index]
