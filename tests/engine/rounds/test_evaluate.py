"""fedbench.engine.rounds.evaluate: the evaluation of the server model (and the worst-class accuracy of fair
classification) and the regularized objective."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.rounds.evaluate import evaluate, regularized_objective
from fedbench.metrics.optimum import logistic_objective
from fedbench.models import build_model


def test_regularized_objective_adds_half_lambda_squared_norm_over_every_tensor():
    params = {"w": torch.tensor([3.0, 4.0], dtype=torch.float32), "b": torch.tensor([[1.0]], dtype=torch.float64)}
    assert regularized_objective(0.7, params, 0.1) == pytest.approx(0.7 + 0.05 * 26.0, rel=1e-15)
    assert regularized_objective(0.7, params, 0.0) == 0.7
    assert regularized_objective(0.7, params, None) == 0.7
    assert math.isnan(regularized_objective(float("nan"), params, 0.1))


def test_binary_logreg_objective_is_fedacs_F_to_float_precision():
    """For binary_logreg (no bias, logits [0, xᵀw]) the engine's mean cross-entropy plus (λ/2)‖w‖²
    is F(w) = (1/N) Σ log(1 + exp(−y xᵀw)) + (λ/2)‖w‖² (Yuan & Ma, NeurIPS 2020, §5), as the F*
    solver computes it."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 7))
    y = (rng.random(300) < 0.4).astype(np.int64)
    model = build_model({"name": "binary_logreg"}, (7,), 2)
    params = {k: v.double() for k, v in model.init(rng, dtype=torch.float64).items()}
    loss, _ = evaluate(model.apply, params, torch.from_numpy(x), torch.from_numpy(y), batch_size=64)
    got = regularized_objective(loss, params, 1e-3)
    want = logistic_objective(params["weight"].numpy(), x, y, 1e-3)
    assert got == pytest.approx(want, rel=1e-13, abs=0)


