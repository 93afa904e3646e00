"""Model registry, init determinism and distribution, grad_fn against autograd, vmap compatibility."""

import math

import numpy as np
import pytest
import torch

from fedbench.models import MODELS, Model, build_model, make_grad_fn, make_loss_fn, model_options, num_parameters

CASES = [
    ({"name": "logreg"}, (6,), 4),
    ({"name": "mlp", "hidden": [7, 5]}, (2, 3), 4),
    ({"name": "cnn", "channels": [3, 4], "hidden": [6]}, (1, 8, 8), 4),
    ({"name": "cnn", "channels": [2, 3], "hidden": [5, 4], "padding": "valid", "kernel_size": 3}, (2, 10, 10), 3),
]


def test_registry_defaults():
    assert set(MODELS) == {"logreg", "mlp", "cnn", "lstm", "binary_logreg", "quadratic", "resnet18_gn", "vgg11"}
    assert MODELS["lstm"] == {"vocab_size": 80, "embed_dim": 8, "hidden": [100, 100]}
    assert MODELS["mlp"] == {"hidden": [200, 200]}
    assert MODELS["cnn"] == {"channels": [32, 64], "kernel_size": 5, "hidden": [512], "padding": "same"}
    assert model_options({"name": "cnn", "hidden": [384, 192]})[1]["channels"] == [32, 64]


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({"name": "resnet"}, "unknown model name 'resnet'; allowed names: logreg, mlp, cnn, lstm"),
        ({"name": "mlp", "width": 3}, "model name .mlp. has no parameter .width.; allowed parameters: hidden"),
        ({"name": "logreg", "hidden": [3]}, "has no parameter .hidden.; allowed parameters: none"),
        ({"hidden": [3]}, "needs a 'name'"),
        ({"name": "mlp", "hidden": "200"}, "hidden"),
        ({"name": "mlp", "hidden": [200, 0]}, "hidden"),
        ({"name": "cnn", "channels": []}, "channels"),
        ({"name": "cnn", "padding": "full"}, "padding"),
        ({"name": "cnn", "kernel_size": 0}, "kernel_size"),
    ],
)
def test_build_model_rejects_bad_configs(cfg, match):
    with pytest.raises(ValueError, match=match):
        build_model(cfg, (1, 28, 28), 10)


def test_cnn_rejects_too_small_or_non_image_inputs():
    with pytest.raises(ValueError, match="too small"):
        build_model({"name": "cnn", "padding": "valid"}, (1, 8, 8), 10)
    with pytest.raises(ValueError, match="image input shape"):
        build_model({"name": "cnn"}, (64,), 10)


@pytest.mark.parametrize("cfg,shape,classes", CASES)
def test_init_is_deterministic_and_dtype_independent(cfg, shape, classes):
    model = build_model(cfg, shape, classes)
    assert isinstance(model, Model)
    a = model.init(np.random.default_rng(5))
    b = model.init(np.random.default_rng(5))
    c = model.init(np.random.default_rng(6))
    d = model.init(np.random.default_rng(5), dtype=torch.float64)
    assert list(a) == list(b) == list(d)
    for k in a:
        assert a[k].dtype == torch.float32 and d[k].dtype == torch.float64
        assert torch.equal(a[k], b[k])
        assert not torch.equal(a[k], c[k])
        assert torch.equal(a[k], d[k].to(torch.float32))  # drawn in float64, then cast


@pytest.mark.parametrize("cfg,shape,classes", CASES)
def test_init_follows_pytorch_default_bounds(cfg, shape, classes):
    params = build_model(cfg, shape, classes).init(np.random.default_rng(0), dtype=torch.float64)
    for name, w in params.items():
        if not name.endswith(".weight") and name != "weight":
            continue
        fan_in = math.prod(w.shape[1:])
        bias = params[name[: -len("weight")] + "bias"]
        bound = 1 / math.sqrt(fan_in)
        assert float(w.abs().max()) <= bound and float(bias.abs().max()) <= bound
        assert float(w.abs().max()) > 0.5 * bound  # spread over the interval, not degenerate


def test_large_layer_init_is_uniform():
    model = build_model({"name": "mlp", "hidden": [200]}, (784,), 10)
    w = model.init(np.random.default_rng(0), torch.float64)["fc1.weight"]
    bound = 1 / math.sqrt(784)
    # U(−b, b): mean 0, variance b²/3.
    assert abs(float(w.mean())) < 0.01 * bound
    assert float(w.var()) == pytest.approx(bound**2 / 3, rel=0.01)


@pytest.mark.parametrize("cfg,shape,classes", CASES)
def test_grad_fn_matches_autograd(cfg, shape, classes):
    model = build_model(cfg, shape, classes)
    params = model.init(np.random.default_rng(1), dtype=torch.float64)
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.normal(size=(5, *shape)))
    y = torch.from_numpy(rng.integers(0, classes, size=5))
    grads, loss = make_grad_fn(model)(params, x, y)
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    ref_loss = torch.nn.functional.cross_entropy(model.apply(leaves, x), y)
    ref = torch.autograd.grad(ref_loss, list(leaves.values()))
    torch.testing.assert_close(loss, ref_loss.detach(), rtol=0, atol=1e-14)
    torch.testing.assert_close(loss, make_loss_fn(model)(params, x, y), rtol=0, atol=0)
    assert loss.shape == () and set(grads) == set(params)
    for (k, g), r in zip(grads.items(), ref):
        assert g.shape == params[k].shape
        torch.testing.assert_close(g, r, rtol=0, atol=1e-14)


@pytest.mark.parametrize("cfg,shape,classes", CASES)
def test_grad_fn_under_vmap_over_clients(cfg, shape, classes):
    model = build_model(cfg, shape, classes)
    grad_fn = make_grad_fn(model)
    ps = [model.init(np.random.default_rng(s), dtype=torch.float64) for s in range(3)]
    stacked = {k: torch.stack([p[k] for p in ps]) for k in ps[0]}
    rng = np.random.default_rng(3)
    xs = torch.from_numpy(rng.normal(size=(3, 4, *shape)))
    ys = torch.from_numpy(rng.integers(0, classes, size=(3, 4)))
    grads, losses = torch.func.vmap(grad_fn)(stacked, xs, ys)
    for i, p in enumerate(ps):
        g, l = grad_fn(p, xs[i], ys[i])
        torch.testing.assert_close(losses[i], l, rtol=0, atol=1e-13)
        for k in g:
            torch.testing.assert_close(grads[k][i], g[k], rtol=0, atol=1e-13)


def test_num_parameters():
    assert num_parameters({"a": torch.zeros(3, 4), "b": torch.zeros(5)}) == 17
    params = build_model({"name": "mlp"}, (1, 28, 28), 10).init(np.random.default_rng(0))
    assert num_parameters(params) == 199_210
