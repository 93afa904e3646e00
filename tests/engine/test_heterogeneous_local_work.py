"""Heterogeneous local work (τ_i drawn per client: ``local.epochs`` / ``local.steps`` a
distribution, :func:`fedbench.engine.batches.local_work`) through both engines.

- the engines agree (float64, 1e-10 relative) for FedAvg, FedNova and SCAFFOLD with τ_i ~
  Uniform{low..high} epochs or steps, drawn per round or fixed per client, under partial
  participation (uniform and Bernoulli), chunked or not;
- every client really runs its drawn number of steps: the engines' real step counts equal
  Σ_rounds Σ_sampled τ_i^(t)·(steps per unit), and the vectorized engine's padding efficiency is
  real / executed.
"""

import numpy as np
import pytest
import torch
from test_vectorized import SAMPLING, _compare, _spec, data  # noqa: F401  (data: the fixture)

from fedbench.algorithms import get_algorithm
from fedbench.data.partition import client_indices
from fedbench.engine.batches import local_work
from fedbench.engine.sampling import sample_clients
from fedbench.engine.sequential import SequentialClients
from fedbench.engine.vectorized import VectorizedClients
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
    assert 0.0 < info_v["padding_efficiency"] < 1.0  # unequal τ_i: padded steps


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
