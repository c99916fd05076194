"""Training: walk-forward model selection scored net of what trading costs, then the model file (plain numbers +
metadata) -- or a refusal to trade.

Candidates: a ridge regression on standardised features (scikit-learn) over an alpha grid, and gradient-boosted
trees (LightGBM, single-threaded and deterministic) over a small grid of sizes. Each candidate is fitted on every
fold's training rows and scored on its validation rows only (caerus.research.models.walkforward: by time, purged by
the target horizon). Nothing outside the training range is read.

**Scored net of costs.** A round trip on Hyperliquid pays the spread on the way in and out and a taker fee on both legs:
``cost = entry_half_spread + exit_half_spread + 2 x fee`` (bps; the half spreads are the venue's at the target window's
ends, caerus.research.training_data; the fee by tier from caerus.research.backtest.fills, 4.5 bps at Hyperliquid's base
tier, or ``fee_bps``). Each candidate's out-of-fold signal (its prediction net of the half spread the strategy saw, as
the live model signal computes it) is walked in time through each validation fold with the strategy's cooldown at every
threshold of ``ENTRY_GRID``, each entry earning ``side * y - cost``. A candidate's score is its
best pooled validation total over thresholds with at least ``min_entries`` entries; the candidate and threshold with
the largest score (within the decision cost budget) are chosen. R^2 and correlation are recorded, not used to choose.

**It can decline.** When no candidate has a positive pooled validation total net of costs (over ``min_entries``
entries or more), the document says ``tradeable: false`` with the reason, and ``caerus train`` exits non-zero: the
strategy refuses such a file (caerus.strategy.model_signal). So a market with no edge the costs leave standing (a
follower that ignores the leader, a target shifted past what the features can know) yields no tradeable model.

The naive rule at matched turnover (``decision.naive_matched``): the naive rule's threshold whose validation entries
come closest to the chosen model's, so an out-of-sample comparison of the two compares prediction, not how much
each trades; chosen on validation rows, like the model's.

Decision cost, machine-independent: a trees candidate's mean over its fold's training rows of the summed root-to-leaf
path lengths (node visits per decision; LightGBM's leaf indices, depths from the exported arrays), averaged over the
folds; a linear one's nonzero weights. ``max_node_visits`` (0: none) is the budget: a candidate over it is recorded
with its cost and score, marked ``over_budget``, and not chosen. Its default follows from the measured per-visit
cost and the hot path's 2 us p50 goal (docs/research.md, Decision cost). Same data and seed -> the same file, byte
for byte.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

import numpy as np

from caerus.research.backtest.fills import TAKER_BPS
from caerus.research.models.walkforward import folds
from caerus.research.training_data import Dataset
from caerus.strategy.feature_vector import N_FEATURES, schema
from caerus.strategy.model_signal import FORMAT, content_hash
from caerus.wire import Venue

LINEAR_GRID = ({"alpha": 1.0}, {"alpha": 100.0}, {"alpha": 10000.0})
TREES_GRID = ({"num_leaves": 4, "n_estimators": 20, "learning_rate": 0.1},
              {"num_leaves": 4, "n_estimators": 40, "learning_rate": 0.1},
              {"num_leaves": 8, "n_estimators": 20, "learning_rate": 0.2},
              {"num_leaves": 16, "n_estimators": 10, "learning_rate": 0.3},
              {"num_leaves": 8, "n_estimators": 40, "learning_rate": 0.1})
# The decision's budget in node visits (trees) or nonzero weights (linear), machine-independent; see
# docs/research.md "Decision cost" for how it follows from the measured per-visit cost and the 2 us p50 goal.
MAX_NODE_VISITS = 64

#: entry thresholds walked on validation (bps of predicted move net of the half spread seen): up to several times a
#: round trip's ~10 bps of fees and spread, since a threshold below the costs can only lose
ENTRY_GRID = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0, 40.0)
#: fewest validation entries a threshold needs to be scored (fewer: a total that a handful of trades decided)
MIN_ENTRIES = 20
_HL = int(Venue.HYPERLIQUID)


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
    fee_tier: int = 0  # Hyperliquid's taker tier (caerus.research.backtest.fills.TAKER_BPS)
    fee_bps: float | None = None  # one taker fee per leg instead of the tier's
    min_entries: int = MIN_ENTRIES

    def fee_per_leg_bps(self) -> float:
        return float(self.fee_bps) if self.fee_bps is not None else TAKER_BPS[_HL][self.fee_tier]


def round_trip_cost(ds: Dataset, fee_per_leg_bps: float) -> np.ndarray:
    """Per row, what a round trip on Hyperliquid costs in bps: the spread crossed in and out, and both legs' fees."""
    return ds.entry_half_spread + ds.exit_half_spread + 2.0 * fee_per_leg_bps


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


