"""SCAFFOLD (option II): eqs. (5)-(6) of Kim et al. (FedElasticNet, arXiv 2022) and the control-variate invariants."""

import numpy as np
import pytest
import torch

from fedbench.algorithms import fedavg, get_algorithm, scaffold
from fedbench.engine.clients.local import train_client
from fedbench.tree import tree_add, tree_mean, tree_zeros_like

HP = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}


def test_first_round_is_fedavg_with_equal_weights(params0, equal_clients, grad_fn, rounds_runner, trees_equal):
    a, _, ha = rounds_runner(fedavg, params0, equal_clients, HP, grad_fn, rounds=1, epochs=2, record=True)
    s, cs, hs = rounds_runner(scaffold, params0, equal_clients, {**HP, "server_lr": 1.0}, grad_fn, rounds=1, epochs=2,
                              record=True)
    trees_equal(a["params"], s["params"])  # bitwise
    for ma, ms in zip(ha[0]["messages"], hs[0]["messages"]):
        trees_equal(ma["delta"], ms["delta"])


def test_server_uses_unweighted_mean_and_server_lr(params0, unequal_clients, grad_fn, rounds_runner):
    _, _, h = rounds_runner(scaffold, params0, unequal_clients, {**HP, "server_lr": 1.7}, grad_fn, rounds=2,
                            sampled=lambda t: [0, 1, 3], record=True)
    for r in h:
        mean_delta = tree_mean([m["delta"] for m in r["messages"]])
        for k in params0:
            torch.testing.assert_close(r["server"]["params"][k], r["prev"]["params"][k] + 1.7 * mean_delta[k],
                                       rtol=0, atol=1e-14)


@pytest.mark.parametrize("sampled", [None, lambda t: [(t - 1) % 4, (t + 1) % 4]])
def test_server_c_is_mean_of_client_cs(params0, unequal_clients, grad_fn, rounds_runner, sampled):
    s, cs, h = rounds_runner(scaffold, params0, unequal_clients, {**HP, "weight_decay": 1e-2}, grad_fn, rounds=5,
                             sampled=sampled, record=True)
    m = len(unequal_clients)
    for r in h:
        all_c = [r["client_states"][k]["c"] if k in r["client_states"] else tree_zeros_like(params0) for k in range(m)]
        mean_c = tree_mean(all_c)
        for k in params0:
            torch.testing.assert_close(r["server"]["c"][k], mean_c[k], rtol=0, atol=1e-12)
    assert max(float(v.abs().max()) for v in s["c"].values()) > 1e-3  # non-trivial


def test_eq6_and_option_two_is_mean_gradient(params0, unequal_clients, grad_fn):
    # Round 1 (c = c_k = 0), full-batch steps: c_k^1 = (θ⁰ − θ_k)/(Kη) = (1/K) Σ_i ∇L_k(θ_i).
    x, y = unequal_clients[0]
    K, lr = 6, 0.05
    server = scaffold.server_init(params0, HP, 4)
    msg, cstate, _ = train_client(scaffold, server, None, x, y, [np.arange(len(y))] * K, {**HP, "lr": lr}, grad_fn)
    theta, grads = params0, []
    for _ in range(K):
        g, _ = grad_fn(theta, x, y)
        grads.append(g)
        theta = {k: theta[k] - lr * g[k] for k in theta}
    mean_g = tree_mean(grads)
    for k in params0:
        torch.testing.assert_close(cstate["c"][k], mean_g[k], rtol=0, atol=1e-13)
        torch.testing.assert_close(msg["delta_c"][k], cstate["c"][k], rtol=0, atol=0)
    assert set(msg) == {"delta", "delta_c"}


def test_local_step_uses_corrected_direction(params0, unequal_clients, grad_fn):
    rng = np.random.default_rng(5)
    c = {k: torch.from_numpy(rng.normal(size=v.shape)) for k, v in params0.items()}
    c_k = {k: torch.from_numpy(rng.normal(size=v.shape)) for k, v in params0.items()}
    server = {**scaffold.server_init(params0, HP, 4), "c": c}
    x, y = unequal_clients[3]
    batches = [np.arange(0, 6), np.arange(6, 15), np.arange(3, 9)]
    lr = 0.07
    msg, cstate, _ = train_client(scaffold, server, {"c": c_k}, x, y, batches, {**HP, "lr": lr}, grad_fn)
    theta = params0
    for b in batches:
        g, _ = grad_fn(theta, x[b], y[b])
        theta = {k: theta[k] - lr * (g[k] - c_k[k] + c[k]) for k in theta}
    expected_c = {k: c_k[k] - c[k] + (params0[k] - theta[k]) / (len(batches) * lr) for k in theta}
    for k in theta:
        torch.testing.assert_close(tree_add(params0, msg["delta"])[k], theta[k], rtol=0, atol=1e-14)
        torch.testing.assert_close(cstate["c"][k], expected_c[k], rtol=0, atol=1e-12)
        torch.testing.assert_close(msg["delta_c"][k], expected_c[k] - c_k[k], rtol=0, atol=1e-12)


def test_zero_local_steps_keep_client_state(params0, unequal_clients, grad_fn):
    c_k = {k: torch.ones_like(v) for k, v in params0.items()}
    server = scaffold.server_init(params0, HP, 4)
    x, y = unequal_clients[0]
    msg, cstate, _ = train_client(scaffold, server, {"c": c_k}, x, y, [], HP, grad_fn)
    assert all(torch.equal(cstate["c"][k], c_k[k]) for k in c_k)
    assert all(not v.any() for t in msg.values() for v in t.values())


def test_full_batch_scaffold_reaches_global_stationary_point(params0, unequal_clients, grad_fn, rounds_runner):
    # Deterministic local GD, full participation: SCAFFOLD's fixed point is a stationary point of
    # (1/m) Σ_k L_k (client drift removed); FedAvg's is not on heterogeneous clients.
    wd = 0.1

    def global_grad_norm(p):
        g = tree_mean([grad_fn(p, x, y)[0] for x, y in unequal_clients])
        return max(float((g[k] + wd * p[k]).abs().max()) for k in p)

    hp = {"lr": 0.2, "weight_decay": wd, "clip_norm": None}
    big = 10**6  # batch size ≥ n_k: every step is full batch
    s, _, _ = rounds_runner(scaffold, params0, unequal_clients, hp, grad_fn, rounds=40, steps=10, batch_size=big)
    a, _, _ = rounds_runner(fedavg, params0, unequal_clients, hp, grad_fn, rounds=40, steps=10, batch_size=big)
    assert global_grad_norm(s["params"]) < 1e-4
    assert global_grad_norm(a["params"]) > 1e-2


def test_surface():
    assert get_algorithm("scaffold") is scaffold and scaffold.HPARAMS == {"server_lr": 1.0}
    s = scaffold.server_init({"w": torch.zeros(2)}, {}, 3)
    assert set(scaffold.broadcast(s)) == {"params", "c"} and s["num_clients"] == 3
    with pytest.raises(ValueError):
        scaffold.server_init({"w": torch.zeros(2)}, {}, 0)
