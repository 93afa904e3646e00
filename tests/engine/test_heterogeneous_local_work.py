"""Heterogeneous local work (τ_i drawn per client: ``local.epochs`` / ``local.steps`` a
distribution, :func:`fedbench.engine.clients.batches.local_work`) through both engines.

- the engines agree (float64, 1e-10 relative) for FedAvg, FedNova and SCAFFOLD with τ_i ~
  Uniform{low..high} epochs or steps, drawn per round or fixed per client, under partial
  participation (uniform and Bernoulli), chunked or not;
- every client really runs its drawn number of steps: the engines' real step counts equal
  Σ_rounds Σ_sampled τ_i^(t)·(steps per unit), and the vectorized engine's padding efficiency is
  real / executed.
"""

import math

import numpy as np
import pytest
import torch
from test_vectorized import DEVICES, SAMPLING, _compare, _rel, _spec, data  # noqa: F401  (data: the fixture)

from fedbench.algorithms import get_algorithm
from fedbench.data.partition import client_indices
from fedbench.engine.clients import vectorized
from fedbench.engine.clients.batches import local_work
from fedbench.engine.clients.chunking import PADDING_EFFICIENCY_FLOOR, plan_groups
from fedbench.engine.clients.sampling import sample_clients
from fedbench.engine.clients.sequential import SequentialClients
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.engine.rounds.loop import train, train_seeds
from fedbench.models import build_model, make_grad_fn

WORK = {"distribution": "uniform", "low": 1, "high": 4}


@pytest.mark.parametrize("per", ["round", "client"])
@pytest.mark.parametrize("unit", ["epochs", "steps"])
@pytest.mark.parametrize("algorithm", ["fedavg", "fednova", "scaffold"])
def test_engines_agree_with_drawn_local_work(data, algorithm, unit, per):  # noqa: F811
    ds, part = data
    local = _spec(algorithm)["local"] | {"epochs": None, "steps": None, unit: {**WORK, "per": per}}
    spec = _spec(algorithm, local=local, sampling=SAMPLING["uniform" if per == "round" else "bernoulli"])
    _, info_v = _compare(spec, ds, part, "cpu", rtol=1e-10)
    assert info_v["padding_efficiency"] == 1.0  # unequal τ_i: finished clients leave their chunk


def test_engines_agree_in_small_chunks(data):  # noqa: F811
    ds, part = data
    local = _spec("fednova")["local"] | {"epochs": None, "steps": {**WORK, "per": "round"}, "batch_size": 40,
                                         "clip_norm": 1.0}
    _compare(_spec("fednova", local=local), ds, part, "cpu", rtol=1e-10, chunk_size=2)


@pytest.mark.parametrize("per", ["round", "client"])
def test_each_client_runs_its_drawn_steps(data, per):  # noqa: F811
    """steps ~ Uniform{1..4}: both engines' real step totals are Σ_t Σ_{k sampled} τ_k^(t); the
    vectorized engine executes more (padding) and reports real / executed."""
    ds, part = data
    work = {**WORK, "per": per}
    local = {"epochs": None, "steps": work, "batch_size": 7}
    clients = client_indices(part, "train")
    x = torch.as_tensor(ds.x_train, dtype=torch.float64)
    y = torch.as_tensor(ds.y_train, dtype=torch.int64)
    model = build_model({"name": "logreg"}, ds.feature_shape, ds.num_classes)
    algo, grad_fn = get_algorithm("fedavg"), make_grad_fn(model)
    hp = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}
    engines = [cls.stacked(algo, model, grad_fn, x, y, [0], [clients], local)
               for cls in (SequentialClients, VectorizedClients)]
    server = algo.server_init(model.init(np.random.default_rng(0), dtype=torch.float64), {}, len(clients))
    expected = 0
    for t in range(1, 5):
        sampled = sample_clients("uniform", len(clients), 0.5, 0, t)
        expected += sum(local_work(work, 0, t, int(k)) for k in sampled)
        for eng in engines:
            eng.train_round(server, sampled, hp, t)
    seq, vec = engines
    assert seq.real_steps == seq.executed_steps == expected == vec.real_steps
    assert vec.executed_steps >= expected
    assert vec.padding_efficiency == pytest.approx(expected / vec.executed_steps)


