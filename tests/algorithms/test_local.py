"""sgd_step reproduces torch.optim.SGD + torch.nn.utils.clip_grad_norm_ (the FedDyn code's loop)."""

import numpy as np
import pytest
import torch

from fedbench.algorithms.local import advance, clip_by_global_norm, global_norm, init_step_state, sgd_step
from fedbench.models import build_model, make_grad_fn


def _module_and_params(dtype=torch.float64):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(dtype)
    model = build_model({"name": "mlp", "hidden": [8]}, (6,), 3)
    sd = net.state_dict()
    params = {"fc1.weight": sd["0.weight"].clone(), "fc1.bias": sd["0.bias"].clone(),
              "fc2.weight": sd["2.weight"].clone(), "fc2.bias": sd["2.bias"].clone()}
    return net, model, params


def _module_params(net):
    sd = net.state_dict()
    return {"fc1.weight": sd["0.weight"], "fc1.bias": sd["0.bias"],
            "fc2.weight": sd["2.weight"], "fc2.bias": sd["2.bias"]}


@pytest.mark.parametrize("clip_norm", [None, 0.05, 1e3])
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_sgd_step_matches_torch_sgd_with_clipping(clip_norm, weight_decay):
    net, model, params = _module_and_params()
    grad_fn = make_grad_fn(model)
    opt = torch.optim.SGD(net.parameters(), lr=0.3, weight_decay=weight_decay)
    hp = {"lr": 0.3, "weight_decay": weight_decay, "clip_norm": clip_norm}
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = torch.from_numpy(rng.normal(size=(7, 6)))
        y = torch.from_numpy(rng.integers(0, 3, size=7))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), clip_norm)
        opt.step()
        grads, loss_f = grad_fn(params, x, y)
        torch.testing.assert_close(loss_f, loss.detach(), rtol=0, atol=1e-13)
        params = sgd_step(params, grads, hp)
    ref = _module_params(net)
    for k in params:
        torch.testing.assert_close(params[k], ref[k], rtol=0, atol=1e-13)


def test_clip_by_global_norm_matches_clip_grad_norm():
    rng = np.random.default_rng(2)
    tree = {"a": torch.from_numpy(rng.normal(size=(3, 4))), "b": torch.from_numpy(rng.normal(size=(5,)))}
    for max_norm in (0.1, 1.0, 100.0):
        ps = [torch.nn.Parameter(torch.zeros_like(v)) for v in tree.values()]
        for p, v in zip(ps, tree.values()):
            p.grad = v.clone()
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm)
        torch.testing.assert_close(global_norm(tree), total, rtol=0, atol=1e-14)
        clipped = clip_by_global_norm(tree, max_norm)
        for p, k in zip(ps, tree):
            torch.testing.assert_close(clipped[k], p.grad, rtol=0, atol=1e-15)
        expected = min(float(total), max_norm / (1 + 1e-6 / float(total)))
        assert float(global_norm(clipped)) == pytest.approx(expected, rel=1e-12)


def test_clip_below_threshold_is_identity():
    tree = {"a": torch.tensor([3.0, 4.0], dtype=torch.float64)}
    assert torch.equal(clip_by_global_norm(tree, 10.0)["a"], tree["a"])


def test_weight_decay_is_added_after_clipping():
    # Tiny clip norm: the gradient contribution vanishes, the decay stays whole.
    params = {"w": torch.tensor([1.0, -2.0], dtype=torch.float64)}
    grad = {"w": torch.tensor([100.0, 100.0], dtype=torch.float64)}
    out = sgd_step(params, grad, {"lr": 0.5, "weight_decay": 0.1, "clip_norm": 1e-12})
    torch.testing.assert_close(out["w"], params["w"] * (1 - 0.5 * 0.1), rtol=0, atol=1e-12)


def test_sgd_step_is_pure_and_defaults():
    params = {"w": torch.tensor([1.0, 2.0], dtype=torch.float64)}
    d = {"w": torch.tensor([0.5, -1.0], dtype=torch.float64)}
    before = (params["w"].clone(), d["w"].clone())
    out = sgd_step(params, d, {"lr": 0.1})  # no weight_decay / clip_norm keys: plain SGD
    assert torch.equal(params["w"], before[0]) and torch.equal(d["w"], before[1])
    assert torch.equal(out["w"], params["w"] - 0.1 * d["w"])
    assert out["w"] is not params["w"]


def test_sgd_step_under_vmap_matches_loop():
    rng = np.random.default_rng(3)
    P = {"w": torch.from_numpy(rng.normal(size=(4, 3, 2))), "b": torch.from_numpy(rng.normal(size=(4, 2)))}
    D = {"w": torch.from_numpy(rng.normal(size=(4, 3, 2))) * 5, "b": torch.from_numpy(rng.normal(size=(4, 2)))}
    hp = {"lr": 0.1, "weight_decay": 0.01, "clip_norm": 2.0}
    batched = torch.func.vmap(lambda p, d: sgd_step(p, d, hp))(P, D)
    for i in range(4):
        one = sgd_step({k: v[i] for k, v in P.items()}, {k: v[i] for k, v in D.items()}, hp)
        for k in one:
            torch.testing.assert_close(batched[k][i], one[k], rtol=0, atol=1e-14)


def test_step_state_helpers():
    params = {"w": torch.zeros(2, dtype=torch.float64)}
    s = init_step_state(params, extra=1)
    assert s["steps"] == 0 and torch.isnan(s["loss"]) and s["extra"] == 1 and s["params"] is params
    s2 = advance(s, {"w": torch.ones(2, dtype=torch.float64)}, torch.tensor(0.5))
    assert s2["steps"] == 1 and float(s2["loss"]) == 0.5 and s2["extra"] == 1 and s["steps"] == 0
