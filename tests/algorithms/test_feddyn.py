"""FedDyn: eqs. (8)-(9) of Kim et al. (FedElasticNet, arXiv 2022), Lemma B.2 (h = mean g_k), and the
reference code's step."""

import numpy as np
import pytest
import torch

from fedbench.algorithms import feddyn, get_algorithm
from fedbench.engine.clients.local import train_client
from fedbench.tree import tree_mean, tree_sub, tree_zeros_like


def _max_abs(tree):
    return max(float(v.abs().max()) for v in tree.values())


def test_converged_client_satisfies_first_order_condition(params0, unequal_clients, grad_fn):
    alpha, lr, steps = 0.5, 0.2, 300
    hp = {"lr": lr, "alpha": alpha, "weight_decay": 0.0, "clip_norm": None}
    server = feddyn.server_init(params0, hp, 4)
    states = {}
    for _round in range(2):
        msgs = []
        for k in (0, 2):
            x, y = unequal_clients[k]
            g_prev = states[k]["g"] if k in states else tree_zeros_like(params0)
            batches = [np.arange(len(y))] * steps
            msg, states[k], _ = train_client(feddyn, server, states.get(k), x, y, batches, hp, grad_fn)
            theta_k = msg["params"]
            grad_k, _ = grad_fn(theta_k, x, y)
            # (9): ∇L_k(θ_k^t) − g_k^{t−1} + α(θ_k^t − θ^{t−1}) = 0 at the local optimum of (8) ...
            residual = {n: grad_k[n] - g_prev[n] + alpha * (theta_k[n] - server["params"][n]) for n in grad_k}
            assert _max_abs(residual) < 1e-10
            # ... so the new gradient state is the local gradient at θ_k^t.
            assert _max_abs(tree_sub(states[k]["g"], grad_k)) < 1e-10
            msgs.append(msg)
        assert _round == 0 or _max_abs(g_prev) > 1e-2  # round 2 really had a non-zero g_k
        server = feddyn.server_update(server, msgs, torch.tensor([12.0, 9.0], dtype=torch.float64), hp)


@pytest.mark.parametrize("sampled", [None, lambda t: [t % 4, (t + 2) % 4, (t * 3) % 4]])
def test_h_is_mean_of_client_gradient_states(params0, unequal_clients, grad_fn, rounds_runner, sampled):
    alpha = 0.05
    hp = {"lr": 0.1, "alpha": alpha, "weight_decay": 1e-3, "clip_norm": 10.0}
    _, _, hist = rounds_runner(feddyn, params0, unequal_clients, hp, grad_fn, rounds=5, sampled=sampled, record=True)
    m = len(unequal_clients)
    deltas_sum = [tree_zeros_like(params0) for _ in range(m)]
    for r in hist:
        theta_prev, h = r["prev"]["params"], r["server"]["h"]
        for k, msg in zip(r["ids"], r["messages"]):
            assert set(msg) == {"params"}
            deltas_sum[k] = {n: deltas_sum[k][n] + msg["params"][n] - theta_prev[n] for n in theta_prev}
        all_g = [r["client_states"][k]["g"] if k in r["client_states"] else tree_zeros_like(params0) for k in range(m)]
        mean_g = tree_mean(all_g)
        for n in params0:
            # Lemma B.2: h^t = (1/m) Σ_{k∈[m]} g_k^t.
            torch.testing.assert_close(h[n], mean_g[n], rtol=0, atol=1e-12)
            # Server rule: θ^t = mean_{P_t} θ_k − h^t/α, i.e. γ^t = θ^t + h^t/α.
            gamma = tree_mean([msg["params"] for msg in r["messages"]])
            torch.testing.assert_close(r["server"]["params"][n], gamma[n] - h[n] / alpha, rtol=0, atol=1e-12)
            # FedDyn-code form: −h/α is the mean over all clients of their accumulated updates.
            torch.testing.assert_close(-h[n] / alpha, sum(d[n] for d in deltas_sum) / m, rtol=0, atol=1e-12)
    assert _max_abs(hist[-1]["server"]["h"]) > 1e-4


def test_local_step_matches_feddyn_reference_code(params0, unequal_clients, grad_fn):
    # The reference code's train_feddyn_mdl: loss = CE + α Σ θ·(s_k − θ^{t−1}) with s_k = −g_k/α,
    # clip_grad_norm_ on that loss's gradient, then SGD(weight_decay = α + wd).
    alpha, lr, wd, clip = 0.3, 0.1, 1e-3, 0.2
    rng = np.random.default_rng(7)
    g_k = {n: torch.from_numpy(rng.normal(size=v.shape)) for n, v in params0.items()}
    server = feddyn.server_init(params0, {"alpha": alpha}, 4)
    x, y = unequal_clients[1]
    batches = [np.arange(0, 8), np.arange(8, 20), np.arange(4, 12)]
    hp = {"lr": lr, "alpha": alpha, "weight_decay": wd, "clip_norm": clip}
    msg, _, _ = train_client(feddyn, server, {"g": g_k}, x, y, batches, hp, grad_fn)

    net = torch.nn.Linear(5, 3).double()
    net.load_state_dict({"weight": params0["weight"].clone(), "bias": params0["bias"].clone()})
    opt = torch.optim.SGD(net.parameters(), lr=lr, weight_decay=alpha + wd)
    s_k = {n: -g_k[n] / alpha for n in g_k}
    for b in batches:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x[b]), y[b])
        loss = loss + alpha * sum((p * (s_k[n] - params0[n])).sum() for n, p in net.named_parameters())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
        opt.step()
    for n, p in net.named_parameters():
        torch.testing.assert_close(msg["params"][n], p.detach(), rtol=0, atol=1e-13)


def test_local_rule_without_clipping(params0, unequal_clients, grad_fn):
    alpha, lr = 0.2, 0.15
    rng = np.random.default_rng(8)
    g_k = {n: torch.from_numpy(rng.normal(size=v.shape)) for n, v in params0.items()}
    server = feddyn.server_init(params0, {"alpha": alpha}, 4)
    x, y = unequal_clients[0]
    batches = [np.arange(0, 6), np.arange(6, 12)]
    msg, state, _ = train_client(feddyn, server, {"g": g_k}, x, y, batches, {"lr": lr, "alpha": alpha}, grad_fn)
    theta = params0
    for b in batches:
        g, _ = grad_fn(theta, x[b], y[b])
        theta = {n: theta[n] - lr * (g[n] - g_k[n] + alpha * (theta[n] - params0[n])) for n in theta}
    for n in theta:
        torch.testing.assert_close(msg["params"][n], theta[n], rtol=0, atol=1e-14)
        torch.testing.assert_close(state["g"][n], g_k[n] - alpha * (theta[n] - params0[n]), rtol=0, atol=1e-14)


def test_surface_and_validation():
    assert get_algorithm("feddyn") is feddyn and feddyn.HPARAMS == {"alpha": 0.01}
    s = feddyn.server_init({"w": torch.zeros(2)}, {}, 3)
    assert set(feddyn.broadcast(s)) == {"params"} and s["num_clients"] == 3
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="alpha"):
            feddyn.server_init({"w": torch.zeros(2)}, {"alpha": bad}, 3)
