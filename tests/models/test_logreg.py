"""Multinomial logistic regression."""

import numpy as np
import torch

from fedbench.models import build_model, make_grad_fn, num_parameters


def test_shapes_and_count():
    model = build_model({"name": "logreg"}, (1, 8, 8), 10)
    p = model.init(np.random.default_rng(0))
    assert {k: tuple(v.shape) for k, v in p.items()} == {"weight": (10, 64), "bias": (10,)}
    assert num_parameters(p) == 650
    assert model.apply(p, torch.zeros(3, 1, 8, 8)).shape == (3, 10)


def test_apply_is_affine_on_flattened_input():
    model = build_model({"name": "logreg"}, (2, 3), 4)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    x = torch.from_numpy(np.random.default_rng(1).normal(size=(5, 2, 3)))
    torch.testing.assert_close(model.apply(p, x), x.reshape(5, 6) @ p["weight"].T + p["bias"], rtol=0, atol=1e-15)


def test_matches_nn_linear_forward_and_grad():
    model = build_model({"name": "logreg"}, (7,), 3)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    net = torch.nn.Linear(7, 3).double()
    net.load_state_dict(p)
    rng = np.random.default_rng(2)
    x, y = torch.from_numpy(rng.normal(size=(9, 7))), torch.from_numpy(rng.integers(0, 3, size=9))
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    grads, ours = make_grad_fn(model)(p, x, y)
    torch.testing.assert_close(ours, loss.detach(), rtol=0, atol=1e-15)
    for k, param in net.named_parameters():
        torch.testing.assert_close(grads[k], param.grad, rtol=0, atol=1e-15)