def _edge(signal: np.ndarray, y: np.ndarray, cost: np.ndarray, k: int) -> float | None:
    """Mean edge net of costs (bps) of the k rows of largest |signal|, trading in its direction."""
    if k <= 0:
        return None
    top = np.argsort(-np.abs(signal), kind="stable")[:k]
    return float((np.sign(signal[top]) * y[top] - cost[top]).mean())


def walk_entries(t: np.ndarray, signal: np.ndarray, y: np.ndarray, cost: np.ndarray, threshold: float,
                 cooldown_ns: int) -> tuple[int, float]:
    """(entries, total edge net of ``cost`` in bps) of entering where |signal| >= threshold, at most one per
    cooldown; each entry earns ``side * y - cost``."""
    idx = np.flatnonzero(np.abs(signal) >= threshold)
    last = -(1 << 62)
    n = 0
    total = 0.0
    for i in idx.tolist():
        if t[i] - last >= cooldown_ns:
            last = t[i]
            n += 1
            total += (1.0 if signal[i] > 0 else -1.0) * y[i] - cost[i]
    return n, total


def threshold_grid(t: np.ndarray, signal: np.ndarray, y: np.ndarray, cost: np.ndarray, vals: list[np.ndarray],
                   cooldown_ns: int, grid: tuple[float, ...] = ENTRY_GRID) -> list[dict[str, Any]]:
    """Per threshold: entries and total net edge pooled over the validation folds ``vals`` (row indices; ``signal``
    holds one value per row of the concatenated folds, in ``vals`` order)."""
    parts = np.split(signal, np.cumsum([len(v) for v in vals])[:-1]) if vals else []
    out = []
    for thr in grid:
        walks = [walk_entries(t[v], o, y[v], cost[v], thr, cooldown_ns) for v, o in zip(vals, parts, strict=True)]
        out.append({"entry_bps": thr, "entries": sum(w[0] for w in walks),
                    "total_bps": float(sum(w[1] for w in walks))})
    return out


