"""Training: walk-forward model selection against the naive rule, then the model file (plain numbers + metadata).

Candidates: a ridge regression on standardised features (scikit-learn) over an alpha grid, and gradient-boosted
trees (LightGBM, single-threaded and deterministic) over a small grid of sizes; the naive rule (basis - EWMA) is
the baseline. Each candidate is fitted on every fold's training rows and scored on its validation rows only
(caerus.research.models.walkforward: by time, purged by the target horizon); among the candidates within the
decision cost budget, the one with the best mean validation R^2 is refitted on all the training rows and exported.
Nothing outside the training range is read.

Decision cost, machine-independent: a trees candidate's mean over its fold's training rows of the summed root-to-leaf
path lengths (node visits per decision; LightGBM's leaf indices, depths from the exported arrays), averaged over the
folds; a linear one's nonzero weights. ``max_node_visits`` (0: none) is the budget: a candidate over it is recorded
with its cost and R^2, marked ``over_budget``, and not chosen. Its default follows from the measured per-visit cost
and the hot path's 2 us p50 goal (docs/research.md, Decision cost).

Per fold and candidate: R^2 and correlation against the target, and the trading edge at the naive rule's count:
with K the validation rows where ``|naive| >= naive_entry_bps``, the mean of ``side * y - half_spread`` (bps) over
the model's K rows of largest ``|prediction net of the half spread|`` and over the naive rule's K rows.

The entry threshold written to the file is chosen on the validation folds only: each fold's rows are walked in time
with the strategy's cooldown, entering where ``|prediction net of the half spread| >= threshold`` and earning
``side * y - half_spread``; the threshold of ``ENTRY_GRID`` with the largest pooled total is kept (the naive rule's
total at its own entry_bps is recorded beside it). Exits at a predicted remaining move of 0 bp and a reversal of
the naive rule's ``reversal_bps``. Same data and seed -> the same file, byte for byte.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

import numpy as np

from caerus.research.features import Dataset
from caerus.research.models.walkforward import folds
from caerus.strategy.features import N_FEATURES, schema
from caerus.strategy.model_signal import FORMAT, content_hash

LINEAR_GRID = ({"alpha": 1.0}, {"alpha": 100.0}, {"alpha": 10000.0})
TREES_GRID = ({"num_leaves": 4, "n_estimators": 20, "learning_rate": 0.1},
              {"num_leaves": 4, "n_estimators": 40, "learning_rate": 0.1},
              {"num_leaves": 8, "n_estimators": 20, "learning_rate": 0.2},
              {"num_leaves": 16, "n_estimators": 10, "learning_rate": 0.3},
              {"num_leaves": 8, "n_estimators": 40, "learning_rate": 0.1})
# The decision's budget in node visits (trees) or nonzero weights (linear), machine-independent; see
# docs/research.md "Decision cost" for how it follows from the measured per-visit cost and the 2 us p50 goal.
MAX_NODE_VISITS = 64

ENTRY_GRID = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0)


@dataclass(frozen=True)
class TrainOptions:
    n_folds: int = 4
    seed: int = 1
    kinds: tuple[str, ...] = ("linear", "trees")
    naive_entry_bps: float = 5.0
    reversal_bps: float = 3.0
    exit_bps: float = 0.0
    cooldown_ms: float = 1000.0
    max_node_visits: int = MAX_NODE_VISITS  # 0: no budget


def leaf_depths(tree: dict[str, list[Any]]) -> list[int]:
    """Node visits to reach each leaf of one exported tree (a root-only tree: 0)."""
    depth = [0] * len(tree["leaf"])
    stack = [(0, 1)] if tree["feature"] else []
    while stack:
        i, d = stack.pop()
        for c in (tree["left"][i], tree["right"][i]):
            if c < 0:
                depth[~c] = d
            else:
                stack.append((c, d + 1))
    return depth


def decision_cost(kind: str, model: object, X: np.ndarray) -> float:
    """Deterministic cost of one decision: trees, the mean over rows X of the summed path lengths (node visits);
    linear, the nonzero weights."""
    if kind == "linear":
        weights: list[float] = export_linear(model)["weights"]  # type: ignore[assignment]
        return float(np.count_nonzero(weights))
    trees: list[dict[str, list[Any]]] = export_trees(model)["trees"]  # type: ignore[assignment]
    leaves = np.asarray(model.booster_.predict(X, pred_leaf=True), dtype=np.int64)  # type: ignore[attr-defined]
    leaves = leaves.reshape(len(X), len(trees))
    total = 0
    for j, tree in enumerate(trees):
        total += int(np.asarray(leaf_depths(tree), dtype=np.int64)[leaves[:, j]].sum())
    return total / len(X)


def _fit(kind: str, params: dict, X: np.ndarray, y: np.ndarray, seed: int) -> object:
    if kind == "linear":
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), Ridge(alpha=params["alpha"])).fit(X, y)
    import lightgbm

    return lightgbm.LGBMRegressor(
        num_leaves=params["num_leaves"], n_estimators=params["n_estimators"], learning_rate=params["learning_rate"],
        min_child_samples=200, subsample=1.0, colsample_bytree=1.0, reg_lambda=1.0, random_state=seed,
        deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1).fit(X, y)


def _net(pred: np.ndarray, half: np.ndarray) -> np.ndarray:
    return np.where(pred > half, pred - half, np.where(pred < -half, pred + half, 0.0))


def _edge(signal: np.ndarray, y: np.ndarray, half: np.ndarray, k: int) -> float | None:
    """Mean net edge (bps) of the k rows of largest |signal|, trading in its direction."""
    if k <= 0:
        return None
    top = np.argsort(-np.abs(signal), kind="stable")[:k]
    return float((np.sign(signal[top]) * y[top] - half[top]).mean())


def walk_entries(t: np.ndarray, signal: np.ndarray, y: np.ndarray, half: np.ndarray, threshold: float,
                 cooldown_ns: int) -> tuple[int, float]:
    """(entries, total net edge in bps) of entering where |signal| >= threshold, at most one per cooldown."""
    idx = np.flatnonzero(np.abs(signal) >= threshold)
    last = -(1 << 62)
    n = 0
    total = 0.0
    for i in idx.tolist():
        if t[i] - last >= cooldown_ns:
            last = t[i]
            n += 1
            total += (1.0 if signal[i] > 0 else -1.0) * y[i] - half[i]
    return n, total


def _r2(pred: np.ndarray, y: np.ndarray) -> float:
    var = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / var if var > 0 else 0.0


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1]) if len(a) > 1 and a.std() > 0 and b.std() > 0 else 0.0


def export_linear(model: object) -> dict[str, object]:
    """A StandardScaler + Ridge pipeline as raw-feature weights and an intercept (the scaling folded in)."""
    scaler, ridge = model.steps[0][1], model.steps[1][1]  # type: ignore[attr-defined]
    w = ridge.coef_ / scaler.scale_
    b = float(ridge.intercept_ - (w * scaler.mean_).sum())
    return {"intercept": b, "weights": [float(v) for v in w]}


def export_trees(model: object) -> dict[str, object]:
    """LightGBM trees as flat arrays per tree: node i goes left when ``x[feature[i]] <= threshold[i]``; a child
    c >= 0 is a node, c < 0 the leaf ~c (LightGBM's own numbering)."""
    dump = model.booster_.dump_model()  # type: ignore[attr-defined]
    trees: list[dict[str, list[Any]]] = []
    for info in dump["tree_info"]:
        root = info["tree_structure"]
        n_leaves = info["num_leaves"]
        feat, left, right = ([0] * (n_leaves - 1) for _ in range(3))
        thr = [0.0] * (n_leaves - 1)
        leaf = [0.0] * n_leaves
        if "leaf_value" in root:
            trees.append({"feature": [], "threshold": [], "left": [], "right": [],
                          "leaf": [float(root["leaf_value"])]})
            continue
        stack = [root]
        while stack:
            nd = stack.pop()
            i = nd["split_index"]
            if nd["decision_type"] != "<=":
                raise ValueError(f"LightGBM split type {nd['decision_type']!r} is not exported")
            feat[i] = int(nd["split_feature"])
            thr[i] = float(nd["threshold"])
            for side, arr in (("left_child", left), ("right_child", right)):
                child = nd[side]
                if "leaf_index" in child:
                    arr[i] = ~int(child["leaf_index"])
                    leaf[child["leaf_index"]] = float(child["leaf_value"])
                else:
                    arr[i] = int(child["split_index"])
                    stack.append(child)
        trees.append({"feature": feat, "threshold": thr, "left": left, "right": right, "leaf": leaf})
    return {"init": 0.0, "trees": trees}


def _versions() -> dict[str, str]:
    import lightgbm
    import sklearn

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "lightgbm": lightgbm.__version__}


