"""FedElasticNet (Kim et al., arXiv 2022, Algorithms 1-3): reduction to the base algorithms at λ1 = 0,
ε = 0; ε-thresholding; the local step; Lemma B.2 for Algorithm 3; what each algorithm sends."""

import pytest
import torch

from fedbench.algorithms import (
    ALGORITHMS,
    fedavg,
    feddyn,
    fedelasticnet_feddyn,
    fedelasticnet_prox,
    fedelasticnet_scaffold,
    fedprox,
    get_algorithm,
    scaffold,
)
from fedbench.engine.clients.batches import local_batches
from fedbench.engine.clients.local import train_client
from fedbench.metrics.communication import count_floats, count_nonzeros
from fedbench.tree import tree_mean, tree_numel, tree_threshold, tree_zeros_like

LOCAL = {"lr": 0.1, "weight_decay": 1e-3, "clip_norm": 10.0}
SAMPLED = lambda t: [t % 4, (t + 1) % 4, (t * 3 + 2) % 4]  # noqa: E731  partial, varying participation

# (elastic-net algorithm, its hparams with λ1 = ε = 0, base algorithm, base hparams, tolerance)
REDUCTIONS = [
    pytest.param(fedelasticnet_prox, {"lambda1": 0.0, "lambda2": 0.1, "epsilon": 0.0}, fedprox, {"mu": 0.1}, 0.0,
                 id="alg1-fedprox"),
    pytest.param(fedelasticnet_prox, {"lambda1": 0.0, "lambda2": 0.0, "epsilon": 0.0}, fedavg, {}, 0.0,
                 id="alg1-fedavg"),
    pytest.param(fedelasticnet_scaffold, {"lambda1": 0.0, "lambda2": 0.0, "epsilon": 0.0, "server_lr": 0.8},
                 scaffold, {"server_lr": 0.8}, 0.0, id="alg2-scaffold"),
    pytest.param(fedelasticnet_feddyn, {"lambda1": 0.0, "lambda2": 0.05, "epsilon": 0.0}, feddyn, {"alpha": 0.05},
                 1e-12, id="alg3-feddyn"),
]


def test_registered_with_hparams():
    for name in ("fedelasticnet_prox", "fedelasticnet_scaffold", "fedelasticnet_feddyn"):
        assert name in ALGORITHMS
        assert {"lambda1", "lambda2", "epsilon"} <= set(get_algorithm(name).HPARAMS)


@pytest.mark.parametrize("sampled", [None, SAMPLED])
@pytest.mark.parametrize("enet,enet_hp,base,base_hp,atol", REDUCTIONS)
def test_lambda1_zero_epsilon_zero_is_the_base_algorithm(enet, enet_hp, base, base_hp, atol, sampled, params0,
                                                        unequal_clients, grad_fn, rounds_runner, trees_equal):
    s_e, c_e, _ = rounds_runner(enet, params0, unequal_clients, {**LOCAL, **enet_hp}, grad_fn, rounds=4,
                                sampled=sampled)
    s_b, c_b, _ = rounds_runner(base, params0, unequal_clients, {**LOCAL, **base_hp}, grad_fn, rounds=4,
                                sampled=sampled)
    assert s_e.keys() == s_b.keys()
    for key in s_b:
        if isinstance(s_b[key], dict):
            trees_equal(s_e[key], s_b[key], atol=atol)
        else:
            assert s_e[key] == s_b[key]
    assert c_e.keys() == c_b.keys()
    for k in c_b:
        assert c_e[k].keys() == c_b[k].keys()
        for key in c_b[k]:
            trees_equal(c_e[k][key], c_b[k][key], atol=atol)
    assert not torch.equal(s_b["params"]["weight"], params0["weight"])


def test_tree_threshold_zeroes_exactly_the_small_entries():
    v = torch.tensor([-0.3, -0.01, -0.0099, 0.0, 0.005, 0.01, 0.0101, 2.0], dtype=torch.float64)
    out = tree_threshold({"w": v}, 0.01)["w"]
    expected = torch.tensor([-0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0101, 2.0], dtype=torch.float64)
    assert torch.equal(out, expected)
    assert torch.equal(tree_threshold({"w": v}, 0.0)["w"], v)


