"""FedAvg: one local step equals torch SGD; aggregation is the n_k-weighted model average."""

import numpy as np
import pytest
import torch

from fedbench.algorithms import fedavg, get_algorithm
from fedbench.engine.clients.local import train_client
from fedbench.models import build_model, make_grad_fn
from fedbench.tree import tree_add, tree_clone, tree_weighted_mean


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-14), (torch.float32, 1e-6)])
def test_one_client_one_step_is_one_sgd_step(dtype, atol):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 7), torch.nn.ReLU(),
                              torch.nn.Linear(7, 4)).to(dtype)
    sd = net.state_dict()
    params = {"fc1.weight": sd["1.weight"].clone(), "fc1.bias": sd["1.bias"].clone(),
              "fc2.weight": sd["3.weight"].clone(), "fc2.bias": sd["3.bias"].clone()}
    model = build_model({"name": "mlp", "hidden": [7]}, (3, 4), 4)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(9, 3, 4))).to(dtype)
    y = torch.from_numpy(rng.integers(0, 4, size=9))

    opt = torch.optim.SGD(net.parameters(), lr=0.2)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()

    hp = {"lr": 0.2, "weight_decay": 0.0, "clip_norm": None}
    server = fedavg.server_init(params, hp, 1)
    msg, cstate, loss = train_client(fedavg, server, None, x, y, [np.arange(9)], hp, make_grad_fn(model))
    server = fedavg.server_update(server, [msg], torch.tensor([9.0], dtype=torch.float64), hp)
    assert cstate is None and set(msg) == {"delta"} and np.isfinite(loss)
    ref = net.state_dict()
    for ours, theirs in [("fc1.weight", "1.weight"), ("fc1.bias", "1.bias"),
                         ("fc2.weight", "3.weight"), ("fc2.bias", "3.bias")]:
        torch.testing.assert_close(server["params"][ours], ref[theirs], rtol=0, atol=atol)


def test_aggregation_is_weighted_model_average(params0, unequal_clients, grad_fn, rounds_runner):
    hp = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}
    _, _, hist = rounds_runner(fedavg, params0, unequal_clients, hp, grad_fn, rounds=3,
                               sampled=lambda t: [0, 2, 3] if t % 2 else [1, 3], record=True)
    for h in hist:
        theta_prev = h["prev"]["params"]
        n = [len(unequal_clients[k][1]) for k in h["ids"]]
        thetas = [tree_add(theta_prev, m["delta"]) for m in h["messages"]]
        expected = {k: sum(nk * t[k] for nk, t in zip(n, thetas)) / sum(n) for k in theta_prev}
        for k in expected:
            torch.testing.assert_close(h["server"]["params"][k], expected[k], rtol=0, atol=1e-13)
        # The weighted mean of deltas is what moved the model.
        mean_delta = tree_weighted_mean([m["delta"] for m in h["messages"]], n)
        assert all(torch.equal(h["server"]["params"][k], theta_prev[k] + mean_delta[k]) for k in theta_prev)


def test_training_reduces_loss_and_is_pure(params0, unequal_clients, grad_fn, model, rounds_runner):
    hp = {"lr": 0.2, "weight_decay": 0.0, "clip_norm": None}
    before = tree_clone(params0)
    server, cstates, _ = rounds_runner(fedavg, params0, unequal_clients, hp, grad_fn, rounds=5)
    assert all(torch.equal(params0[k], before[k]) for k in params0)  # inputs untouched
    assert cstates == {}
    x = torch.cat([c[0] for c in unequal_clients])
    y = torch.cat([c[1] for c in unequal_clients])

    def loss(p):
        return float(torch.nn.functional.cross_entropy(model.apply(p, x), y))

    assert loss(server["params"]) < loss(params0) - 0.05


def test_zero_local_steps_leave_model_unchanged(params0, unequal_clients, grad_fn, rounds_runner):
    hp = {"lr": 0.1}
    server, _, _ = rounds_runner(fedavg, params0, unequal_clients, hp, grad_fn, rounds=2, epochs=0)
    assert all(torch.equal(server["params"][k], params0[k]) for k in params0)


def test_protocol_surface():
    assert get_algorithm("fedavg") is fedavg and fedavg.HPARAMS == {}
    p = {"w": torch.zeros(3)}
    s = fedavg.server_init(p, {}, 5)
    assert set(fedavg.broadcast(s)) == {"params"}
