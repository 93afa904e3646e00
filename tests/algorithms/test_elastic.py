"""Elastic Aggregation (Chen et al., "Elastic Aggregation for Federated Optimization", CVPR 2023,
supplement Algorithms 1-2): ζ invariants, ζ ≡ 1 is the base optimizer, the
sensitivity estimators on the held-out subset B_k (the paper's ∇‖F(θ; x)‖²₂ at θ^{t−1}), the
boosted percentage and the message."""

import numpy as np
import pytest
import torch

from fedbench.algorithms import elastic, elastic_fedavg, elastic_fedavgm, elastic_fedprox, fedavg, fedavgm, fedprox
from fedbench.engine.clients.holdout import holdout_size, make_output_grad_fn
from fedbench.metrics.communication import count_floats
from fedbench.tree import tree_numel, tree_weighted_mean

LOCAL = {"lr": 0.1, "weight_decay": 1e-3, "clip_norm": 10.0}
SAMPLED = lambda t: [t % 4, (t + 1) % 4, (t * 3 + 2) % 4]  # noqa: E731


def _random_omega(seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return {"w": scale * torch.rand(4, 6, generator=g, dtype=torch.float64),
            "b": scale * torch.rand(6, generator=g, dtype=torch.float64)}


@pytest.mark.parametrize("tau", [0.0, 0.3, 0.5, 1.0])
def test_zeta_range_and_value_at_the_most_sensitive_parameter(tau):
    omega = _random_omega(0)
    omega["b"] = torch.cat([omega["b"][:5], torch.zeros(1, dtype=torch.float64)])  # one Ω = 0
    z = elastic.zeta(omega, tau)
    allz = torch.cat([v.reshape(-1) for v in z.values()])
    assert float(allz.min()) >= tau and float(allz.max()) <= 1.0 + tau
    peak_leaf = max(omega, key=lambda k: float(omega[k].max()))
    i = int(omega[peak_leaf].argmax())
    assert float(z[peak_leaf].reshape(-1)[i]) == tau  # exactly τ at argmax Ω (global over all leaves)
    assert float(z["b"][5]) == 1.0 + tau  # Ω = 0 ⇒ ζ = 1 + τ


def test_zeta_unchanged_when_all_client_sensitivities_are_scaled_together():
    omegas = [_random_omega(s) for s in range(3)]
    w = torch.tensor([3.0, 5.0, 2.0], dtype=torch.float64)
    tau = 0.4
    base = elastic.zeta(tree_weighted_mean(omegas, w), tau)
    for c in (0.5, 4.0, 1024.0):  # powers of two: exact; 0.5/4: exact too
        scaled = elastic.zeta(tree_weighted_mean([{k: c * v for k, v in o.items()} for o in omegas], w), tau)
        for k in base:
            torch.testing.assert_close(scaled[k], base[k], rtol=0, atol=1e-15)
    scaled = elastic.zeta(tree_weighted_mean([{k: 3.7 * v for k, v in o.items()} for o in omegas], w), tau)
    for k in base:
        torch.testing.assert_close(scaled[k], base[k], rtol=0, atol=1e-14)


def test_zeta_degenerate_cases():
    const = {"w": torch.full((3,), 2.5, dtype=torch.float64)}
    assert torch.equal(elastic.zeta(const, 0.3)["w"], torch.full((3,), 0.3, dtype=torch.float64))  # all equal ⇒ τ
    zero = {"w": torch.zeros(3, dtype=torch.float64)}
    assert torch.equal(elastic.zeta(zero, 0.3)["w"], torch.full((3,), 1.3, dtype=torch.float64))  # guarded


def test_boosted_pct_counts_zeta_above_one():
    z = {"a": torch.tensor([0.5, 1.0, 1.2]), "b": torch.tensor([1.01, 0.9])}
    assert float(elastic.boosted_pct(z)) == pytest.approx(40.0)


BASES = [
    pytest.param(elastic_fedavg, {}, fedavg, {}, id="fedavg"),
    pytest.param(elastic_fedavgm, {"momentum": 0.9, "dampening": 0.9, "server_lr": 1.5}, fedavgm,
                 {"momentum": 0.9, "dampening": 0.9, "server_lr": 1.5}, id="fedavgm"),
    pytest.param(elastic_fedprox, {"mu": 0.1}, fedprox, {"mu": 0.1}, id="fedprox"),
]


@pytest.mark.parametrize("ea,ea_hp,base,base_hp", BASES)
def test_zeta_forced_to_one_is_the_base_optimizer(ea, ea_hp, base, base_hp, params0, unequal_clients, grad_fn,
                                                 rounds_runner, trees_equal):
    s_e, _, hist = rounds_runner(ea, params0, unequal_clients, {**LOCAL, **ea_hp, "sensitivity": "none"}, grad_fn,
                                 rounds=4, sampled=SAMPLED, record=True)
    s_b, _, hist_b = rounds_runner(base, params0, unequal_clients, {**LOCAL, **base_hp}, grad_fn, rounds=4,
                                   sampled=SAMPLED, record=True)
    trees_equal(s_e["params"], s_b["params"])
    if "momentum" in s_b:
        trees_equal(s_e["momentum"], s_b["momentum"])
    for r, rb in zip(hist, hist_b):
        assert [count_floats(m) for m in r["messages"]] == [count_floats(m) for m in rb["messages"]]
    assert float(s_e["metrics"]["boosted_pct"]) == 0.0


@pytest.mark.parametrize("ea,ea_hp,base,base_hp", BASES)
def test_elastic_server_step_scales_the_base_update_by_zeta(ea, ea_hp, base, base_hp, params0, unequal_clients,
                                                           grad_fn, rounds_runner):
    hp = {**LOCAL, **ea_hp, "tau": 0.4, "sensitivity": "momentum", "rho": 0.9}
    _, _, hist = rounds_runner(ea, params0, unequal_clients, hp, grad_fn, rounds=2, sampled=SAMPLED, record=True)
    d = tree_numel(params0)
    for r in hist:
        # n_k counts D_k \\ B_k: B_k (10 %, at least 1) is removed before training
        n = [len(unequal_clients[k][1]) for k in r["ids"]]
        w = torch.tensor([nk - holdout_size(nk, 0.1) for nk in n], dtype=torch.float64)
        assert [nk - wk for nk, wk in zip(n, w.tolist())] == [{12: 2, 20: 2, 9: 1, 15: 2}[nk] for nk in n]
        for m in r["messages"]:
            assert set(m) == {"delta", "omega"} and count_floats(m) == 2 * d  # Δ_k and Ω_k: 2d uplink
        z = elastic.zeta(tree_weighted_mean([m["omega"] for m in r["messages"]], w), 0.4)
        delta = tree_weighted_mean([m["delta"] for m in r["messages"]], w)
        boosted = sum(int((v > 1).sum()) for v in z.values())
        assert float(r["server"]["metrics"]["boosted_pct"]) == pytest.approx(100.0 * boosted / d)
        assert 0 < boosted < d
        if base is fedavgm:
            v_prev = r["prev"]["momentum"]
            for n in delta:
                v = 0.9 * v_prev[n] + 0.1 * z[n] * delta[n]
                torch.testing.assert_close(r["server"]["params"][n], r["prev"]["params"][n] + 1.5 * v, rtol=0,
                                           atol=1e-14)
        else:
            for n in delta:
                torch.testing.assert_close(r["server"]["params"][n], r["prev"]["params"][n] + z[n] * delta[n],
                                           rtol=0, atol=1e-15)


def _output_sq_norm_grad(model, params, x):
    """∇_θ mean_i ‖F(θ; x_i)‖²₂ by plain autograd: the paper's g, computed independently."""
    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    out = model.apply(p, x)
    (out.pow(2).sum(dim=1).mean()).backward()
    return {k: v.grad for k, v in p.items()}


@pytest.mark.parametrize("mode", ["momentum", "average"])
def test_sensitivity_estimators_on_held_out_batches(mode, model, params0, unequal_clients, grad_fn):
    rho = 0.8
    hp = {**LOCAL, "clip_norm": None, "weight_decay": 0.0, "sensitivity": mode, "rho": rho}
    server = elastic_fedavg.server_init(params0, hp, 4)
    state = elastic_fedavg.client_init(server, None, hp)
    assert state["omega_batches"] == 0 and all(float(v.abs().sum()) == 0 for v in state["omega"].values())
    x, y = unequal_clients[2]
    out_grad = make_output_grad_fn(model.apply)
    grads = []
    for idx in (np.arange(0, 4), np.arange(4, 8), np.arange(5, 7)):
        grads.append(_output_sq_norm_grad(model, params0, x[idx]))
        state = elastic_fedavg.client_holdout_step(state, (x[idx], y[idx]), hp, out_grad)
    assert state["omega_batches"] == 3 and state["steps"] == 0
    assert state["params"] is server["params"]  # the held-out pass does not train
    for n in params0:
        if mode == "momentum":
            expected = torch.zeros_like(params0[n])
            for g in grads:
                expected = rho * expected + (1 - rho) * g[n].abs()
        else:
            expected = sum(g[n].abs() for g in grads) / 3
        torch.testing.assert_close(state["omega"][n], expected, rtol=1e-12, atol=1e-15)
    # local training leaves Ω_k alone: it is the sensitivity at the received θ^{t−1}
    before = state["omega"]
    state = elastic_fedavg.client_step(state, (x[:4], y[:4]), hp, grad_fn)
    assert state["omega"] is before
    msg, cstate = elastic_fedavg.client_final(server, state, hp)
    assert cstate is None and msg["omega"] is state["omega"]


def test_sensitivity_is_label_free_and_uses_the_model_output(model, params0, unequal_clients):
    hp = {"sensitivity": "momentum", "rho": 0.5}
    server = elastic_fedavg.server_init(params0, hp, 4)
    x, y = unequal_clients[1]
    out_grad = make_output_grad_fn(model.apply)
    a = elastic_fedavg.client_holdout_step(elastic_fedavg.client_init(server, None, hp), (x[:6], y[:6]), hp, out_grad)
    b = elastic_fedavg.client_holdout_step(elastic_fedavg.client_init(server, None, hp), (x[:6], (y[:6] + 1) % 3),
                                           hp, out_grad)
    for n in params0:
        assert torch.equal(a["omega"][n], b["omega"][n])  # labels do not matter
        assert float(a["omega"][n].abs().sum()) > 0


def test_holdout_fraction_hook():
    assert elastic_fedavg.holdout_fraction({}) == 0.1  # the supplement's 10 %
    assert elastic_fedprox.holdout_fraction({"sensitivity": "average", "sensitivity_fraction": 0.25}) == 0.25
    assert elastic_fedavgm.holdout_fraction({"sensitivity": "none"}) == 0.0  # naive: nothing held out
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="sensitivity_fraction"):
            elastic_fedavg.holdout_fraction({"sensitivity_fraction": bad})
    assert not hasattr(fedavg, "holdout_fraction")  # other algorithms declare nothing


def test_unknown_sensitivity_is_rejected(params0):
    with pytest.raises(ValueError, match="sensitivity"):
        elastic_fedavg.server_init(params0, {"sensitivity": "mas"}, 4)


def test_fedavgm_default_is_the_printed_ema_form():
    assert elastic_fedavgm.HPARAMS["dampening"] == elastic_fedavgm.HPARAMS["momentum"]
