"""The sequential reference engine behind the engines' one interface (train_cells, stacked)."""

import numpy as np
import pytest
import torch
from test_loop import _dataset

from fedbench.algorithms import get_algorithm
from fedbench.data.partition import client_indices, make_partition
from fedbench.engine.clients.sampling import sample_clients
from fedbench.engine.clients.sequential import SequentialClients
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.models import build_model, make_grad_fn
from fedbench.rng import generator

LOCAL = {"epochs": 1, "steps": None, "batch_size": 10}
HP = {"server_lr": 1.0, "lr": 0.1, "weight_decay": 0.0, "clip_norm": None}
SEEDS = [3, 4]


@pytest.fixture(scope="module")
def setup():
    ds = _dataset()
    model = build_model({"name": "logreg"}, ds.feature_shape, ds.num_classes)
    x = torch.as_tensor(ds.x_train, dtype=torch.float64)
    y = torch.as_tensor(ds.y_train, dtype=torch.int64)
    clients = [client_indices(make_partition(ds, {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 6}, seed=s),
                              "train") for s in SEEDS]
    return model, x, y, clients


def _servers(algo, model, clients):
    return [algo.server_init(model.init(generator(s, 0, -1, "init"), dtype=torch.float64), {}, len(c))
            for s, c in zip(SEEDS, clients)]


def _equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else _equal(a[k], b[k])
                                        for k in a)


def test_train_cells_equals_train_round_of_each_cell_alone(setup):
    model, x, y, clients = setup
    algo = get_algorithm("scaffold")  # persistent client state: each cell must keep its own
    grad_fn = make_grad_fn(model)
    stacked = SequentialClients.stacked(algo, model, grad_fn, x, y, SEEDS, clients, LOCAL, chunk_size=4)
    alone = [SequentialClients(algo, grad_fn, [(x[torch.as_tensor(ix)], y[torch.as_tensor(ix)]) for ix in c], c,
                               LOCAL, s) for s, c in zip(SEEDS, clients)]
    servers_s, servers_a = _servers(algo, model, clients), _servers(algo, model, clients)
    for t in (1, 2, 3):
        sampled = [sample_clients("uniform", len(c), 0.5, s, t) for s, c in zip(SEEDS, clients)]
        cells = [1] if t == 2 else [0, 1]  # a round where cell 0 sits out (diverged, or resumed later)
        results = stacked.train_cells([servers_s[c] for c in cells], [sampled[c] for c in cells], [HP] * len(cells), t,
                                     cells=cells)
        assert len(results) == len(cells)
        for c, res in zip(cells, results):
            ref = alone[c].train_round(servers_a[c], sampled[c], HP, t)
            assert res.losses == ref.losses
            assert len(res.messages) == len(sampled[c])
            assert all(_equal(m, r) for m, r in zip(res.messages, ref.messages))
            weights = torch.as_tensor(np.array([len(clients[c][k]) for k in sampled[c]], dtype=np.float64))
            servers_s[c] = algo.server_update(servers_s[c], res.messages, weights, HP)
            servers_a[c] = algo.server_update(servers_a[c], ref.messages, weights, HP)
    for c in range(len(SEEDS)):
        assert stacked.client_states(c).keys() == alone[c].client_states().keys()
        assert all(_equal(stacked.client_states(c)[k], v) for k, v in alone[c].client_states().items())
    assert stacked.padding_efficiency == 1.0


def test_both_engines_build_and_train_alike(setup):
    model, x, y, clients = setup
    algo = get_algorithm("fedavg")
    grad_fn = make_grad_fn(model)
    engines = [cls.stacked(algo, model, grad_fn, x, y, SEEDS, clients, LOCAL, chunk_size=4)
               for cls in (SequentialClients, VectorizedClients)]
    servers = _servers(algo, model, clients)
    sampled = [sample_clients("uniform", len(c), 0.5, s, 1) for s, c in zip(SEEDS, clients)]
    seq, vec = (e.train_cells(servers, sampled, [HP] * len(servers), 1) for e in engines)
    for a, b in zip(seq, vec):
        assert np.allclose(a.losses, b.losses, rtol=1e-12, atol=0)
        for ma, mb in zip(a.messages, b.messages):
            for k, v in ma["delta"].items():
                assert torch.allclose(v, mb["delta"][k], rtol=1e-10, atol=1e-14)


def test_stacked_and_train_cells_check_their_lengths(setup):
    model, x, y, clients = setup
    algo = get_algorithm("fedavg")
    with pytest.raises(ValueError, match="one of each per cell"):
        SequentialClients.stacked(algo, model, make_grad_fn(model), x, y, SEEDS, clients[:1], LOCAL)
    eng = SequentialClients.stacked(algo, model, make_grad_fn(model), x, y, SEEDS, clients, LOCAL)
    with pytest.raises(ValueError, match="one of each per cell"):
        eng.train_cells(_servers(algo, model, clients), [np.arange(2)], [HP], 1)
    with pytest.raises(ValueError, match="one of each per cell"):
        eng.train_cells(_servers(algo, model, clients), [np.arange(2)] * 2, [HP], 1)
