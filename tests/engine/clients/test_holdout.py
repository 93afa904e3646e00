"""The held-out pass of the protocol (fedbench.engine.clients.holdout): the split B_k / D_k \\ B_k, its
per-round batches, the output-norm gradient, and the vectorized engine computing Ω_k on B_k."""

import types

import numpy as np
import pytest
import torch

from fedbench.algorithms import elastic_fedavg, fedavg
from fedbench.engine.clients.chunking import IGNORE_INDEX
from fedbench.engine.clients.holdout import (
    holdout_batches,
    holdout_fraction,
    holdout_size,
    holdout_split,
    make_output_grad_fn,
)
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.models import build_model, make_grad_fn


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 0), (2, 1), (9, 1), (10, 1), (11, 2), (30, 3), (100, 10),
                                         (101, 11), (599, 60)])
def test_holdout_size_is_ceil_of_ten_percent_leaving_one_to_train(n, expected):
    assert holdout_size(n, 0.1) == expected
    assert holdout_size(n, 0.0) == 0


def test_holdout_split_is_disjoint_keyed_and_order_preserving():
    rng = np.random.default_rng(0)
    clients = [np.sort(rng.choice(1000, size=n, replace=False)) for n in (1, 2, 9, 30, 57)]
    train, held = holdout_split(clients, 0.1, seed=4)
    for rows, tr, h in zip(clients, train, held):
        assert len(h) == holdout_size(len(rows), 0.1)
        assert np.array_equal(np.sort(np.concatenate([tr, h])), rows)  # a partition of the client's rows
        assert np.all(np.diff(tr) > 0) and np.all(np.diff(h) > 0)  # partition order kept
    assert [len(h) for h in held] == [0, 1, 1, 3, 6]
    again, held2 = holdout_split(clients, 0.1, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(held, held2))
    # client k's draw depends on (seed, k) only, not on the other clients
    _, held_alone = holdout_split(clients[:4], 0.1, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(held[:4], held_alone))
    _, other_seed = holdout_split(clients, 0.1, seed=5)
    assert not np.array_equal(held[4], other_seed[4])
    tr0, h0 = holdout_split(clients, 0.0, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(tr0, clients)) and all(len(h) == 0 for h in h0)


def test_holdout_batches_one_shuffled_pass_per_round():
    b1 = holdout_batches(0, 1, 3, 23, 10)
    assert [len(b) for b in b1] == [10, 10, 3]
    assert sorted(np.concatenate(b1).tolist()) == list(range(23))
    b2 = holdout_batches(0, 2, 3, 23, 10)
    assert not np.array_equal(np.concatenate(b1), np.concatenate(b2))  # reshuffled each round
    assert all(np.array_equal(a, b) for a, b in zip(b1, holdout_batches(0, 1, 3, 23, 10)))
    assert holdout_batches(0, 1, 3, 0, 10) == []
    with pytest.raises(ValueError, match="t >= 1"):
        holdout_batches(0, 0, 3, 23, 10)


@pytest.mark.parametrize("model_cfg, shape", [({"name": "mlp", "hidden": [5]}, (6,)),
                                              ({"name": "cnn", "channels": [2], "hidden": [4], "kernel_size": 3},
                                               (1, 6, 6))])
def test_output_grad_fn_is_the_gradient_of_the_mean_squared_output_norm(model_cfg, shape):
    model = build_model(model_cfg, shape, 3)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, *shape, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 1, 0])
    p = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    value = model.apply(p, x).pow(2).sum(1).mean()
    value.backward()
    fn = make_output_grad_fn(model.apply)
    grads, val = fn(params, x, y)
    torch.testing.assert_close(val, value.detach(), rtol=1e-14, atol=0)
    for k in params:
        torch.testing.assert_close(grads[k], p[k].grad, rtol=1e-13, atol=1e-16)
    # padded rows (label IGNORE_INDEX) change neither the value nor the gradient
    xp = torch.cat([x, x[:1].expand(2, *shape)])
    yp = torch.cat([y, torch.full((2,), IGNORE_INDEX)])
    grads_p, val_p = fn(params, xp, yp)
    torch.testing.assert_close(val_p, val, rtol=1e-14, atol=0)
    for k in params:
        torch.testing.assert_close(grads_p[k], grads[k], rtol=1e-13, atol=1e-16)


def test_holdout_fraction_of_modules():
    assert holdout_fraction(fedavg, {}) == 0.0  # declares nothing: costs nothing
    assert holdout_fraction(elastic_fedavg, {}) == 0.1
    bad = types.SimpleNamespace(__name__="bad", holdout_fraction=lambda hp: 0.2)
    with pytest.raises(TypeError, match="client_holdout_step"):
        holdout_fraction(bad, {})
    worse = types.SimpleNamespace(__name__="worse", holdout_fraction=lambda hp: 1.0, client_holdout_step=None)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        holdout_fraction(worse, {})


def test_vectorized_engine_computes_omega_on_the_held_out_rows():
    # Ω_k in the vectorized engine's message = the EMA of |∇ mean ‖F(θ⁰; x)‖²| over the held-out
    # batches of B_k, computed here by hand, one client at a time, from the rows B_k names.
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.normal(size=(80, 4)))
    y = torch.as_tensor(rng.integers(0, 3, size=80))
    clients = [np.arange(0, 9), np.arange(9, 40), np.arange(40, 80)]
    train_rows, held = holdout_split(clients, 0.1, seed=1)
    model = build_model({"name": "mlp", "hidden": [5]}, (4,), 3)
    params = model.init(np.random.default_rng(1), dtype=torch.float64)
    hp = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None, "tau": 0.5, "rho": 0.7, "sensitivity": "momentum"}
    local = {"batch_size": 2, "epochs": 1, "steps": None}
    eng = VectorizedClients(elastic_fedavg, model, make_grad_fn(model), x, y, train_rows, local, seed=1,
                            chunk_size=8, holdout=held, output_grad_fn=make_output_grad_fn(model.apply))
    server = elastic_fedavg.server_init(params, hp, 3)
    result = eng.train_round(server, np.array([0, 1, 2]), hp, t=1)
    assert [len(h) for h in held] == [1, 4, 4]
    for k, msg in enumerate(result.messages):
        omega = {n: torch.zeros_like(v) for n, v in params.items()}
        for b in holdout_batches(1, 1, k, len(held[k]), 2):
            p = {n: v.clone().requires_grad_(True) for n, v in params.items()}
            model.apply(p, x[held[k][b]]).pow(2).sum(1).mean().backward()
            omega = {n: 0.7 * omega[n] + 0.3 * p[n].grad.abs() for n in params}
        for n in params:
            torch.testing.assert_close(msg["omega"][n], omega[n], rtol=1e-12, atol=1e-15)
