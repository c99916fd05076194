"""The model signal: a model file is checked at start-up (schema, hash, numbers) and refused in one line; the
backtest and the live loop drive the same decision object to the same features and decisions; with the model
switched off the object decides exactly as the naive rule."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from caerus.research.backtest import engine
from caerus.research.backtest.fills import FillRules
from caerus.research.backtest.latency import LatencyDraws, LatencyModel
from caerus.strategy import app as strategy_app
from caerus.strategy.config import StrategyConfig
from caerus.strategy.feature_vector import NAMES, schema, schema_difference
from caerus.strategy.instrument_desk import Desk
from caerus.strategy.latency_arb import LatencyArb
from caerus.strategy.model_signal import ModelArb, ModelError, content_hash, load_model
from tests.unit.research.models.conftest import known_edge_model, line
from tests.unit.strategy.reference_features import NAMES_V1

# long computations (training, calibration round trips, whole pipelines) over module fixtures: the fast tier
# leaves the whole module out
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return known_edge_model(tmp_path_factory.mktemp("model"))


def _rewrite(src: Path, dst: Path, change: object) -> Path:
    doc = json.loads(src.read_text())
    change(doc)  # type: ignore[operator]
    doc["hash"] = content_hash(doc)
    dst.write_text(json.dumps(doc))
    return dst


def _run_strategy(tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    cfg = tmp_path / "strategy.toml"
    cfg.write_text(f'signal = "model"\nmodel = "{model}"\n')
    p = argparse.ArgumentParser()
    strategy_app.add_arguments(p)
    args = p.parse_args(["--segment", "a", "--segment", "b", "--order-segment", "o", "--exec-segment", "e",
                         "--config", str(cfg), "--attach-timeout", "0.1"])
    rc = strategy_app.run(args)
    return rc, capsys.readouterr().err


def test_a_model_of_another_feature_schema_is_refused_at_start_up_in_one_line(
        model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def drop_feature(doc: dict) -> None:
        doc["schema"]["names"] = doc["schema"]["names"][:-1] + ["bn_ret_5000ms"]

    bad = _rewrite(model_file, tmp_path / "other.json", drop_feature)
    rc, err = _run_strategy(tmp_path, bad, capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "other features" in lines[0] and "lacks catch_up" in lines[0] and "bn_ret_5000ms" in lines[0]


def test_a_schema_1_model_is_refused_at_start_up_naming_the_features_schema_2_removed(
        model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def as_schema_1(doc: dict) -> None:
        doc["schema"].update(version=1, names=list(NAMES_V1))
        doc["linear"]["weights"] = [0.0] * len(NAMES_V1)

    old = _rewrite(model_file, tmp_path / "v1.json", as_schema_1)
    rc, err = _run_strategy(tmp_path, old, capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "version 1, this strategy computes version 2" in lines[0]
    assert "has bn_ofi, hl_block_phase, removed in schema version 2" in lines[0]
    assert "lacks" not in lines[0]  # schema 2 added nothing


def test_schema_difference_names_what_differs() -> None:
    assert schema_difference(schema()) is None
    assert schema_difference({"version": 2, "names": list(NAMES[::-1])}) == (
        f"its features are in another order (position 0: {NAMES[-1]!r}, this strategy's: {NAMES[0]!r})")
    assert schema_difference({"version": 2, "names": [*NAMES, NAMES[0]]}) == (
        f"its features list {len(NAMES) + 1} names (one repeated), this strategy's {len(NAMES)}")
    assert schema_difference({"version": 3, "names": list(NAMES)}) == (
        "feature schema version 3, this strategy computes version 2")
    assert schema_difference({"version": 2}) == "its schema has no feature names"


def test_model_file_checks(model_file: Path, tmp_path: Path) -> None:
    doc = json.loads(model_file.read_text())
    doc["decision"]["entry_bps"] = 0.1  # changed without a new hash
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="content hash"):
        load_model(tmp_path / "edited.json")
    with pytest.raises(ModelError, match="version 99"):
        load_model(_rewrite(model_file, tmp_path / "v.json", lambda d: d["schema"].update(version=99)))
    with pytest.raises(ModelError, match="No such file"):
        load_model(tmp_path / "missing.json")
    assert load_model(model_file).kind == "linear"


def test_naive_mode_of_the_model_object_decides_as_the_naive_rule(model_file: Path) -> None:
    ln = line(2)
    lat = LatencyModel.constant(0, 300_000)
    spec = engine.RunSpec(StrategyConfig(), ln.loaded.instruments, lat, FillRules(), 2)
    _, recs, seen, _ = engine.prepare(ln.loaded.events, spec, LatencyDraws(lat, 2))
    naive = LatencyArb(StrategyConfig())
    model = ModelArb(StrategyConfig(), load_model(model_file))
    model.use_model = False
    fires = 0
    for k, (r, t) in enumerate(zip(recs, seen, strict=True)):
        a, b = naive.on_book(r, t), model.on_book(r, t)
        assert a == b, k
        if a is not None:  # sent and filled at once: both hold the same position from here
            fires += 1
            for arb in (naive, model):
                arb.fired(a, t, fires, fires)
                arb.orders.position += a[3] if a[0] == 1 else -a[3]
                arb.orders.in_flight = 0
    assert fires > 20
    assert naive.guards == model.guards and naive.decisions == model.decisions


def test_backtest_and_live_loop_compute_the_same_features_and_decisions(model_file: Path) -> None:
    """The backtest engine and the live loop's way of driving a Desk (on_book per record, fired at the decision)
    give the same features, decisions and guard counts on the same (record, t_seen) sequence."""
    ln = line(3)
    cfg = StrategyConfig(signal="model", model=str(model_file))
    lat = LatencyModel.constant(10**15, 300_000)  # no result ever comes back in the run: one order, then in flight
    spec = engine.RunSpec(cfg, ln.loaded.instruments, lat, FillRules(), 3)
    out = engine.run(ln.loaded.events, spec)
    _, recs, seen, _ = engine.prepare(ln.loaded.events, spec, LatencyDraws(lat, 3))
    live = Desk(cfg, ln.loaded.instruments)  # as caerus.strategy.app builds it
    arb = live.arbs[0]
    assert isinstance(arb, ModelArb)
    sent = []
    vectors = []
    hk = int(cfg.housekeeping_ms * 1e6)
    next_hk = seen[0] + hk
    for r, t in zip(recs, seen, strict=True):
        if t >= next_hk:  # housekeeping: orders with no result expire to UNKNOWN (as the live process does)
            arb.orders.expire(t)
            next_hk = t - (t - next_hk) % hk + hk
        d = arb.on_book(r, t)
        if d is not None:
            sent.append((d[0], d[1], d[2], t))
            arb.fired(d, t, len(sent), len(sent))
        vectors.append(arb.feat.x[:] if r[0] == 1 else None)
    o = out.orders
    backtest = [(int(o["side"][k]), int(o["reason"][k]), float(o["px"][k]), int(o["t_seen"][k]))
                for k in range(len(o["side"]))]
    assert len(sent) >= 2 and backtest == sent
    assert out.decisions == [arb.decisions] and out.guards == [list(arb.guards)]
    assert arb.guards[8] > 100  # in flight: many later decisions were held back, identically counted
    assert np.isfinite(np.asarray([v for v in vectors if v is not None])).all()
