"""fedbench.models.minimax: the fair-classification and robust-training problems as models."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedbench.models import build_model, make_grad_fn, model_options


def _fair(lam=0.3):
    return build_model({"name": "logreg", "minimax": {"problem": "fair", "lambda": lam}}, (4,), 3)


def test_fair_loss_is_the_class_weighted_objective_and_ignores_padding():
    model = _fair()
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    assert params["y.class_weights"].tolist() == pytest.approx([1 / 3] * 3)
    params["y.class_weights"] = torch.tensor([0.5, 0.2, 0.3], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 0, 1, 1])  # class 2 absent: F_2 = 0
    ce = F.cross_entropy(model.apply(params, x), y, reduction="none")
    want = 0.5 * ce[y == 0].mean() + 0.2 * ce[y == 1].mean() - 0.15 * float((params["y.class_weights"] ** 2).sum())
    grad_fn = make_grad_fn(model)
    grads, loss = grad_fn(params, x, y)
    torch.testing.assert_close(loss, want, rtol=1e-14, atol=0)
    torch.testing.assert_close(grads["y.class_weights"],
                               torch.stack([ce[y == 0].mean(), ce[y == 1].mean(), torch.tensor(0.0, dtype=x.dtype)])
                               - 0.3 * params["y.class_weights"], rtol=1e-13, atol=1e-15)
    # padded rows (label −100, repeating a real row) change nothing, under vmap too
    xp, yp = torch.cat([x, x[:2]]), torch.cat([y, torch.full((2,), -100)])
    g2, l2 = grad_fn(params, xp, yp)
    torch.testing.assert_close(l2, loss, rtol=1e-14, atol=0)
    stacked = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in params.items()}
    gv, lv = torch.func.vmap(grad_fn, in_dims=(0, None, None))(stacked, xp, yp)
    torch.testing.assert_close(lv[1], loss, rtol=1e-14, atol=0)
    for k in grads:
        torch.testing.assert_close(g2[k], grads[k], rtol=1e-13, atol=1e-15)
        torch.testing.assert_close(gv[k][0], grads[k], rtol=1e-13, atol=1e-15)


def test_fair_empty_classes_batch_mean():
    model = build_model({"name": "logreg", "minimax": {"problem": "fair", "lambda": 0.0,
                                                       "empty_classes": "batch_mean"}}, (4,), 3)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    x = torch.randn(5, 4, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 0, 1])
    ce = F.cross_entropy(model.apply(params, x), y, reduction="none")
    grads, loss = make_grad_fn(model)(params, torch.cat([x, x[:1]]), torch.cat([y, torch.tensor([-100])]))
    torch.testing.assert_close(grads["y.class_weights"], torch.stack([ce[y == 0].mean(), ce[y == 1].mean(), ce.mean()]),
                               rtol=1e-13, atol=0)


def test_robust_apply_adds_the_perturbation():
    base = build_model({"name": "mlp", "hidden": [5]}, (4,), 3)
    model = build_model({"name": "mlp", "hidden": [5], "minimax": {"problem": "robust"}}, (4,), 3)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    assert params["y.perturbation"].shape == (4,) and float(params["y.perturbation"].abs().max()) == 0.0
    params["y.perturbation"] = torch.tensor([0.1, -0.2, 0.3, 0.0], dtype=torch.float64)
    x = torch.randn(5, 4, dtype=torch.float64)
    base_params = {k: v for k, v in params.items() if not k.startswith("y.")}
    torch.testing.assert_close(model.apply(params, x), base.apply(base_params, x + params["y.perturbation"]))
    grads, _ = make_grad_fn(model)(params, x, torch.tensor([0, 1, 2, 0, 1]))
    assert float(grads["y.perturbation"].abs().max()) > 0


def test_options_and_errors():
    assert model_options({"name": "logreg"}) == ("logreg", {})  # other models keep their options
    assert model_options({"name": "logreg", "minimax": {"problem": "fair"}})[1] == {
        "minimax": {"problem": "fair", "lambda": 0.1, "empty_classes": "zero"}}
    for cfg, match in (({"problem": "adversarial"}, "must be one of fair, robust"),
                       ({"problem": "fair", "lambda": -1}, "'lambda' must be a number >= 0"),
                       ({"problem": "robust", "lambda": 1}, "has no option 'lambda'"),
                       ({"problem": "fair", "empty_classes": "drop"}, "'empty_classes' must be one of zero"),
                       ("fair", "must be a mapping")):
        with pytest.raises(ValueError, match=match):
            model_options({"name": "logreg", "minimax": cfg})
    with pytest.raises(ValueError, match="real-valued inputs"):
        model_options({"name": "lstm", "minimax": {"problem": "robust"}})
