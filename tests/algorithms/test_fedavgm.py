"""FedAvgM: heavy-ball server momentum on the n_k-weighted mean client update."""

import numpy as np
import torch

from fedbench.algorithms import fedavg, fedavgm, get_algorithm
from fedbench.tree import tree_weighted_mean

HP = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}


def test_no_momentum_unit_server_lr_is_fedavg(params0, unequal_clients, grad_fn, rounds_runner, trees_equal):
    kw = dict(rounds=4, sampled=lambda t: [0, 1, 3] if t % 2 else [1, 2])
    a, _, _ = rounds_runner(fedavg, params0, unequal_clients, HP, grad_fn, **kw)
    m, _, _ = rounds_runner(fedavgm, params0, unequal_clients, {**HP, "momentum": 0.0, "server_lr": 1.0}, grad_fn, **kw)
    trees_equal(a["params"], m["params"])  # bitwise


def _messages(rng, n):
    return [{"delta": {"w": torch.from_numpy(rng.normal(size=(3, 2))), "b": torch.from_numpy(rng.normal(size=2))}}
            for _ in range(n)]


def test_momentum_recursion_matches_closed_form():
    rng = np.random.default_rng(0)
    p0 = {"w": torch.from_numpy(rng.normal(size=(3, 2))), "b": torch.from_numpy(rng.normal(size=2))}
    hp = {"momentum": 0.9, "server_lr": 0.5}
    s = fedavgm.server_init(p0, hp, 10)
    theta, v = {k: t.clone() for k, t in p0.items()}, {k: torch.zeros_like(t) for k, t in p0.items()}
    for _ in range(4):
        msgs, w = _messages(rng, 3), torch.tensor([5.0, 1.0, 2.0], dtype=torch.float64)
        s = fedavgm.server_update(s, msgs, w, hp)
        dbar = {k: sum(wi * m["delta"][k] for wi, m in zip(w.tolist(), msgs)) / 8.0 for k in p0}
        v = {k: 0.9 * v[k] + dbar[k] for k in p0}
        theta = {k: theta[k] + 0.5 * v[k] for k in p0}
    for k in p0:
        torch.testing.assert_close(s["params"][k], theta[k], rtol=0, atol=1e-13)
        torch.testing.assert_close(s["momentum"][k], v[k], rtol=0, atol=1e-13)


def test_constant_update_geometric_growth():
    # A constant Δ̄ = d gives θ_T = θ_0 + η_s d Σ_{t=1..T} (1 − β^t)/(1 − β).
    p0 = {"w": torch.zeros(2, dtype=torch.float64)}
    d = {"delta": {"w": torch.tensor([1.0, -2.0], dtype=torch.float64)}}
    beta, T = 0.5, 5
    s = fedavgm.server_init(p0, {}, 1)
    for _ in range(T):
        s = fedavgm.server_update(s, [d], torch.ones(1, dtype=torch.float64), {"momentum": beta, "server_lr": 1.0})
    factor = sum((1 - beta**t) / (1 - beta) for t in range(1, T + 1))
    torch.testing.assert_close(s["params"]["w"], factor * d["delta"]["w"], rtol=1e-14, atol=0)


def test_dampening_is_ema_form_and_nesterov():
    rng = np.random.default_rng(1)
    p0 = {"w": torch.zeros(4, dtype=torch.float64)}
    deltas = [torch.from_numpy(rng.normal(size=4)) for _ in range(3)]
    one = torch.ones(1, dtype=torch.float64)
    beta = 0.8
    s_ema = fedavgm.server_init(p0, {}, 1)
    s_nes = fedavgm.server_init(p0, {}, 1)
    m, theta_ema = torch.zeros(4, dtype=torch.float64), p0["w"].clone()
    v, theta_nes = torch.zeros(4, dtype=torch.float64), p0["w"].clone()
    for d in deltas:
        msg = [{"delta": {"w": d}}]
        s_ema = fedavgm.server_update(s_ema, msg, one, {"momentum": beta, "dampening": beta, "server_lr": 2.0})
        s_nes = fedavgm.server_update(s_nes, msg, one, {"momentum": beta, "nesterov": True, "server_lr": 2.0})
        m = beta * m + (1 - beta) * d          # Elastic Aggregation's printed EMA
        theta_ema = theta_ema + 2.0 * m
        v = beta * v + d                       # torch SGD(nesterov=True) form
        theta_nes = theta_nes + 2.0 * (d + beta * v)
    torch.testing.assert_close(s_ema["params"]["w"], theta_ema, rtol=0, atol=1e-14)
    torch.testing.assert_close(s_nes["params"]["w"], theta_nes, rtol=0, atol=1e-14)


def test_surface_and_purity():
    assert get_algorithm("fedavgm") is fedavgm
    assert fedavgm.HPARAMS["server_lr"] == 1.0 and fedavgm.HPARAMS["momentum"] == 0.9
    p0 = {"w": torch.ones(2, dtype=torch.float64)}
    s = fedavgm.server_init(p0, {}, 3)
    assert set(fedavgm.broadcast(s)) == {"params"}
    msgs = [{"delta": {"w": torch.ones(2, dtype=torch.float64)}}]
    s2 = fedavgm.server_update(s, msgs, torch.ones(1, dtype=torch.float64), {})
    assert torch.equal(s["momentum"]["w"], torch.zeros(2, dtype=torch.float64))  # old state untouched
    assert torch.equal(s2["params"]["w"], torch.full((2,), 2.0, dtype=torch.float64))  # defaults: β=.9, η_s=1
    assert torch.equal(tree_weighted_mean([msgs[0]["delta"]], [1.0])["w"], msgs[0]["delta"]["w"])
