"""The trained model on the hot path: its file (read, checked, hashed), its evaluation forms and the decision
object that trades on it (``StrategyConfig.signal = "model"``).

The model file (JSON, written by ``caerus train``, caerus.research.models) holds plain numbers: a linear model's
weights and intercept, or gradient-boosted trees as node arrays. Nothing here imports scikit-learn or LightGBM.
:func:`load_model` checks the file's content hash, refuses a model that training declined (``tradeable: false``:
no candidate had a validation edge net of fees and spread) with its reason, and refuses a model whose feature schema
is not this code's (caerus.strategy.feature_vector) with one line naming the difference.

A model file is input, not code: the loader bounds what it costs before anything is generated from it. Only a
regular file is read, up to MAX_MODEL_BYTES; a config may pin the content hash it expects
(``StrategyConfig.model_sha256``, compared with the hash computed here, never with the file's own ``hash`` field,
which any editor recomputes); every tree must be a tree -- each node and leaf reached exactly once from the root, so
no shared subtree (a DAG would double the generated code at each level), no cycle (the arrays walk would never end)
and nothing unreachable -- within MAX_TREES, MAX_TREE_NODES and MAX_TREE_DEPTH, checked iteratively; and the code
form is refused past MAX_CODE_DEPTH levels or MAX_CODE_BYTES of generated source. Each refusal is one line naming
the limit, or the tree and the node (docs/security.md, Model files).

Evaluation forms (:func:`scorer`), measured by benchmarks/decision_cost.py:

* ``linear``: the dot product generated as one Python expression over the features unpacked to locals (no loop);
* ``trees_code``: every tree compiled to one nested conditional expression, the trees summed in one expression
  (in LightGBM's order) in a generated function;
* ``trees_arrays``: the trees walked over flat per-tree lists (feature, threshold, left, right, leaf values).

Generated code is built only from validated numbers (floats printed with ``repr``, integer indices), never from
text the file carries.

:class:`ModelArb` is the latency-arb decision object with the model's predicted Hyperliquid move in place of the
naive basis signal: the incremental features (one :class:`~caerus.strategy.feature_vector.FeatureState`) are updated on
every book; the score is the predicted move over the model's horizon (bps), and ``signal`` is that move net of
Hyperliquid's half spread (the cost of crossing). Entries on Binance books when ``|signal| >= entry_bps``; exits
when the predicted move in the position's direction falls to ``exit_bps`` or reverses past ``reversal_bps``, or at
``max_hold_ms`` -- thresholds from the model file (chosen on validation folds). Guards, sizing, order table and
in-flight rule are LatencyArb's (one definition: ``LatencyArb._propose``). ``use_model = False`` makes the same
object decide with the naive rule (its signal is a feature): the A/B windows of one session switch it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caerus.config import load_config
from caerus.instruments import Instrument
from caerus.records.book import BOOK_VENUE
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import F_BASIS_DEV, N_FEATURES, FeatureState, schema_difference
from caerus.strategy.latency_arb import G_COOLDOWN, G_POSITION, LatencyArb, _exit_qty
from caerus.wire import OrderReason, Side, Venue

#: 2: the file says whether it is ``tradeable`` (training scored it net of costs and may decline); 1 did not
FORMAT = 2
KINDS = ("linear", "trees")
FORMS = ("linear", "trees_code", "trees_arrays")
#: the form used for each kind, picked by benchmarks/decision_cost.py (docs/research.md, Trained model)
DEFAULT_FORM = {"linear": "linear", "trees": "trees_code"}

_BINANCE = int(Venue.BINANCE)
_BUY = int(Side.BUY)
_SELL = int(Side.SELL)
_ENTRY = int(OrderReason.ENTRY)
_EXIT_THRESHOLD = int(OrderReason.EXIT_THRESHOLD)
_EXIT_REVERSAL = int(OrderReason.EXIT_REVERSAL)
_EXIT_MAX_HOLD = int(OrderReason.EXIT_MAX_HOLD)
_FLATTEN = int(OrderReason.FLATTEN)
_QTY_EPS = 1e-12


#: the largest model file read (bytes): `caerus train` writes 10-30 KB; parsed JSON takes up to ~25x its size in
#: memory (4 MiB of empty lists: ~90 MiB), so this bounds the loader's memory whatever the file holds
MAX_MODEL_BYTES = 4 << 20
#: trees per model, internal nodes per tree, and node visits from a tree's root to its deepest leaf. LightGBM's
#: num_leaves is 31 by default (the grid's <= 16); the depth bounds every evaluation's walk of one tree.
MAX_TREES = 10_000
MAX_TREE_NODES = 65_535
MAX_TREE_DEPTH = 1_024
#: the code form: Python's parser refuses more than 200 nested parentheses and a tree nests one per level (the
#: grid's are <= 7 deep); compiling costs ~100 MiB and ~0.25 s per MiB of source, so the source is capped too
#: (the grid's largest candidate generates ~30 KB)
MAX_CODE_DEPTH = 150
MAX_CODE_BYTES = 2 << 20


class ModelError(ValueError):
    """A model file the strategy cannot use; the message is one line naming the file and what is wrong."""


def content_hash(doc: dict) -> str:
    """sha256 of the model document's canonical JSON without its ``hash`` field (what ``hash`` must equal)."""
    body = {k: v for k, v in doc.items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Model:
    """A checked model file: what the hot path needs, and the document it came from."""

    path: str
    kind: str
    hash: str
    horizon_ms: float
    entry_bps: float
    exit_bps: float
    reversal_bps: float
    intercept: float = 0.0
    weights: tuple[float, ...] = ()
    trees: tuple[dict, ...] = ()
    doc: dict = field(default_factory=dict, repr=False, compare=False)


def _num(v: object, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ModelError(f"{what} is not a finite number: {v!r}")
    return float(v)


def _check_tree(tree: object, k: int) -> tuple[dict, int]:
    """Tree ``k`` of a model, checked (types, ranges, shape, limits) and copied: (its arrays, its depth)."""
    if not isinstance(tree, dict):
        raise ModelError(f"tree {k} is not an object")
    lists: list[list[Any]] = []
    for name in ("feature", "threshold", "left", "right", "leaf"):
        v = tree.get(name)
        if not isinstance(v, list):
            raise ModelError(f"tree {k} lacks feature/threshold/left/right/leaf lists")
        lists.append(v)
    feat, thr, left, right, leaf = lists
    n_nodes, n_leaves = len(feat), len(leaf)
    if n_nodes > MAX_TREE_NODES:
        raise ModelError(f"tree {k} has {n_nodes} nodes, over MAX_TREE_NODES = {MAX_TREE_NODES}")
    if not (len(thr) == len(left) == len(right) == n_nodes) or n_leaves != n_nodes + 1:
        raise ModelError(f"tree {k}: {n_nodes} nodes need as many thresholds and children and {n_nodes + 1} leaves")
    for i in range(n_nodes):
        f = feat[i]
        if isinstance(f, bool) or not isinstance(f, int) or not 0 <= f < N_FEATURES:
            raise ModelError(f"tree {k} node {i}: feature index {f!r} out of range")
        for c in (left[i], right[i]):
            # a child >= 0 is a node, < 0 the leaf ~c (LightGBM's convention); node 0 is the root, no one's child
            if isinstance(c, bool) or not isinstance(c, int) or not (-n_leaves <= c < n_nodes) or c == 0:
                raise ModelError(f"tree {k} node {i}: child {c!r} out of range")
        _num(thr[i], f"tree {k} node {i} threshold")
    depth = _tree_depth(k, left, right, n_leaves)
    return ({"feature": list(feat), "threshold": [_num(v, f"tree {k} threshold") for v in thr],
             "left": list(left), "right": list(right), "leaf": [_num(v, f"tree {k} leaf") for v in leaf]}, depth)


def _tree_depth(k: int, left: list[int], right: list[int], n_leaves: int) -> int:
    """Check that in-range child arrays form one binary tree from node 0 -- every node and leaf reached exactly once,
    so no shared subtree, no cycle, nothing unreachable -- no deeper than MAX_TREE_DEPTH; return its depth (node
    visits on the longest root-to-leaf path, 0 for a lone leaf). Iterative: O(nodes) time and memory, no recursion,
    and it stops at the first node reached a second time."""
    n_nodes = len(left)
    if n_nodes == 0:
        return 0
    # who reached each node / leaf first: parent * 2 + (0 left, 1 right); -1 not yet (the root: -2, no parent)
    node_from = [-1] * n_nodes
    leaf_from = [-1] * n_leaves
    node_from[0] = -2
    deepest = 0
    stack = [(0, 1)]
    while stack:
        i, d = stack.pop()
        if d > MAX_TREE_DEPTH:
            raise ModelError(f"tree {k} is deeper than MAX_TREE_DEPTH = {MAX_TREE_DEPTH} levels (node {i} at "
                             f"level {d})")
        deepest = max(deepest, d)
        for side, c in ((0, left[i]), (1, right[i])):
            if c >= 0:
                if node_from[c] != -1:
                    raise ModelError(f"tree {k} is not a tree: {_second_visit(node_from, i, side, c)}")
                node_from[c] = i * 2 + side
                stack.append((c, d + 1))
            else:
                leaf = ~c
                if leaf_from[leaf] != -1:
                    first = leaf_from[leaf]
                    raise ModelError(f"tree {k} is not a tree: node {i}'s {_SIDE[side]} child, leaf {leaf}, is "
                                     f"already node {first >> 1}'s {_SIDE[first & 1]} child")
                leaf_from[leaf] = i * 2 + side
    # every node reached at most once from the root: n_nodes - 1 node children, so n_nodes + 1 leaf children,
    # all distinct -- an unreached node is the only way left to fail (the leaves follow; checked for the message)
    for what, seen in (("node", node_from), ("leaf", leaf_from)):
        for j, by in enumerate(seen):
            if by == -1:
                raise ModelError(f"tree {k} is not a tree: {what} {j} is not reachable from the root (node 0)")
    return deepest


_SIDE = ("left", "right")


def _second_visit(node_from: list[int], i: int, side: int, c: int) -> str:
    """Why node ``c``, reached again as node ``i``'s ``side`` child, breaks the tree: a cycle when ``c`` is ``i``
    or one of its ancestors, else a shared subtree (a DAG)."""
    what = f"node {i}'s {_SIDE[side]} child is node {c}"
    a = i
    while a >= 0:  # up the parent chain of reached nodes: a tree so far, so it ends at the root (-2)
        if a == c:
            return f"{what}, {'itself' if c == i else 'its ancestor'} (a cycle)"
        a = node_from[a] >> 1 if node_from[a] >= 0 else -1
    first = node_from[c]
    return f"{what}, already node {first >> 1}'s {_SIDE[first & 1]} child (a shared subtree)"


def _read(p: Path) -> object:
    """The file's JSON, read up to MAX_MODEL_BYTES from a regular file (O_NONBLOCK: a FIFO at the path cannot
    block the start-up; what was opened is checked with fstat, no window between check and read)."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ModelError(f"model {p}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ModelError(f"model {p}: not a regular file")
        data = b""
        while len(data) <= MAX_MODEL_BYTES:  # a regular file's read returns what is there, up to the size asked
            chunk = os.read(fd, MAX_MODEL_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise ModelError(f"model {p}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_MODEL_BYTES:
        raise ModelError(f"model {p}: over MAX_MODEL_BYTES = {MAX_MODEL_BYTES} bytes")
    try:
        return json.loads(data)
    except RecursionError:
        raise ModelError(f"model {p}: not JSON (nested too deeply)") from None
    except ValueError as exc:
        raise ModelError(f"model {p}: not JSON ({exc})") from None


def load_model(path: str | Path, sha256: str = "") -> Model:
    """Read and check a model file: size, format, the pinned content hash (``sha256``, 64 hex digits; "" = none),
    its own content hash, feature schema, numbers, tree shapes. ModelError in one line."""
    p = Path(path)
    doc = _read(p)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelError(f"model {p}: not a caerus model file of format {FORMAT}")
    want = content_hash(doc)
    # the pin is compared with the hash computed from the content: the file's own "hash" field proves nothing, an
    # edited file carries its recomputed hash. Checked first, so a file other than the pinned one is read no further.
    if sha256 and want != sha256.lower():
        raise ModelError(f"model {p}: content sha256 {want} is not the pinned model_sha256 {sha256.lower()}")
    if doc.get("hash") != want:
        raise ModelError(f"model {p}: content hash {doc.get('hash')!r} does not match its content ({want[:12]}...)")
    if doc.get("tradeable") is not True:
        raise ModelError(f"model {p} is not tradeable: {doc.get('decline') or 'training declined it'}")
    sch = doc.get("schema")
    diff = schema_difference(sch) if isinstance(sch, dict) else "it has no feature schema"
    if diff is not None:
        raise ModelError(f"model {p} was trained on other features than this strategy computes: {diff}")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise ModelError(f"model {p}: kind {kind!r}, expected one of {', '.join(KINDS)}")
    try:
        dec = doc.get("decision") or {}
        common = {"path": str(p), "kind": kind, "hash": want, "doc": doc,
                  "horizon_ms": _num(sch.get("horizon_ms"), "schema.horizon_ms"),  # type: ignore[union-attr]
                  "entry_bps": _num(dec.get("entry_bps"), "decision.entry_bps"),
                  "exit_bps": _num(dec.get("exit_bps"), "decision.exit_bps"),
                  "reversal_bps": _num(dec.get("reversal_bps"), "decision.reversal_bps")}
        if kind == "linear":
            lin = doc.get("linear") or {}
            w = lin.get("weights")
            if not isinstance(w, list) or len(w) != N_FEATURES:
                raise ModelError(f"linear.weights must list {N_FEATURES} numbers")
            return Model(intercept=_num(lin.get("intercept"), "linear.intercept"),
                         weights=tuple(_num(v, "linear weight") for v in w), **common)
        tr = doc.get("trees") or {}
        trees = tr.get("trees")
        if not isinstance(trees, list) or not trees:
            raise ModelError("trees.trees must be a non-empty list")
        if len(trees) > MAX_TREES:
            raise ModelError(f"{len(trees)} trees, over MAX_TREES = {MAX_TREES}")
        return Model(intercept=_num(tr.get("init", 0.0), "trees.init"),
                     trees=tuple(_check_tree(t, k)[0] for k, t in enumerate(trees)), **common)
    except ModelError as exc:
        raise ModelError(f"model {p}: {exc}") from None


def identity(m: Model) -> dict[str, object]:
    """What a session records of the model it traded (env.json, the report): its content hash and the facts a
    reader needs to tell two models apart."""
    return {"path": m.path, "hash": m.hash, "kind": m.kind, "horizon_ms": m.horizon_ms, "entry_bps": m.entry_bps,
            "schema_version": (m.doc.get("schema") or {}).get("version")}


def strategy_model(config_path: str | Path | None) -> dict[str, object] | None:
    """The identity of the model a strategy TOML trades (``signal = "model"``, or ``"ab"`` with ``ab_window_s``
    added), None for the naive rule. ConfigError or ModelError (one line) when the config or its model file is
    unusable."""
    cfg = load_config(StrategyConfig, config_path, "strategy")
    if not cfg.uses_model:
        return None
    model = load_model(cfg.model, cfg.model_sha256)
    scorer(model)  # its hot-path form is within the code limits, as the strategy will need at start
    ident = identity(model)
    if cfg.ab_window_ns:
        ident["ab_window_s"] = cfg.ab_window_ns / 1e9
    return ident


# Generated code reads the features as locals, unpacked from the list in one operation: a subscript per use costs
# two more operations each (benchmarks/decision_cost.py); the arithmetic is the same expression either way.
_UNPACK = "    " + ", ".join(f"x{i}" for i in range(N_FEATURES)) + " = x"


def _linear_code(m: Model) -> str:
    terms = " + ".join(f"{w!r} * x{i}" for i, w in enumerate(m.weights) if w != 0.0)
    return f"def score(x):\n{_UNPACK}\n    return {m.intercept!r}{' + ' + terms if terms else ''}\n"


# Trees per generated statement: one expression of hundreds of terms would nest the compiler's recursion as deep.
_TREES_PER_SUM = 50


def _tree_expr(tree: dict, node: int, depth: int = 0) -> str:
    # recursion bounded by MAX_CODE_DEPTH: _trees_code checks each tree's depth before generating it
    if node < 0:
        return repr(tree["leaf"][~node])
    if depth >= MAX_CODE_DEPTH:
        raise ModelError(f"a tree deeper than MAX_CODE_DEPTH = {MAX_CODE_DEPTH} levels cannot be compiled to code: "
                         "use form trees_arrays")
    return (f"({_tree_expr(tree, tree['left'][node], depth + 1)} if x{tree['feature'][node]} <= "
            f"{tree['threshold'][node]!r} else {_tree_expr(tree, tree['right'][node], depth + 1)})")


def _trees_code(trees: list[tuple[dict, int]], intercept: float) -> str:
    # Each tree is one nested conditional expression (its leaves and thresholds literals), and the trees are added
    # left to right in one expression per _TREES_PER_SUM: the same additions in the same order as LightGBM's
    # (init, then tree 0, 1, ...), so the same bits, without a store and a load of the running sum per tree.
    terms = []
    size = 0
    for k, (t, depth) in enumerate(trees):
        if depth > MAX_CODE_DEPTH:
            raise ModelError(f"tree {k} is {depth} levels deep, over MAX_CODE_DEPTH = {MAX_CODE_DEPTH} (Python "
                             "nests at most 200 parentheses): use form trees_arrays")
        terms.append(_tree_expr(t, 0) if t["feature"] else repr(t["leaf"][0]))
        size += len(terms[-1]) + 3
        if size > MAX_CODE_BYTES:  # a checked tree's code is linear in its nodes: stop at the tree that crosses
            raise ModelError(f"trees 0-{k} of {len(trees)} already generate {size} bytes of code, over "
                             f"MAX_CODE_BYTES = {MAX_CODE_BYTES}: use form trees_arrays")
    lines = ["def score(x):", _UNPACK]
    for k in range(0, len(terms), _TREES_PER_SUM):
        head = repr(intercept) if k == 0 else "s"
        lines.append(f"    s = {head} + " + " + ".join(terms[k:k + _TREES_PER_SUM]))
    lines.append("    return s")
    return "\n".join(lines) + "\n"


def _trees_arrays(checked: list[tuple[dict, int]], intercept: float) -> Callable[[list[float]], float]:
    # every tree checked to be a tree: each walk ends at a leaf within the tree's depth (<= MAX_TREE_DEPTH visits)
    trees = tuple((tuple(t["feature"]), tuple(t["threshold"]), tuple(t["left"]), tuple(t["right"]),
                   tuple(t["leaf"])) for t, _ in checked)
    init = intercept

    def score(x: list[float]) -> float:
        s = init
        for feat, thr, left, right, leaf in trees:
            if not feat:
                s += leaf[0]
                continue
            node = 0
            while node >= 0:
                node = left[node] if x[feat[node]] <= thr[node] else right[node]
            s += leaf[~node]
        return s

    return score


def scorer(m: Model, form: str | None = None) -> Callable[[list[float]], float]:
    """The model as a function of the feature list, in ``form`` (default: DEFAULT_FORM of its kind)."""
    form = form or DEFAULT_FORM[m.kind]
    if m.kind == "trees" and form in ("trees_code", "trees_arrays"):
        # checked again here, whoever built the Model (load_model, or a test or benchmark from arrays): both forms
        # rely on the trees being trees
        if len(m.trees) > MAX_TREES:
            raise ModelError(f"model {m.path}: {len(m.trees)} trees, over MAX_TREES = {MAX_TREES}")
        try:
            checked = [_check_tree(t, k) for k, t in enumerate(m.trees)]
            if form == "trees_arrays":
                return _trees_arrays(checked, m.intercept)
            code = _trees_code(checked, m.intercept)
        except ModelError as exc:
            raise ModelError(f"model {m.path}: {exc}") from None
    elif form == "linear" and m.kind == "linear":
        code = _linear_code(m)
    else:
        raise ModelError(f"form {form!r} does not evaluate a {m.kind} model")
    namespace: dict[str, object] = {}
    exec(compile(code, f"<model {m.hash[:12]} {form}>", "exec"), namespace)
    return namespace["score"]  # type: ignore[return-value]


class ModelArb(LatencyArb):
    """LatencyArb deciding on a trained model's predicted Hyperliquid move (see the module docstring)."""

    __slots__ = ("_entry", "_exit", "_live_t", "_m_entry", "_m_exit", "_m_reversal", "_n_entry", "_n_exit",
                 "_n_reversal", "_reversal", "_use", "feat", "model", "score_fn")

    def __init__(self, cfg: StrategyConfig, model: Model, instrument: Instrument | None = None,
                 form: str | None = None) -> None:
        super().__init__(cfg, instrument)
        self.model = model
        self.score_fn = scorer(model, form)
        self.feat = FeatureState(cfg.for_instrument(instrument.name).ewma_half_life_s if instrument is not None
                                 else cfg.ewma_half_life_s)
        self._m_entry, self._m_exit, self._m_reversal = model.entry_bps, model.exit_bps, model.reversal_bps
        self._n_entry, self._n_exit, self._n_reversal = self._entry_bps, self._exit_bps, self._reversal_bps
        self._live_t = 0  # start_t + warm-up: entries from then on (set with start_t)
        self.use_model = True
        self.tracked = self.feat  # the guards, the price and shadows read the books the features track

    @property
    def use_model(self) -> bool:
        """Decide on the model (True) or the naive rule (False); switching sets the thresholds in effect, so the
        per-book path reads one set."""
        return self._use

    @use_model.setter
    def use_model(self, on: bool) -> None:
        self._use = on
        if on:
            self._entry, self._exit, self._reversal = self._m_entry, self._m_exit, self._m_reversal
        else:
            self._entry, self._exit, self._reversal = self._n_entry, self._n_exit, self._n_reversal

    def on_book(self, book: tuple, now: int) -> tuple | None:
        """Feed one BOOK record seen at ``now`` (ns); returns (side, reason, px, qty) to send, or None."""
        # Hot path (benchmarks/decision_cost.py): the rules are LatencyArb.on_book's in the same order -- flatten
        # when halted, else the exits, then (nothing to exit) an entry on a Binance book -- laid out so that a flat
        # position reads only what the entry test needs.
        feat = self.feat
        if not feat.update(book, now):
            if feat.hl_seen and not self.hl_seen:
                self.hl_mid = feat.hl_mid
                self._first_hl_book()
            return None
        if not self.bn_seen:  # the first full vector: both venues seen (LatencyArb's flags, for its readers)
            if not self.hl_seen:
                self.hl_mid = feat.hl_mid
                self._first_hl_book()
            self.bn_seen = True
            self.start_t = feat.start_t  # when the basis was first measured, as LatencyArb's warm-up counts
            self._live_t = feat.start_t + self._warmup
        self.basis = feat.basis
        self.ewma = feat.ewma
        if self._use:
            score = self.score_fn(feat.x)
            half = feat.hl_half_spread_bps
            # the predicted move net of the half spread; exits compare the score itself (the move still to come)
            signal = score - half if score > half else (score + half if score < -half else 0.0)
        else:
            score = signal = feat.x[F_BASIS_DEV]  # the naive rule's signal, computed the naive rule's way
        self.signal = signal

        orders = self.orders
        position = orders.position
        if position > _QTY_EPS or position < -_QTY_EPS:
            reason = 0
            if self.halted and self._flatten:
                reason = _FLATTEN
                side = _SELL if position > 0.0 else _BUY
            else:
                pos_side = _BUY if position > 0.0 else _SELL
                s = score if pos_side == _BUY else -score  # the predicted move still to come, in our direction
                if s <= -self._reversal:
                    reason = _EXIT_REVERSAL
                elif s <= self._exit:
                    reason = _EXIT_THRESHOLD
                elif now - self.entry_t >= self._max_hold:
                    reason = _EXIT_MAX_HOLD
                side = -pos_side
            if reason:
                return self._propose(feat, side, reason, _exit_qty(position, orders), now)
        if book[BOOK_VENUE] != _BINANCE or now < self._live_t:
            return None
        entry = self._entry
        if signal >= entry:
            side = _BUY
        elif signal <= -entry:
            side = _SELL
        else:
            return None
        # deliberate copy of LatencyArb.on_book's entry guards, inlined (kept in step by
        # tests/unit/strategy/test_strategy_copies_in_step.py)
        if now - self.last_fire_t < self._cooldown:
            self.guards[G_COOLDOWN] += 1
            return None
        new_pos = (position + orders.unknown_long + self._qty if side == _BUY
                   else position - orders.unknown_short - self._qty)
        if new_pos > self._max_pos + _QTY_EPS or new_pos < -self._max_pos - _QTY_EPS:
            self.guards[G_POSITION] += 1
            return None
        # LatencyArb's guards and IOC price, on the books the features track
        return self._propose(feat, side, _ENTRY, self._qty, now)
