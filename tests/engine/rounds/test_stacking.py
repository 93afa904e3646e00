"""Stacking cells with different hyperparameters (:mod:`fedbench.engine.rounds.stacking`): the rule
(:func:`stack_key`, :func:`check_stackable`), and that cells trained together in one engine equal
each cell trained alone, for every algorithm (float64, 1e-10 relative)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, get_algorithm
from fedbench.data.partition import make_partition, read_partition, write_partition
from fedbench.data.store import Dataset, write_dataset
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.engine.rounds.loop import run_cells, train, train_seeds
from fedbench.engine.rounds.stacking import check_stackable, stack_key

RTOL = 1e-10
CHUNK = 7  # 3 cells × 4 sampled clients a round: two chunks of 6, each mixing two cells



def _dataset(n=240, d=6, c=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, c))
    x = rng.normal(size=(n + 60, d)).astype(np.float32)
    y = (x @ w).argmax(1)
    return Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=c)


@pytest.fixture(scope="module")
def data():
    ds = _dataset()
    parts = {s: make_partition(ds, {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 8}, seed=s) for s in (0, 1)}
    return ds, parts


def _spec(algorithm="fedavg", label=None, seed=0, hparams=None, **local_over):
    local = {"epochs": 1, "steps": None, "batch_size": 10, "lr": 0.1, "lr_decay": 1.0, "weight_decay": 0.0,
             "clip_norm": None} | local_over
    return {
        "experiment": "t", "dataset": "toy", "partition": "dir", "algorithm": label or algorithm, "seed": seed,
        "algorithm_name": algorithm, "hparams": dict(hparams or {}), "model": {"name": "logreg"}, "local": local,
        "sampling": {"scheme": "uniform", "participation": 0.5}, "rounds": 3, "eval_every": 1,
        "target_accuracy": 0.8, "dtype": "float64",
    }


def _varied_hparams(algorithm: str, i: int) -> dict:
    """Cell i's hyperparameters: every numeric, non-structural default scaled by (1, 0.5, 0.8)[i]
    (a default of 0 becomes (0, 0.01, 0.02)[i]), so bounds like [0, 1) still hold."""
    algo = get_algorithm(algorithm)
    structural = set(getattr(algo, "STRUCTURAL_HPARAMS", ()))
    out = {}
    for k, v in algo.HPARAMS.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in structural:
            out[k] = float(v) * (1.0, 0.5, 0.8)[i] if v != 0 else (0.0, 0.01, 0.02)[i]
        else:
            out[k] = v
    if algorithm == "fedavgm":
        out["dampening"] = (0.0, 0.1, 0.2)[i]
    if "snapshot_period" in out:  # an integer ≥ 1 (the "+" minimax variants)
        out["snapshot_period"] = (1, 2, 3)[i]
    if "projection" in out:  # the minimax algorithms: fair classification, y on the simplex
        out["projection"] = "simplex"
    return out


def _cells(algorithm: str, **local_over):
    """Three cells (two seeds) differing in local lr, weight decay and every numeric hyperparameter.
    Elastic Aggregation trains with batch size 2, so that each B_k (3 rows) takes two held-out
    batches and ρ changes ζ (with one batch it scales Ω only, which ζ = 1 + τ − Ω/max Ω ignores)."""
    lrs, wds, seeds = (0.1, 0.05, 0.2), (0.0, 1e-3, 5e-3), (0, 0, 1)
    if algorithm.startswith("elastic_"):
        local_over = {"batch_size": 2} | local_over
    if algorithm in ("fedac", "mb_ac_sgd"):  # K local steps, and λ > 0 (μ = λ by default)
        local_over = {"epochs": None, "steps": 3} | local_over
        wds = (1e-2, 1e-3, 5e-3)
    cells = [_spec(algorithm, f"{algorithm},lr={lrs[i]}", seeds[i], _varied_hparams(algorithm, i), lr=lrs[i],
                   weight_decay=wds[i], **local_over) for i in range(3)]
    if "projection" in get_algorithm(algorithm).HPARAMS:  # minimax: the model with its ascent player
        cells = [c | {"model": {"name": "logreg", "minimax": {"problem": "fair", "lambda": 0.1}}} for c in cells]
    return cells


def _assert_rows_close(rows, ref, rtol=RTOL):
    assert len(rows) == len(ref)
    for r, q in zip(rows, ref):
        for k, v in q.items():
            if k == "wall_seconds":
                continue
            if isinstance(v, float):
                assert np.isclose(r[k], v, rtol=rtol, atol=0, equal_nan=True), (k, r[k], v)
            else:
                assert r[k] == v, (k, r[k], v)


def _assert_params_close(a, b):
    for k, v in b.items():
        rel = float((a[k] - v).norm() / v.norm())
        assert rel < RTOL, (k, rel)


@pytest.fixture
def mixed_chunks(monkeypatch):
    """Counts the vectorized chunks whose cells had different hyperparameter values."""
    count = {"mixed": 0}
    original = VectorizedClients._chunk_hparams

    def recording(self, members, hp_of, dtype):
        common, varying = original(self, members, hp_of, dtype)
        count["mixed"] += varying is not None
        return common, varying

    monkeypatch.setattr(VectorizedClients, "_chunk_hparams", recording)
    return count


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cells_with_different_hyperparameters_stacked_equal_each_alone(data, algorithm, mixed_chunks):
    ds, parts = data
    specs = _cells(algorithm)
    assert len({stack_key(s) for s in specs}) == 1
    cell_parts = [parts[s["seed"]] for s in specs]
    stacked = train_seeds(specs, ds, cell_parts, device="cpu", chunk_size=CHUNK)
    assert mixed_chunks["mixed"] > 0  # chunks really mixed cells with different values
    for spec, part, (rows, info) in zip(specs, cell_parts, stacked):
        assert info["status"] == "ok" and [r["round"] for r in rows] == [1, 2, 3]
        assert {r["algorithm"] for r in rows} == {spec["algorithm"]}
        for engine in ("sequential", "vectorized"):
            ref_rows, ref_info = train(spec, ds, part, device="cpu", engine=engine, chunk_size=CHUNK)
            _assert_params_close(info["params"], ref_info["params"])
            _assert_rows_close(rows, ref_rows)
    # the cells did differ: their results are not all the same
    assert len({round(rows[-1]["train_loss"], 12) for rows, _ in stacked}) == 3


def test_clip_norm_values_stack(data, mixed_chunks):
    ds, parts = data
    specs = [s | {"local": s["local"] | {"clip_norm": c}} for s, c in zip(_cells("fedprox"), (0.05, 0.2, 1.0))]
    stacked = train_seeds(specs, ds, [parts[s["seed"]] for s in specs], device="cpu", chunk_size=CHUNK)
    assert mixed_chunks["mixed"] > 0
    for spec, (rows, info) in zip(specs, stacked):
        ref_rows, ref_info = train(spec, ds, parts[spec["seed"]], device="cpu", engine="sequential")
        _assert_params_close(info["params"], ref_info["params"])
        _assert_rows_close(rows, ref_rows)


def test_lr_schedules_stack(data, mixed_chunks):
    """Cells with and without a step schedule stack (it only sets each round's lr, per cell) and
    equal each alone."""
    ds, parts = data
    schedules = (None, {"milestones": [1], "factor": 0.1}, {"milestones": [1, 2], "factor": 0.5})
    specs = []
    for s, sched in zip(_cells("fedavg"), schedules):
        local = {k: v for k, v in s["local"].items() if k != "lr_schedule"}
        specs.append(s | {"local": local | ({"lr_schedule": sched} if sched else {})})
    assert len({stack_key(s) for s in specs}) == 1
    stacked = train_seeds(specs, ds, [parts[s["seed"]] for s in specs], device="cpu", chunk_size=CHUNK)
    assert mixed_chunks["mixed"] > 0
    for spec, (rows, info) in zip(specs, stacked):
        ref_rows, ref_info = train(spec, ds, parts[spec["seed"]], device="cpu", engine="sequential")
        _assert_params_close(info["params"], ref_info["params"])
        _assert_rows_close(rows, ref_rows)


def test_identical_hyperparameters_keep_the_single_cell_path_bitwise(data, mixed_chunks):
    """Seeds of one cell stacked (every value shared): no per-client tensors, and bitwise the
    stacked run of the same cells (the path of seed stacking before hyperparameter stacking)."""
    ds, parts = data
    specs = [_spec("feddyn", seed=s, hparams={"alpha": 0.01}) for s in (0, 1)]
    a = train_seeds(specs, ds, [parts[0], parts[1]], device="cpu", chunk_size=CHUNK)
    assert mixed_chunks["mixed"] == 0
    b = train_seeds(specs, ds, [parts[0], parts[1]], device="cpu", chunk_size=CHUNK)
    for (ra, ia), (rb, ib) in zip(a, b):
        assert [{k: v for k, v in r.items() if k != "wall_seconds"} for r in ra] == \
            [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rb]
        assert all(torch.equal(ia["params"][k], ib["params"][k]) for k in ia["params"])


def test_a_diverging_learning_rate_stops_alone(data):
    ds, parts = data
    specs = [_spec("fedavg", f"fedavg,lr={lr}", seed, lr=lr) | {"rounds": 6}
             for lr, seed in ((0.1, 0), (1e300, 0), (0.05, 1))]
    cell_parts = [parts[s["seed"]] for s in specs]
    stacked = train_seeds(specs, ds, cell_parts, device="cpu", chunk_size=CHUNK)
    statuses = [info["status"] for _, info in stacked]
    assert statuses == ["ok", "diverged", "ok"]
    assert len(stacked[1][0]) < 6 and len(stacked[0][0]) == len(stacked[2][0]) == 6  # it stopped, not the others
    for spec, part, (rows, info) in zip(specs, cell_parts, stacked):
        ref_rows, ref_info = train(spec, ds, part, device="cpu", engine="sequential")
        assert [r["status"] for r in rows] == [r["status"] for r in ref_rows]
        if info["status"] == "ok":
            _assert_params_close(info["params"], ref_info["params"])
            _assert_rows_close(rows, ref_rows)


# -- the rule ---------------------------------------------------------------------------------


def test_stack_key_ignores_what_only_changes_values():
    base = _spec("fedprox", hparams={"mu": 0.01})
    same = [
        base | {"seed": 7},
        base | {"algorithm": "fedprox,mu=0.1", "hparams": {"mu": 0.1}},
        base | {"hparams": {}},  # the default filled in: mu = 0.01
        base | {"hparams": {"mu": 0}},  # int or float
        base | {"local": base["local"] | {"lr": 3.0, "lr_decay": 0.99, "weight_decay": 1e-4}},
        base | {"local": base["local"] | {"lr_schedule": {"milestones": [1, 2], "factor": 0.1}}},
        base | {"engine": "sequential", "chunk_size": 4},
    ]
    for spec in same:
        assert stack_key(spec) == stack_key(base), spec
    clipped = base | {"local": base["local"] | {"clip_norm": 1.0}}
    assert stack_key(clipped) == stack_key(clipped | {"local": clipped["local"] | {"clip_norm": 10}})
    # Elastic Aggregation: tau and rho are values; sensitivity_fraction is structural
    el = _spec("elastic_fedavg", hparams={"tau": 0.5, "rho": 0.9, "sensitivity_fraction": 0.1})
    assert stack_key(el) == stack_key(el | {"hparams": {**el["hparams"], "tau": 0.2, "rho": 0.5}})
    check_stackable([base, *same[1:2], base | {"seed": 1}])


@pytest.mark.parametrize("change, key", [
    ({"local": {"batch_size": 20}}, "local.batch_size"),
    ({"local": {"epochs": 2}}, "local.epochs"),
    ({"local": {"clip_norm": 1.0}}, "local.clip_norm"),  # None vs a number
    ({"algorithm_name": "fedavg", "hparams": {}}, "algorithm_name"),
    ({"model": {"name": "mlp", "hidden": [4]}}, "model"),
    ({"rounds": 4}, "rounds"),
    ({"eval_every": 2}, "eval_every"),
    ({"dtype": "float32"}, "dtype"),
    ({"dataset": "other"}, "dataset"),
    ({"partition": "dir,num_clients=10"}, "partition"),
    ({"sampling": {"scheme": "uniform", "participation": 1.0}}, "sampling"),
])
def test_stack_key_differs_where_a_round_changes_structure(change, key):
    base = _spec("fedprox", hparams={"mu": 0.01})
    other = dict(base)
    for k, v in change.items():
        other[k] = base[k] | v if k == "local" else v
    assert stack_key(other) != stack_key(base)
    with pytest.raises(ValueError, match=f"differ in {key}"):
        check_stackable([base, other])


def test_structural_and_non_numeric_hyperparameters_must_match():
    el = _spec("elastic_fedavg", hparams={"sensitivity_fraction": 0.1, "sensitivity": "momentum"})
    assert get_algorithm("elastic_fedavg").STRUCTURAL_HPARAMS == ("sensitivity_fraction",)
    with pytest.raises(ValueError, match="differ in hparams.sensitivity_fraction"):
        check_stackable([el, el | {"hparams": {**el["hparams"], "sensitivity_fraction": 0.2}, "seed": 1}])
    with pytest.raises(ValueError, match="differ in hparams.sensitivity"):
        check_stackable([el, el | {"hparams": {**el["hparams"], "sensitivity": "average"}, "seed": 1}])
    m = _spec("fedavgm", hparams={"nesterov": False})
    assert stack_key(m) != stack_key(m | {"hparams": {"nesterov": True}})  # bool: a code path
    with pytest.raises(ValueError, match="cell repeated"):
        check_stackable([m, m])
    with pytest.raises(ValueError, match="no cell specs"):
        check_stackable([])


# -- files -------------------------------------------------------------------------------------


def test_run_cells_records_the_stacked_cells_and_the_extras(tmp_path, data, monkeypatch):
    import fedbench.engine.rounds.loop as loop

    ds, parts = data
    write_dataset(tmp_path / "toy", ds)
    for s in (0, 1):
        write_partition(parts[s], ds, tmp_path / f"part{s}")
    specs = _cells("fedavg")[:2] + [_cells("fedavg")[2]]
    dirs = [tmp_path / "runs" / str(i) for i in range(3)]
    read = []  # the two cells of seed 0 share part0: read once
    monkeypatch.setattr(loop, "read_partition", lambda p: read.append(p) or read_partition(p))
    summaries = run_cells(specs, tmp_path / "toy", [tmp_path / f"part{s['seed']}" / "partition.parquet" for s in specs],
                          [d / "metrics.parquet" for d in dirs], [d / "summary.json" for d in dirs], device="cpu",
                          progress=False, chunk_size=CHUNK, summary_extra=[{"fingerprint": f"f{i}"} for i in range(3)])
    names = [f"t/toy/dir/{s['algorithm']}/seed={s['seed']}" for s in specs]
    for i, d in enumerate(dirs):
        on_disk = json.loads((d / "summary.json").read_text())
        assert on_disk["stacked_cells"] == summaries[i]["stacked_cells"] == names
        assert on_disk["fingerprint"] == f"f{i}" and "stacked_seeds" not in on_disk
    assert sorted(p.parent.name for p in read) == ["part0", "part1"]
    with pytest.raises(ValueError, match="one of each per cell"):
        run_cells(specs, tmp_path / "toy", [tmp_path / "part0" / "partition.parquet"] * 3,
                  [d / "metrics.parquet" for d in dirs], [d / "summary.json" for d in dirs], device="cpu",
                  progress=False, summary_extra=[{}])


def test_the_engine_refuses_cells_whose_non_numeric_hyperparameters_differ():
    from fedbench.models import build_model, make_grad_fn

    model = build_model({"name": "logreg"}, (3,), 2)
    x = torch.randn(12, 3, dtype=torch.float64)
    y = torch.arange(12) % 2
    clients = [[np.arange(0, 3), np.arange(3, 6)], [np.arange(6, 9), np.arange(9, 12)]]
    eng = VectorizedClients.stacked(get_algorithm("fedavg"), model, make_grad_fn(model), x, y, [0, 1], clients,
                                    {"batch_size": 1, "epochs": 1, "steps": None}, chunk_size=4)
    servers = [{"params": model.init(np.random.default_rng(s), dtype=torch.float64)} for s in (0, 1)]
    hp = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}
    with pytest.raises(ValueError, match="differ in hyperparameter 'clip_norm'"):
        eng.train_cells(servers, [np.arange(2)] * 2, [hp, hp | {"clip_norm": 1.0}], 1)
    results = eng.train_cells(servers, [np.arange(2)] * 2, [hp, hp | {"lr": 0.2}], 1)  # numbers may differ
    assert [len(r.messages) for r in results] == [2, 2]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sgd_step_with_tensor_hyperparameters_is_bitwise_the_number_path(dtype):
    """torch.addcmul rounds as torch.add(..., alpha=x) (one fused multiply-add): same bits."""
    from fedbench.algorithms.local import sgd_step

    g = torch.Generator().manual_seed(0)
    params = {"w": torch.randn(50, 7, generator=g, dtype=dtype), "b": torch.randn(7, generator=g, dtype=dtype)}
    direction = {k: torch.randn(v.shape, generator=g, dtype=dtype) for k, v in params.items()}
    hp = {"lr": 0.4641588833612777, "weight_decay": 1.3e-3, "clip_norm": 0.7}
    ref = sgd_step(params, direction, hp)
    out = sgd_step(params, direction, {k: torch.tensor(v, dtype=dtype) for k, v in hp.items()})
    assert all(torch.equal(out[k], ref[k]) for k in ref)