def _one_client(alg, hp, params0, clients, grad_fn, k=1, client_state=None):
    server = alg.server_init(params0, hp, len(clients))
    x, y = clients[k]
    batches = local_batches(0, 1, k, len(y), 4, epochs=2)
    msg, cstate, _ = train_client(alg, server, client_state, x, y, batches, hp, grad_fn)
    return server, msg, cstate


@pytest.mark.parametrize("alg", [fedelasticnet_prox, fedelasticnet_scaffold, fedelasticnet_feddyn])
def test_transmitted_delta_is_thresholded_exactly_at_epsilon(alg, params0, unequal_clients, grad_fn):
    hp = {**LOCAL, **alg.HPARAMS, "lambda1": 1e-3, "epsilon": 0.0}
    _, raw, _ = _one_client(alg, hp, params0, unequal_clients, grad_fn)
    flat = torch.cat([v.reshape(-1) for v in raw["delta"].values()]).abs()
    eps = float(flat.median())  # about half the entries are at or below ε, one of them exactly at ε
    _, thr, _ = _one_client(alg, {**hp, "epsilon": eps}, params0, unequal_clients, grad_fn)
    for n, d in raw["delta"].items():
        small = d.abs() <= eps
        assert torch.equal(thr["delta"][n], torch.where(small, torch.zeros_like(d), d)), n
    nnz = count_nonzeros({"delta": thr["delta"]})
    assert 0 < nnz < tree_numel(params0)
    assert nnz == int((flat > eps).sum())


def test_algorithm1_local_step_is_the_elastic_net_subgradient(params0, unequal_clients, grad_fn):
    lam1, lam2, lr = 0.03, 0.2, 0.1
    hp = {"lr": lr, "lambda1": lam1, "lambda2": lam2, "epsilon": 0.0}
    server = fedelasticnet_prox.server_init(params0, hp, 4)
    state = fedelasticnet_prox.client_init(server, None, hp)
    x, y = unequal_clients[0]
    batch = (x[:4], y[:4])
    state = fedelasticnet_prox.client_step(state, batch, hp, grad_fn)  # at θ^{t−1}: sign term is 0
    theta1 = state["params"]
    state = fedelasticnet_prox.client_step(state, batch, hp, grad_fn)
    g, _ = grad_fn(theta1, *batch)
    for n in params0:
        diff = theta1[n] - params0[n]
        expected = theta1[n] - lr * (g[n] + lam2 * diff + lam1 * torch.sign(diff))
        torch.testing.assert_close(state["params"][n], expected, rtol=0, atol=1e-15)
    g0, _ = grad_fn(params0, *batch)
    for n in params0:
        torch.testing.assert_close(theta1[n], params0[n] - lr * g0[n], rtol=0, atol=1e-15)


def test_l1_makes_updates_sparser(params0, unequal_clients, grad_fn, rounds_runner):
    def total_nnz(lam1):
        hp = {**LOCAL, "lambda1": lam1, "lambda2": 0.05, "epsilon": 1e-3}
        _, _, hist = rounds_runner(fedelasticnet_feddyn, params0, unequal_clients, hp, grad_fn, rounds=3, record=True)
        return sum(count_nonzeros(m) for r in hist for m in r["messages"])
    assert total_nnz(3e-2) < total_nnz(0.0)


