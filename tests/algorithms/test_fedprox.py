"""FedProx: μ = 0 is FedAvg; the local direction is ∇L + μ(θ − θ^{t−1}); its fixed point is the prox solution."""

import numpy as np
import torch

from fedbench.algorithms import fedavg, fedprox, get_algorithm
from fedbench.engine.clients.local import train_client
from fedbench.tree import tree_add, tree_axpy, tree_sub


def test_mu_zero_is_fedavg(params0, unequal_clients, grad_fn, rounds_runner, trees_equal):
    hp = {"lr": 0.1, "weight_decay": 1e-3, "clip_norm": 0.5}
    kw = dict(rounds=4, sampled=lambda t: [0, 2, 3] if t % 2 else [0, 1, 2], epochs=2)
    a, _, ha = rounds_runner(fedavg, params0, unequal_clients, hp, grad_fn, record=True, **kw)
    p, _, hp_ = rounds_runner(fedprox, params0, unequal_clients, {**hp, "mu": 0.0}, grad_fn, record=True, **kw)
    trees_equal(a["params"], p["params"])  # bitwise
    for x, y in zip(ha, hp_):
        for ma, mp in zip(x["messages"], y["messages"]):
            trees_equal(ma["delta"], mp["delta"])


def test_local_step_adds_proximal_term(params0, unequal_clients, grad_fn):
    mu, lr = 0.7, 0.05
    x, y = unequal_clients[1]
    batches = [np.arange(0, 5), np.arange(5, 12)]
    hp = {"lr": lr, "mu": mu}
    server = fedprox.server_init(params0, hp, 4)
    msg, cstate, _ = train_client(fedprox, server, None, x, y, batches, hp, grad_fn)
    theta = params0
    for b in batches:
        g, _ = grad_fn(theta, x[b], y[b])
        theta = {k: theta[k] - lr * (g[k] + mu * (theta[k] - params0[k])) for k in theta}
    assert cstate is None and set(msg) == {"delta"}
    for k in theta:
        torch.testing.assert_close(tree_add(params0, msg["delta"])[k], theta[k], rtol=0, atol=1e-14)


def test_local_solution_satisfies_prox_optimality(params0, unequal_clients, grad_fn):
    # Full-batch local GD to convergence: ∇L_k(θ_k) + μ(θ_k − θ^{t−1}) = 0.
    mu = 0.5
    x, y = unequal_clients[2]
    hp = {"lr": 0.3, "mu": mu}
    server = fedprox.server_init(params0, hp, 4)
    msg, _, _ = train_client(fedprox, server, None, x, y, [np.arange(len(y))] * 400, hp, grad_fn)
    theta_k = tree_add(params0, msg["delta"])
    g, _ = grad_fn(theta_k, x, y)
    residual = tree_axpy(mu, tree_sub(theta_k, params0), g)
    assert max(float(v.abs().max()) for v in residual.values()) < 1e-10
    assert max(float(v.abs().max()) for v in msg["delta"].values()) > 1e-3  # it did move


def test_large_mu_keeps_clients_closer(params0, unequal_clients, grad_fn, rounds_runner):
    norms = []
    for mu in (0.0, 5.0):
        _, _, h = rounds_runner(fedprox, params0, unequal_clients, {"lr": 0.1, "mu": mu}, grad_fn, rounds=1,
                                epochs=3, record=True)
        norms.append(sum(float(torch.linalg.vector_norm(v)) for m in h[0]["messages"] for v in m["delta"].values()))
    assert norms[1] < 0.7 * norms[0]


def test_surface():
    assert get_algorithm("fedprox") is fedprox and fedprox.HPARAMS == {"mu": 0.01}
    s = fedprox.server_init({"w": torch.zeros(2)}, {}, 3)
    assert set(fedprox.broadcast(s)) == {"params"}