#: Other plans than the engine's (on CPU: one group, chunked; finished clients leave their chunk):
#: (step_overhead, min_efficiency, chunk_size) for plan_groups.
PLANS = {"group per step count": (0.0, 0.0, None), "CUDA's plan, floor 0.9": (256.0, 0.9, None),
         "chunks of 3": (math.inf, 0.0, 3), "floor 1, chunks of 2": (4.0, 1.0, 2)}


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_grouping_changes_no_result(data, monkeypatch, plan):  # noqa: F811
    """The grouping and chunking of clients changes no number beyond float rounding: the engine's
    plan and another (one group per step count; the floor-0.9 plan of CUDA; other chunk sizes)
    give the same parameters, server and client states and metrics rows to 1e-12 relative
    (float64; observed ≤ 2e-16: a vmapped product over another number of clients, or a lone
    client's unbatched one, may round differently). SCAFFOLD (client state), drawn epochs ×
    unequal client sizes (many distinct step counts), partial participation."""
    ds, part = data
    local = _spec("scaffold")["local"] | {"epochs": {**WORK, "per": "round"}, "steps": None}
    spec = _spec("scaffold", local=local, rounds=3)
    rows_d, info_d = train(spec, ds, part, device="cpu", engine="vectorized")
    overhead, floor, chunk = PLANS[plan]
    plans = []

    def other_plan(steps, chunk_size, step_overhead=256.0, min_efficiency=0.0):
        plans.append(plan_groups(steps, chunk or chunk_size, overhead, floor))
        return plans[-1]

    monkeypatch.setattr(vectorized, "plan_groups", other_plan)
    rows_o, info_o = train(spec, ds, part, device="cpu", engine="vectorized")
    assert any(len(p) > 1 for p in plans)  # another grouping indeed (the engine's is one chunk here)
    assert info_d["padding_efficiency"] == info_o["padding_efficiency"] == 1.0
    for key in ("params", "server_state", "client_states"):
        assert _rel(info_d[key], info_o[key]) <= 1e-12, key
    for a, b in zip(rows_d, rows_o, strict=True):
        assert {k: v for k, v in a.items() if not isinstance(v, float)} == \
            {k: v for k, v in b.items() if not isinstance(v, float)}
        for k in ("train_loss", "test_loss", "test_accuracy"):
            assert b[k] == pytest.approx(a[k], rel=1e-12), k


@pytest.mark.parametrize("device", DEVICES)
def test_every_round_keeps_the_padding_floor(data, device):  # noqa: F811
    """τ_i ~ Uniform{1..4} epochs over unequal clients, where one group would pad below the floor
    (checked): eager rounds (CPU) execute exactly the real client-steps (efficiency 1); graphed
    rounds (CUDA) keep every round's padding efficiency ≥ PADDING_EFFICIENCY_FLOOR."""
    ds, part = data
    local = {"epochs": {**WORK, "per": "round"}, "steps": None, "batch_size": 7}
    clients = client_indices(part, "train")
    x = torch.as_tensor(ds.x_train, dtype=torch.float64, device=device)
    y = torch.as_tensor(ds.y_train, dtype=torch.int64, device=device)
    model = build_model({"name": "logreg"}, ds.feature_shape, ds.num_classes)
    algo, grad_fn = get_algorithm("fedavg"), make_grad_fn(model)
    hp = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}
    params = {k: v.to(device) for k, v in model.init(np.random.default_rng(0), dtype=torch.float64).items()}
    server = algo.server_init(params, {}, len(clients))
    eng = VectorizedClients(algo, model, grad_fn, x, y, clients, local, 0)
    for t in range(1, 6):
        sampled = sample_clients("uniform", len(clients), 0.7, 0, t)
        steps = [len(b) for b in eng._round_batches(t, sampled).values()]
        assert sum(steps) < PADDING_EFFICIENCY_FLOOR * max(steps) * len(steps)  # one group would
        executed, real = eng.executed_steps, eng.real_steps
        eng.train_round(server, sampled, hp, t)
        assert eng.real_steps - real == sum(steps)
        if device == "cpu":
            assert eng.executed_steps - executed == sum(steps)
        else:
            assert sum(steps) >= PADDING_EFFICIENCY_FLOOR * (eng.executed_steps - executed)


def test_stacked_cells_with_drawn_local_work(data, monkeypatch):  # noqa: F811
    """Cells of different learning rates and momenta stacked in one engine, τ_i drawn per round:
    chunks mix the cells (per-client hyperparameter tensors) and their clients leave at unequal
    steps; each cell equals itself trained alone by the reference (float64, 1e-10 relative)."""
    ds, part = data
    local = _spec("fednova")["local"] | {"epochs": {**WORK, "per": "round"}, "steps": None}
    specs = [_spec("fednova", local=local | {"lr": lr}, seed=seed, hparams={"server_lr": 0.8, "momentum": m})
             | {"algorithm": f"fednova,lr={lr}"} for lr, seed, m in ((0.1, 0, 0.5), (0.05, 1, 0.0), (0.2, 0, 0.9))]
    seen = {"mixed and unequal": 0}
    original = VectorizedClients._retiring_steps

    def recording(self, state, loss_sum, idx, y, aug, ks, hp, varying, *rest):
        seen["mixed and unequal"] += varying is not None and len(set(ks.tolist())) > 1
        return original(self, state, loss_sum, idx, y, aug, ks, hp, varying, *rest)

    monkeypatch.setattr(VectorizedClients, "_retiring_steps", recording)
    stacked = train_seeds(specs, ds, [part] * len(specs), device="cpu")
    assert seen["mixed and unequal"] > 0
    for spec, (rows, info) in zip(specs, stacked):
        ref_rows, ref_info = train(spec, ds, part, device="cpu", engine="sequential")
        assert _rel(ref_info["params"], info["params"]) <= 1e-10
        assert _rel(ref_info["server_state"], info["server_state"]) <= 1e-10
        for a, b in zip(ref_rows, rows, strict=True):
            assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-10)
            assert b["test_accuracy"] == a["test_accuracy"]