@pytest.mark.parametrize("sampled", [None, SAMPLED])
def test_algorithm3_h_is_mean_of_client_gradient_states(params0, unequal_clients, grad_fn, rounds_runner, sampled):
    lam1, lam2 = 1e-3, 0.05
    hp = {**LOCAL, "lambda1": lam1, "lambda2": lam2, "epsilon": 2e-3}
    _, _, hist = rounds_runner(fedelasticnet_feddyn, params0, unequal_clients, hp, grad_fn, rounds=5,
                               sampled=sampled, record=True)
    m = len(unequal_clients)
    zeros_seen = False
    for r in hist:
        theta_prev, server = r["prev"]["params"], r["server"]
        for msg in r["messages"]:
            assert set(msg) == {"delta"}
            zeros_seen |= any(bool((v == 0).any()) for v in msg["delta"].values())
        all_g = [r["client_states"][k]["g"] if k in r["client_states"] else tree_zeros_like(params0) for k in range(m)]
        mean_g = tree_mean(all_g)
        gamma = tree_mean([{n: theta_prev[n] + msg["delta"][n] for n in theta_prev} for msg in r["messages"]])
        for n in params0:
            torch.testing.assert_close(server["h"][n], mean_g[n], rtol=0, atol=1e-12)  # Lemma B.2
            torch.testing.assert_close(server["params"][n], gamma[n] - server["h"][n] / lam2, rtol=0, atol=1e-12)
    assert zeros_seen  # the threshold was active


def test_algorithm3_client_state_uses_the_thresholded_delta(params0, unequal_clients, grad_fn):
    lam1, lam2 = 1e-3, 0.05
    hp = {**LOCAL, "lambda1": lam1, "lambda2": lam2, "epsilon": 5e-3}
    _, msg, cstate = _one_client(fedelasticnet_feddyn, hp, params0, unequal_clients, grad_fn)
    d = msg["delta"]
    for n in d:
        torch.testing.assert_close(cstate["g"][n], -lam2 * d[n] - lam1 * torch.sign(d[n]), rtol=0, atol=1e-15)


def test_messages_are_what_the_paper_sends(params0, unequal_clients, grad_fn):
    d = tree_numel(params0)
    hp2 = {**LOCAL, "lambda1": 1e-3, "lambda2": 0.0, "epsilon": 1e-2, "server_lr": 1.0}
    # Algorithm 2: Δ thresholded + Δc dense (2d floats; non-zeros ‖Δ‖₀ + d).
    _, msg, cstate = _one_client(fedelasticnet_scaffold, hp2, params0, unequal_clients, grad_fn)
    assert set(msg) == {"delta", "delta_c"}
    assert count_floats(msg) == 2 * d
    nnz_delta = count_nonzeros({"delta": msg["delta"]})
    assert 0 < nnz_delta < d
    assert count_nonzeros({"delta_c": msg["delta_c"]}) == d
    assert count_nonzeros(msg) == nnz_delta + d
    assert set(cstate) == {"c"}
    # Algorithms 1 and 3: one thresholded d-vector.
    for alg in (fedelasticnet_prox, fedelasticnet_feddyn):
        hp = {**LOCAL, **alg.HPARAMS, "lambda1": 1e-3, "epsilon": 1e-2}
        _, msg, _ = _one_client(alg, hp, params0, unequal_clients, grad_fn)
        assert set(msg) == {"delta"} and count_floats(msg) == d
        assert count_nonzeros(msg) < d
    server = fedelasticnet_scaffold.server_init(params0, hp2, 4)
    assert fedelasticnet_scaffold.broadcast(server).keys() == {"params", "c"}


def test_algorithm2_keeps_scaffold_invariant_c_is_mean_ck(params0, unequal_clients, grad_fn, rounds_runner):
    hp = {**LOCAL, "lambda1": 1e-3, "lambda2": 0.0, "epsilon": 1e-2, "server_lr": 1.0}
    server, cstates, _ = rounds_runner(fedelasticnet_scaffold, params0, unequal_clients, hp, grad_fn, rounds=4,
                                       sampled=SAMPLED)
    all_c = [cstates[k]["c"] if k in cstates else tree_zeros_like(params0) for k in range(4)]
    mean_c = tree_mean(all_c)
    for n in params0:
        torch.testing.assert_close(server["c"][n], mean_c[n], rtol=0, atol=1e-12)


def test_algorithm3_rejects_nonpositive_lambda2(params0):
    with pytest.raises(ValueError, match="alpha"):
        fedelasticnet_feddyn.server_init(params0, {"lambda1": 0.0, "lambda2": 0.0, "epsilon": 0.0}, 4)
