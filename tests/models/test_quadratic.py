"""The quadratic model (:mod:`fedbench.models.quadratic`): its own loss ½(aᵀx − t)², the engine's
gradient A_i(x − c_i) on a full client batch (1e-12), padded rows (label −100) excluded exactly,
evaluation without accuracy, options checked."""

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, get_algorithm
from fedbench.data.partition import make_partition
from fedbench.data.quadratic import client_quadratics, generate_quadratic
from fedbench.engine.rounds.evaluate import evaluate
from fedbench.engine.rounds.loop import train
from fedbench.models import build_model, make_grad_fn, make_loss_fn, model_options


@pytest.fixture(scope="module")
def data():
    ds = generate_quadratic(num_clients=3, dim=4, examples_per_client=9, noise=0.2, seed=0)
    return ds, client_quadratics(ds.x_train, ds.client_train)


def _model(**opts):
    return build_model({"name": "quadratic", **opts}, (5,), 1)


def test_full_batch_gradient_and_loss_are_the_client_quadratic(data):
    ds, (A, c, _) = data
    model = _model()
    x = torch.from_numpy(np.random.default_rng(1).normal(size=4))
    rows = ds.client_train == 2
    xb, yb = torch.from_numpy(ds.x_train[rows]), torch.from_numpy(ds.y_train[rows])
    grads, loss = make_grad_fn(model)({"weight": x}, xb, yb)
    e = x.numpy() - c[2]
    np.testing.assert_allclose(grads["weight"].numpy(), A[2] @ e, rtol=0, atol=1e-12)
    assert float(loss) == pytest.approx(0.5 * e @ A[2] @ e + 0.5 * 0.2**2, rel=1e-12)


def test_padded_rows_add_nothing(data):
    ds, _ = data
    model = _model()
    x = {"weight": torch.from_numpy(np.random.default_rng(2).normal(size=4))}
    xb, yb = torch.from_numpy(ds.x_train[:7]), torch.from_numpy(ds.y_train[:7])
    padded_x = torch.cat([xb, xb[:3]])
    padded_y = torch.cat([yb, torch.full((3,), -100)])
    g1, l1 = make_grad_fn(model)(x, xb, yb)
    g2, l2 = make_grad_fn(model)(x, padded_x, padded_y)
    # The padded rows add exact zeros; a longer sum may round its last bit otherwise (AVX-512 sums
    # 10 rows in another order than 7): equal to 2 ulp.
    ulp2 = 2 * torch.finfo(torch.float64).eps
    assert float(abs(l1 - l2)) <= 1e-15 * float(l1)
    torch.testing.assert_close(g1["weight"], g2["weight"], rtol=ulp2, atol=0)
    # under vmap too (the vectorized engine's path)
    gv, lv = torch.func.vmap(make_grad_fn(model), in_dims=(None, 0, 0))(x, padded_x[None], padded_y[None])
    torch.testing.assert_close(gv["weight"][0], g1["weight"], rtol=ulp2, atol=0)
    assert make_loss_fn(model)(x, xb, yb) == pytest.approx(float(l1), rel=1e-15)


def test_evaluate_reports_the_mean_loss_and_no_accuracy(data):
    ds, (A, c, p) = data
    model = _model()
    x = torch.zeros(4, dtype=torch.float64)
    loss, acc = evaluate(model.apply, {"weight": x}, torch.from_numpy(ds.x_train), torch.from_numpy(ds.y_train),
                         batch_size=5, loss=model.loss)
    want = sum(pi * 0.5 * ci @ Ai @ ci for pi, Ai, ci in zip(p, A, c)) + 0.5 * 0.2**2
    assert loss == pytest.approx(want, rel=1e-12) and np.isnan(acc)


def test_init_and_options():
    zeros = _model().init(np.random.default_rng(0), dtype=torch.float64)
    assert torch.equal(zeros["weight"], torch.zeros(4, dtype=torch.float64))
    normal = _model(init="normal").init(np.random.default_rng(0), dtype=torch.float64)
    np.testing.assert_array_equal(normal["weight"].numpy(), np.random.default_rng(0).standard_normal(4))
    assert model_options({"name": "quadratic"}) == ("quadratic", {"init": "zeros"})
    with pytest.raises(ValueError, match="'init' must be one of"):
        model_options({"name": "quadratic", "init": "ones"})
    with pytest.raises(ValueError, match="rows"):
        build_model({"name": "quadratic"}, (1,), 1).init(np.random.default_rng(0))


# The minimax algorithms (fedbench.algorithms.sgda) need a second player (a minimax model's ``y.*``
# leaves): they are checked on quadratic saddle problems instead (tests/algorithms/test_sgda.py).
SINGLE_PLAYER = [a for a in ALGORITHMS if "projection" not in get_algorithm(a).HPARAMS]


@pytest.mark.parametrize("algorithm", SINGLE_PLAYER)
def test_every_algorithm_trains_the_quadratic_problem_in_both_engines(algorithm):
    """The problem is a dataset like any other: every registered single-player algorithm runs on it
    (minibatches, partial participation, weight decay), the two engines agree to 1e-10, and the loss
    is finite."""
    ds = generate_quadratic(num_clients=4, dim=3, examples_per_client=8, noise=0.1, seed=0)
    part = make_partition(ds, {"scheme": "natural"}, seed=0)
    hparams = dict(get_algorithm(algorithm).HPARAMS)
    if algorithm in ("local_update", "maml"):  # η multiplies a sum of gradients (FedAvg is η = γ = 0.05)
        hparams["server_lr"] = 0.05
    spec = {"experiment": "t", "dataset": "q", "partition": "natural", "algorithm": algorithm, "seed": 0,
            "algorithm_name": algorithm, "hparams": hparams, "model": {"name": "quadratic"},
            "local": {"epochs": None, "steps": 3, "batch_size": 4, "lr": 0.05, "lr_decay": 1.0, "weight_decay": 0.01,
                      "clip_norm": None},
            "sampling": {"scheme": "uniform", "participation": 0.5}, "rounds": 2, "eval_every": 1,
            "target_accuracy": None, "dtype": "float64"}
    rows, info = train(spec, ds, part, device="cpu", engine="sequential")
    rows_v, info_v = train(spec, ds, part, device="cpu", engine="vectorized", chunk_size=2)
    assert info["status"] == info_v["status"] == "ok" and np.isfinite(rows[-1]["train_loss"])
    assert np.isnan(rows[-1]["test_accuracy"])
    for k, v in info["params"].items():
        np.testing.assert_allclose(info_v["params"][k].numpy(), v.numpy(), rtol=1e-10, atol=1e-14)
    assert rows_v[-1]["train_loss"] == pytest.approx(rows[-1]["train_loss"], rel=1e-10)