def best_threshold(grid: list[dict[str, Any]], min_entries: int) -> dict[str, Any] | None:
    """The grid point with the largest total among those with at least ``min_entries`` entries (None: none has)."""
    scored = [g for g in grid if g["entries"] >= min_entries]
    return max(scored, key=lambda g: g["total_bps"]) if scored else None


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
    """Select, refit and export: the model document (with its ``hash`` and ``tradeable``). ``source`` labels each
    row's timeline (a seed, a session): folds split each on its own span. ``training`` describes the data."""
    if len(ds) < 100 * (opts.n_folds + 1):
        raise ValueError(f"{len(ds)} training rows are too few for {opts.n_folds} folds "
                         f"(need {100 * (opts.n_folds + 1)})")
    h_ns = int(ds.horizon_ms * 1e6)
    fs = folds(ds.t, opts.n_folds, h_ns, source=source)
    fee = opts.fee_per_leg_bps()
    cost = round_trip_cost(ds, fee)
    cool = int(opts.cooldown_ms * 1e6)
    vals = [f.val for f in fs]
    grids = {"linear": LINEAR_GRID, "trees": TREES_GRID}
    candidates: list[dict[str, Any]] = []
    naive_folds: list[dict[str, Any]] = []
    for f in fs:
        yv, cv, nv = ds.y[f.val], cost[f.val], ds.naive[f.val]
        k = int((np.abs(nv) >= opts.naive_entry_bps).sum())
        naive_folds.append({"fold": f.k, "n_val": len(f.val), "k_trades": k, "corr": _corr(nv, yv),
                            "edge_bps": _edge(nv, yv, cv, k)})
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
                                 "edge_bps": _edge(_net(pred, hv), yv, cost[f.val], k)})
                oof.append(_net(pred, hv))
                costs.append(decision_cost(kind, m, ds.X[f.train]))
            grid = threshold_grid(ds.t, np.concatenate(oof), ds.y, cost, vals, cool)
            best = best_threshold(grid, opts.min_entries)
            c = round(float(np.mean(costs)), 3)
            candidates.append({"kind": kind, "params": params, "folds": per_fold,
                               "mean_r2": float(np.mean([p["r2"] for p in per_fold])), "validation_grid": grid,
                               "best": best, "score_bps": best["total_bps"] if best else None,
                               "cost": c, "cost_unit": "node visits" if kind == "trees" else "nonzero weights",
                               "over_budget": 0 < opts.max_node_visits < c})
    within = [c for c in candidates if not c["over_budget"]]
    if not within:
        raise ValueError(f"no candidate within --max-node-visits {opts.max_node_visits} (cheapest costs "
                         f"{min(c['cost'] for c in candidates):g})")
    scored = [c for c in within if c["best"] is not None]
    chosen = max(scored, key=lambda c: c["score_bps"]) if scored else max(within, key=lambda c: c["mean_r2"])
    pick = chosen["best"]
    tradeable = pick is not None and pick["total_bps"] > 0.0
    if tradeable:
        decline = None
    elif pick is None:
        decline = (f"no candidate entered {opts.min_entries} times or more on validation at any threshold up to "
                   f"{ENTRY_GRID[-1]:g} bps")
    else:
        decline = (f"no candidate has a positive validation edge net of costs: the best, {chosen['kind']} "
                   f"{chosen['params']} at {pick['entry_bps']:g} bps, totals {pick['total_bps']:+.1f} bps over "
                   f"{pick['entries']} entries ({pick['total_bps'] / pick['entries']:+.2f} bps each after "
                   f"{2 * fee:g} bps of fees and the spread)")
    entry = pick["entry_bps"] if pick is not None else ENTRY_GRID[-1]
    entries = pick["entries"] if pick is not None else 0
    naive_grid = threshold_grid(ds.t, np.concatenate([ds.naive[v] for v in vals]), ds.y, cost, vals, cool)
    naive_at = next(g for g in naive_grid if g["entry_bps"] == opts.naive_entry_bps) \
        if opts.naive_entry_bps in ENTRY_GRID else threshold_grid(
            ds.t, np.concatenate([ds.naive[v] for v in vals]), ds.y, cost, vals, cool, (opts.naive_entry_bps,))[0]
    # the naive threshold trading about as often as the model on validation (ties: the higher threshold)
    matched = min(naive_grid, key=lambda g: (abs(g["entries"] - entries), -g["entry_bps"]))
    rule = (f"largest pooled validation total net of costs (taker fee {fee:g} bps a leg, the spread crossed in and "
            f"out), walking each fold with the cooldown, over {opts.min_entries}+ entries")
    if opts.max_node_visits > 0:
        rule += (f"; among candidates costing <= {opts.max_node_visits} node visits (trees: mean summed path length "
                 f"over the fold's training rows; linear: nonzero weights); "
                 f"{len(candidates) - len(within)} over budget, not chosen")
    final = _fit(chosen["kind"], chosen["params"], ds.X, ds.y, opts.seed)
    doc: dict[str, object] = {
        "format": FORMAT,
        "kind": chosen["kind"],
        "tradeable": tradeable,
        "decline": decline,
        "schema": schema(ds.horizon_ms),
        chosen["kind"]: export_linear(final) if chosen["kind"] == "linear" else export_trees(final),
        "decision": {"entry_bps": entry, "exit_bps": opts.exit_bps, "reversal_bps": opts.reversal_bps,
                     "entry_rule": "largest pooled validation total net of costs walking each fold with the cooldown",
                     "costs": {"taker_fee_bps_per_leg": fee, "fee_source": "fixed" if opts.fee_bps is not None
                               else f"hyperliquid tier {opts.fee_tier}", "spread": "crossed in and out"},
                     "validation": {"entries": entries, "total_bps": pick["total_bps"] if pick else None},
                     "naive_validation": {"entry_bps": opts.naive_entry_bps, "entries": naive_at["entries"],
                                          "total_bps": naive_at["total_bps"]},
                     "naive_matched": matched},
        "training": {**training, "rows": len(ds), "features": N_FEATURES, "seed": opts.seed,
                     "folds": opts.n_folds, "purge_ns": h_ns, "embargo_ns": h_ns},
        "selection": {"rule": rule, "max_node_visits": opts.max_node_visits, "min_entries": opts.min_entries,
                      "chosen": {"kind": chosen["kind"], "params": chosen["params"], "cost": chosen["cost"]},
                      "naive": naive_folds,
                      "candidates": candidates},
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