def _toy_cell(algorithm: str, hparams: dict, rounds: int, eval_every: int):
    """A 2-class toy dataset on a 3-client ``shared`` partition, and a binary_logreg cell spec with
    FedAc's oracle (one row per step, drawn with replacement), λ = 0.01, float64, a round-0 row."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4)).astype(np.float32)
    y = (x @ rng.normal(size=4) > 0).astype(np.int64)
    ds = Dataset("toy", x[:50], y[:50], x[50:], y[50:], num_classes=2)
    part = make_partition(ds, {"scheme": "shared", "num_clients": 3}, seed=0)
    spec = {
        "experiment": "t", "dataset": "toy", "partition": "shared", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": hparams, "model": {"name": "binary_logreg"},
        "local": {"epochs": None, "steps": 2, "batch_size": 1, "lr": 0.1, "lr_decay": 1.0,
                  "weight_decay": 0.01, "clip_norm": None, "replacement": True},
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds, "eval_every": eval_every,
        "target_accuracy": None, "dtype": "float64", "eval_initial": True,
    }
    return ds, part, spec


def test_cells_record_train_objective_at_every_evaluation():
    from fedbench.engine.rounds.loop import train

    ds, part, spec = _toy_cell("fedac", {"variant": "I", "beta_formula": "paper", "mu": None}, rounds=4, eval_every=2)
    rows, info = train(spec, ds, part, device="cpu", engine="sequential")
    assert [r["round"] for r in rows] == [0, 2, 4]
    w = info["params"]["weight"].numpy()
    assert rows[-1]["train_objective"] == pytest.approx(logistic_objective(w, ds.x_train, ds.y_train, 0.01),
                                                        rel=1e-13)
    assert all(r["train_objective"] > r["train_loss"] for r in rows)


def test_uplink_entropy_off_leaves_the_columns_null_and_changes_nothing_else():
    from fedbench.engine.rounds.loop import train

    ds, part, spec = _toy_cell("fedavg", {}, rounds=3, eval_every=1)
    on, _ = train(spec, ds, part, device="cpu", engine="vectorized")
    off, _ = train({**spec, "uplink_entropy": False}, ds, part, device="cpu", engine="vectorized")
    assert all(r["uplink_entropy_bits"] is None and r["uplink_entropy_bits_delta"] is None for r in off)
    assert on[-1]["uplink_entropy_bits"] > 0
    # without entropy the job may run whole rounds at once (FedAc's protocol: docs/engines.md), whose
    # weighted mean is summed in another order: the same numbers to float rounding, the same counts
    for a, b in zip(on, off):
        assert a["train_objective"] == pytest.approx(b["train_objective"], rel=1e-12, abs=0)
        assert a["uplink_nonzeros"] == b["uplink_nonzeros"] and a["uplink_floats"] == b["uplink_floats"]


def _apply(params, x):
    return x @ params["w"]


def test_worst_class_accuracy_is_the_minimum_over_present_classes():
    # 3 classes, class 2 absent from y; predictions: argmax of the one-hot rows
    preds = torch.tensor([0, 0, 1, 1, 1, 0, 1])
    y = torch.tensor([0, 0, 0, 1, 1, 1, 1])  # class 0: 2/3 right, class 1: 3/4 right
    x = torch.nn.functional.one_hot(preds, 3).double()
    params = {"w": torch.eye(3, dtype=torch.float64)}
    for batch_size in (2, 4096):  # chunked or not: the same counts
        loss, acc, worst = evaluate(_apply, params, x, y, batch_size=batch_size, worst_class=True)
        assert acc == 5 / 7 and worst == 2 / 3
        assert (loss, acc) == evaluate(_apply, params, x, y, batch_size=batch_size)
    nan = evaluate(_apply, params, x[:0], y[:0], worst_class=True)
    assert len(nan) == 3 and all(math.isnan(v) for v in nan)


# -- the L2 PGD attack of test_pgd_accuracy -----------------------------------------------------


def _linear(w: torch.Tensor, b: torch.Tensor):
    return lambda params, x: x.reshape(x.shape[0], -1) @ params["w"].T + params["b"]


def test_pgd_on_a_two_class_linear_model_is_the_closed_form_attack():
    """Two classes, logits Wx + b: ∇_δ ℓ ∝ w_o − w_y for every δ, so normalized PGD from 0 walks
    straight to δ* = −r (w_y − w_o)/‖w_y − w_o‖ (reached after 0.4 K steps, then projected back),
    the exact worst case in the ball; a row stays correct iff its margin exceeds r ‖w_y − w_o‖."""
    from fedbench.engine.rounds.evaluate import pgd_accuracy, pgd_perturbation

    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(2, 6, generator=g, dtype=torch.float64), torch.randn(2, generator=g, dtype=torch.float64)
    x = torch.randn(400, 6, generator=g, dtype=torch.float64)
    y = (x @ w.T + b).argmax(1)  # every row clean-correct
    y[:40] = 1 - y[:40]  # and some wrong ones
    apply, params, r = _linear(w, b), {"w": w, "b": b}, 0.7
    delta, fooled = pgd_perturbation(apply, params, x, y, r)
    d = w[y] - w[1 - y]
    want = -r * d / d.norm(dim=1, keepdim=True)
    assert torch.allclose(delta, want, rtol=0, atol=1e-13)
    margin = ((x @ w.T + b).gather(1, y[:, None]) - (x @ w.T + b).gather(1, (1 - y)[:, None]))[:, 0]
    robust = margin > r * d.norm(dim=1)
    assert torch.equal(~fooled, robust)
    assert pgd_accuracy(apply, params, x, y, r, batch_size=64) == float(robust.double().mean())
    assert 0 < pgd_accuracy(apply, params, x, y, r) < evaluate(apply, params, x, y)[1]
    assert pgd_accuracy(apply, params, x, y, 0.0) == evaluate(apply, params, x, y)[1]  # r = 0: clean accuracy
    assert math.isnan(pgd_accuracy(apply, params, x[:0], y[:0], r))


def test_pgd_raises_the_loss_and_stays_in_the_ball_on_a_nonlinear_model():
    from fedbench.engine.rounds.evaluate import pgd_accuracy, pgd_perturbation

    model = build_model({"name": "mlp", "hidden": [16]}, (8,), 3)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(200, 8, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (200,), generator=g)
    for r in (0.1, 1.0, 3.0):
        delta, fooled = pgd_perturbation(model.apply, params, x, y, r)
        assert float(delta.norm(dim=1).max()) <= r * (1 + 1e-12)
        clean = torch.nn.functional.cross_entropy(model.apply(params, x), y, reduction="none")
        attacked = torch.nn.functional.cross_entropy(model.apply(params, x + delta), y, reduction="none")
        assert float(attacked.mean()) > float(clean.mean())
        assert float((attacked >= clean - 1e-12).double().mean()) > 0.95
        assert fooled.sum() >= int((model.apply(params, x).argmax(1) != y).sum())  # δ⁰ = 0 counts
        acc = pgd_accuracy(model.apply, params, x, y, r)
        assert acc == float((~fooled).double().mean()) and acc <= evaluate(model.apply, params, x, y)[1]
    accs = [pgd_accuracy(model.apply, params, x, y, r) for r in (0.0, 0.5, 2.0, 8.0)]
    assert accs == sorted(accs, reverse=True) and accs[-1] < accs[0]
