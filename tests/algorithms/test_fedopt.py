"""FedAdam, FedYogi, FedAdagrad (Reddi et al. 2021, Algorithm 2) against hand-computed steps."""

import math

import pytest
import torch

from fedbench.algorithms import ALGORITHMS, fedadagrad, fedadam, fedyogi

HP = {"server_lr": 1.0, "beta1": 0.9, "beta2": 0.99, "tau": 0.1}  # v_{-1} = τ² = 0.01


def _step(alg, server, delta, weights=(1.0,)):
    msgs = [{"delta": {"w": torch.tensor(d, dtype=torch.float64)}} for d in delta]
    return alg.server_update(server, msgs, torch.tensor(weights, dtype=torch.float64), HP)


# Round 1: one client, Δ = [0.5, −0.1];  m1 = (1 − 0.9) Δ = [0.05, −0.01].
# Round 2: Δ = [0.2, 0.3];  m2 = 0.9 m1 + 0.1 Δ = [0.065, 0.021].
V1 = {
    "adam": [0.99 * 0.01 + 0.01 * 0.25, 0.99 * 0.01 + 0.01 * 0.01],  # [0.0124, 0.01]
    "yogi": [0.01 + 0.01 * 0.25, 0.01],  # sign(0.01 − 0.25) = −1; sign(0.01 − 0.01) = 0
    "adagrad": [0.01 + 0.25, 0.01 + 0.01],  # [0.26, 0.02]
}
V2 = {
    "adam": [0.99 * V1["adam"][0] + 0.01 * 0.04, 0.99 * V1["adam"][1] + 0.01 * 0.09],
    # yogi: v1 − Δ² = [0.0125 − 0.04 < 0, 0.01 − 0.09 < 0] → v2 = v1 + 0.01 Δ²
    "yogi": [V1["yogi"][0] + 0.01 * 0.04, V1["yogi"][1] + 0.01 * 0.09],
    "adagrad": [V1["adagrad"][0] + 0.04, V1["adagrad"][1] + 0.09],
}


@pytest.mark.parametrize("alg,rule", [(fedadam, "adam"), (fedyogi, "yogi"), (fedadagrad, "adagrad")])
def test_two_hand_computed_steps(alg, rule):
    assert alg.__name__.split(".")[-1] in ALGORITHMS
    theta0 = [1.0, -2.0]
    server = alg.server_init({"w": torch.tensor(theta0, dtype=torch.float64)}, HP, 4)
    torch.testing.assert_close(server["v"]["w"], torch.tensor([0.01, 0.01], dtype=torch.float64))
    s1 = _step(alg, server, [[0.5, -0.1]])
    m1 = [0.05, -0.01]
    theta1 = [theta0[i] + m1[i] / (math.sqrt(V1[rule][i]) + 0.1) for i in range(2)]
    torch.testing.assert_close(s1["m"]["w"], torch.tensor(m1, dtype=torch.float64), rtol=0, atol=1e-15)
    torch.testing.assert_close(s1["v"]["w"], torch.tensor(V1[rule], dtype=torch.float64), rtol=0, atol=1e-15)
    torch.testing.assert_close(s1["params"]["w"], torch.tensor(theta1, dtype=torch.float64), rtol=0, atol=1e-14)
    # round 2, two clients with weights 1 and 3: Δ̄ = (1·[0.8, 0.0] + 3·[0.0, 0.4]) / 4 = [0.2, 0.3]
    s2 = _step(alg, s1, [[0.8, 0.0], [0.0, 0.4]], weights=(1.0, 3.0))
    m2 = [0.9 * 0.05 + 0.1 * 0.2, 0.9 * -0.01 + 0.1 * 0.3]
    theta2 = [theta1[i] + m2[i] / (math.sqrt(V2[rule][i]) + 0.1) for i in range(2)]
    torch.testing.assert_close(s2["v"]["w"], torch.tensor(V2[rule], dtype=torch.float64), rtol=0, atol=1e-15)
    torch.testing.assert_close(s2["params"]["w"], torch.tensor(theta2, dtype=torch.float64), rtol=0, atol=1e-14)


def test_yogi_decreases_v_when_v_exceeds_the_squared_update():
    server = fedyogi.server_init({"w": torch.tensor([0.0], dtype=torch.float64)}, {**HP, "tau": 1.0}, 1)  # v = 1
    s1 = fedyogi.server_update(server, [{"delta": {"w": torch.tensor([0.5], dtype=torch.float64)}}],
                               torch.tensor([1.0], dtype=torch.float64), {**HP, "tau": 1.0})
    torch.testing.assert_close(s1["v"]["w"], torch.tensor([1.0 - 0.01 * 0.25], dtype=torch.float64))


@pytest.mark.parametrize("alg", [fedadam, fedyogi, fedadagrad])
def test_tau_must_be_positive(alg):
    with pytest.raises(ValueError, match="tau"):
        alg.server_init({"w": torch.zeros(2)}, {**alg.HPARAMS, "tau": 0.0}, 2)


@pytest.mark.parametrize("alg", [fedadam, fedyogi, fedadagrad])
def test_trains_a_federation(alg, params0, unequal_clients, grad_fn, rounds_runner):
    hp = {"lr": 0.1, **alg.HPARAMS, "server_lr": 0.05}
    server, _, _ = rounds_runner(alg, params0, unequal_clients, hp, grad_fn, rounds=5)
    x = torch.cat([c[0] for c in unequal_clients])
    y = torch.cat([c[1] for c in unequal_clients])
    _, loss0 = grad_fn(params0, x, y)
    _, loss = grad_fn(server["params"], x, y)
    assert float(loss) < float(loss0)