def train(ds: Dataset, source: np.ndarray, opts: TrainOptions, training: dict[str, object]) -> dict[str, object]:
    """Select, refit and export: the model document (with its ``hash``). ``source`` labels each row's timeline
    (a seed, a session): folds split each on its own span. ``training`` describes the data (range, source)."""
    if len(ds) < 100 * (opts.n_folds + 1):
        raise ValueError(f"{len(ds)} training rows are too few for {opts.n_folds} folds "
                         f"(need {100 * (opts.n_folds + 1)})")
    h_ns = int(ds.horizon_ms * 1e6)
    fs = folds(ds.t, opts.n_folds, h_ns, source=source)
    grids = {"linear": LINEAR_GRID, "trees": TREES_GRID}
    candidates: list[dict[str, Any]] = []
    naive_folds: list[dict[str, Any]] = []
    for f in fs:
        yv, hv, nv = ds.y[f.val], ds.half_spread[f.val], ds.naive[f.val]
        k = int((np.abs(nv) >= opts.naive_entry_bps).sum())
        naive_folds.append({"fold": f.k, "n_val": len(f.val), "k_trades": k, "corr": _corr(nv, yv),
                            "edge_bps": _edge(nv, yv, hv, k)})
    for kind in opts.kinds:
        for params in grids[kind]:
            per_fold = []
            oof = []
            costs = []
            for f in fs:
                m = _fit(kind, params, ds.X[f.train], ds.y[f.train], opts.seed)
                pred = np.asarray(m.predict(ds.X[f.val]), dtype=np.float64)  # type: ignore[attr-defined]
                yv, hv = ds.y[f.val], ds.half_spread[f.val]
                k = int((np.abs(ds.naive[f.val]) >= opts.naive_entry_bps).sum())
                per_fold.append({"fold": f.k, "n_train": len(f.train), "n_val": len(f.val), "purged": f.purged,
                                 "r2": _r2(pred, yv), "corr": _corr(pred, yv), "k_trades": k,
                                 "edge_bps": _edge(_net(pred, hv), yv, hv, k)})
                oof.append(_net(pred, hv))
                costs.append(decision_cost(kind, m, ds.X[f.train]))
            cost = round(float(np.mean(costs)), 3)
            candidates.append({"kind": kind, "params": params, "folds": per_fold,
                               "mean_r2": float(np.mean([p["r2"] for p in per_fold])), "_oof": np.concatenate(oof),
                               "cost": cost, "cost_unit": "node visits" if kind == "trees" else "nonzero weights",
                               "over_budget": 0 < opts.max_node_visits < cost})
    within = [c for c in candidates if not c["over_budget"]]
    if not within:
        raise ValueError(f"no candidate within --max-node-visits {opts.max_node_visits} (cheapest costs "
                         f"{min(c['cost'] for c in candidates):g})")
    best = max(within, key=lambda c: c["mean_r2"])
    rule = "best mean validation R^2"
    if opts.max_node_visits > 0:
        rule += (f" among candidates costing <= {opts.max_node_visits} node visits (trees: mean summed path length "
                 f"over the fold's training rows; linear: nonzero weights); "
                 f"{len(candidates) - len(within)} over budget, not chosen")
    # the entry threshold, on validation rows only (each fold's rows walked in time with the cooldown)
    cool = int(opts.cooldown_ms * 1e6)
    vals = [f.val for f in fs]
    oof_parts = np.split(best["_oof"], np.cumsum([len(v) for v in vals])[:-1])
    grid: list[dict[str, Any]] = []
    for thr in ENTRY_GRID:
        walks = [walk_entries(ds.t[v], o, ds.y[v], ds.half_spread[v], thr, cool)
                 for v, o in zip(vals, oof_parts, strict=True)]
        grid.append({"entry_bps": thr, "entries": sum(w[0] for w in walks), "total_bps": sum(w[1] for w in walks)})
    naive_walks = [walk_entries(ds.t[v], ds.naive[v], ds.y[v], ds.half_spread[v], opts.naive_entry_bps, cool)
                   for v in vals]
    entry = max(grid, key=lambda g: g["total_bps"])["entry_bps"]
    final = _fit(best["kind"], best["params"], ds.X, ds.y, opts.seed)
    doc: dict[str, object] = {
        "format": FORMAT,
        "kind": best["kind"],
        "schema": schema(ds.horizon_ms),
        best["kind"]: export_linear(final) if best["kind"] == "linear" else export_trees(final),
        "decision": {"entry_bps": entry, "exit_bps": opts.exit_bps, "reversal_bps": opts.reversal_bps,
                     "entry_rule": "largest pooled validation total net edge walking each fold with the cooldown",
                     "validation_grid": grid,
                     "naive_validation": {"entry_bps": opts.naive_entry_bps,
                                          "entries": sum(w[0] for w in naive_walks),
                                          "total_bps": sum(w[1] for w in naive_walks)}},
        "training": {**training, "rows": len(ds), "features": N_FEATURES, "seed": opts.seed,
                     "folds": opts.n_folds, "purge_ns": h_ns, "embargo_ns": h_ns},
        "selection": {"rule": rule, "max_node_visits": opts.max_node_visits,
                      "chosen": {"kind": best["kind"], "params": best["params"], "cost": best["cost"]},
                      "naive": naive_folds,
                      "candidates": [{k: v for k, v in c.items() if k != "_oof"} for c in candidates]},
        "libraries": _versions(),
    }
    doc = _clean(doc)  # type: ignore[assignment]
    doc["hash"] = content_hash(doc)
    return doc


def _clean(o: object) -> object:
    """JSON-safe: numpy scalars to Python, NaN to None (the hash is over strict JSON)."""
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (np.floating, float)):
        v = float(o)
        return v if np.isfinite(v) else None
    if isinstance(o, np.integer):
        return int(o)
    return o
