"""Binary logistic regression without bias (FedAc's model) and its float64 objective.

Tolerances: the engine's loss and gradient against the closed forms log1p(exp(−y z)) and
−y σ(−y z) x: 1e-14 absolute and relative (float64; torch's logsumexp rounds log(1 + e^{−|z|}) to
~1e-16 absolute); the objective against a direct numpy formula: 1e-14 relative; finite differences:
1e-7 relative (central differences, h = 1e-6); the engines against each other: 1e-10 relative
(float64), as tests/engine/clients/test_vectorized.py.
"""

import numpy as np
import pytest
import torch

from fedbench.config import ConfigError, check_config
from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.rounds.loop import train
from fedbench.models import MODELS, build_model, check_classes, make_grad_fn, make_loss_fn, model_options

TOL = {"rtol": 1e-14, "atol": 1e-14}


def _model(d=5, **opts):
    return build_model({"name": "binary_logreg", **opts}, (d,), 2)


def _data(n=40, d=5, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.normal(size=(n, d)))
    w = torch.from_numpy(rng.normal(size=d) * scale / np.sqrt(d))
    y = torch.from_numpy(rng.integers(0, 2, size=n))
    return x, y, w


def _softplus_ref(z, y):
    """log(1 + exp(−s z)), s = 2y − 1, directly in float64 numpy (fine for |z| ≲ 700)."""
    s = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
    return np.log1p(np.exp(-s * np.asarray(z)))


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


# ------------------------------------------------------------------------------ the model


def test_registry_shapes_and_logits():
    assert MODELS["binary_logreg"] == {"init": "normal"}
    model = _model(d=6)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    assert {k: tuple(v.shape) for k, v in p.items()} == {"weight": (6,)}
    assert model.batch_clients_on_cpu
    x = torch.from_numpy(np.random.default_rng(1).normal(size=(4, 2, 3)))  # flattened: D = 6
    logits = model.apply(p, x)
    assert logits.shape == (4, 2)
    assert torch.equal(logits[:, 0], torch.zeros(4, dtype=torch.float64))
    torch.testing.assert_close(logits[:, 1], x.reshape(4, 6) @ p["weight"], rtol=0, atol=0)


def test_engine_loss_is_the_logistic_loss_per_sample():
    x, y, w = _data(n=64, scale=8.0)  # margins up to ~±25
    loss_fn = make_loss_fn(_model())
    params = {"weight": w}
    z = (x @ w).numpy()
    per_sample = torch.stack([loss_fn(params, x[i:i + 1], y[i:i + 1]) for i in range(len(y))]).numpy()
    np.testing.assert_allclose(per_sample, _softplus_ref(z, y), **TOL)
    np.testing.assert_allclose(float(loss_fn(params, x, y)), _softplus_ref(z, y).mean(), **TOL)


def test_engine_loss_is_stable_at_large_margins():
    loss_fn = make_loss_fn(_model(d=1))
    x = torch.tensor([[1000.0], [-1000.0], [1000.0], [-1000.0]], dtype=torch.float64)
    y = torch.tensor([1, 1, 0, 0])
    per = [float(loss_fn({"weight": torch.ones(1, dtype=torch.float64)}, x[i:i + 1], y[i:i + 1])) for i in range(4)]
    assert per == [0.0, 1000.0, 1000.0, 0.0]


def test_engine_gradient_is_the_closed_form():
    x, y, w = _data(n=50, scale=6.0)
    grads, loss = make_grad_fn(_model())({"weight": w}, x, y)
    s = 2.0 * y.numpy() - 1.0
    z = (x @ w).numpy()
    closed = ((-s * _sigmoid(-s * z))[:, None] * x.numpy()).mean(axis=0)  # mean of −y σ(−y z) x
    np.testing.assert_allclose(grads["weight"].numpy(), closed, **TOL)
    np.testing.assert_allclose(float(loss), _softplus_ref(z, y).mean(), **TOL)


def test_vmap_over_stacked_clients_gives_each_clients_values():
    rng = np.random.default_rng(3)
    c, b, d = 4, 9, 5
    xs = torch.from_numpy(rng.normal(size=(c, b, d)))
    ys = torch.from_numpy(rng.integers(0, 2, size=(c, b)))
    ws = torch.from_numpy(rng.normal(size=(c, d)) * 2.0)
    grad_fn = make_grad_fn(_model(d))
    grads, losses = torch.func.vmap(grad_fn)({"weight": ws}, xs, ys)
    assert grads["weight"].shape == (c, d) and losses.shape == (c,)
    for k in range(c):
        g, loss = grad_fn({"weight": ws[k]}, xs[k], ys[k])
        s, z = 2.0 * ys[k].numpy() - 1.0, (xs[k] @ ws[k]).numpy()
        closed = ((-s * _sigmoid(-s * z))[:, None] * xs[k].numpy()).mean(axis=0)
        np.testing.assert_allclose(grads["weight"][k].numpy(), closed, **TOL)
        np.testing.assert_allclose(grads["weight"][k].numpy(), g["weight"].numpy(), **TOL)
        np.testing.assert_allclose(float(losses[k]), float(loss), **TOL)


def test_init_is_standard_normal_from_the_keyed_generator_or_zeros():
    d = 123
    p = _model(d).init(np.random.default_rng(7), dtype=torch.float64)
    np.testing.assert_array_equal(p["weight"].numpy(), np.random.default_rng(7).standard_normal(d))
    p32 = _model(d).init(np.random.default_rng(7))
    assert p32["weight"].dtype == torch.float32
    torch.testing.assert_close(p32["weight"], p["weight"].float(), rtol=0, atol=0)
    rng = np.random.default_rng(7)
    z = _model(d, init="zeros").init(rng, dtype=torch.float64)
    assert torch.equal(z["weight"], torch.zeros(d, dtype=torch.float64))
    assert rng.standard_normal() == np.random.default_rng(7).standard_normal()  # the generator is unused


def test_numpy_legacy_init_is_the_fedac_authors_vector_for_the_seed():
    """The FedAc authors' code: np.random.seed(seed); w = np.random.randn(d) (Yuan & Ma, NeurIPS 2020)."""
    d = 123
    for seed in (0, 1, 2**32 - 1):
        np.random.seed(seed)
        authors = np.random.randn(d)
        rng = np.random.default_rng(7)
        p = _model(d, init="numpy_legacy").init(rng, dtype=torch.float64, seed=seed)
        np.testing.assert_array_equal(p["weight"].numpy(), authors)
        assert rng.standard_normal() == np.random.default_rng(7).standard_normal()  # the generator is unused
    for bad in (None, -1, 2**32):
        with pytest.raises(ValueError, match="'numpy_legacy' needs the run's seed"):
            _model(d, init="numpy_legacy").init(np.random.default_rng(0), seed=bad)
    assert model_options({"name": "binary_logreg", "init": "numpy_legacy"})[1] == {"init": "numpy_legacy"}


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_numpy_legacy_init_reaches_the_engines_with_the_runs_seed(binary_data, engine):
    ds, part = binary_data
    spec = _spec("fedavg", {}, {"lr": 0.0}) | {"seed": 5, "model": {"name": "binary_logreg", "init": "numpy_legacy"}}
    _, info = train(spec, ds, part, device="cpu", engine=engine)  # η = 0: w stays w₀
    np.testing.assert_array_equal(info["params"]["weight"].numpy(), np.random.RandomState(5).standard_normal(5))


def test_options_are_checked():
    assert model_options({"name": "binary_logreg"}) == ("binary_logreg", {"init": "normal"})
    with pytest.raises(ValueError, match="'init' must be one of"):
        model_options({"name": "binary_logreg", "init": "uniform"})


def test_refuses_a_dataset_that_is_not_binary():
    with pytest.raises(ValueError, match="exactly 2 classes, but this one has 10"):
        build_model({"name": "binary_logreg"}, (5,), 10)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        check_classes("binary_logreg", 3)
    check_classes("binary_logreg", 2)
    check_classes("binary_logreg", None)  # not known before the data exist: nothing to check
    check_classes("logreg", 10)


def _config(source: dict, model) -> dict:
    return {
        "datasets": {"x": source},
        "experiments": {"e": {
            "seeds": [0], "rounds": 2, "local": {"epochs": 1, "batch_size": 4, "lr": 0.1},
            "datasets": {"x": {"model": model, "partitions": {"p": {"scheme": "iid", "num_clients": 4}}}},
            "algorithms": {"fedavg": {}},
        }},
    }


def test_config_refuses_a_non_binary_source_before_any_job():
    with pytest.raises(ConfigError) as info:
        check_config(_config({"source": "digits"}, "binary_logreg"))
    msg = str(info.value)
    assert "experiments.e.datasets.x.model" in msg and "exactly 2 classes, but this one has 10" in msg
    check_config(_config({"source": "a9a"}, "binary_logreg"))
    check_config(_config({"source": "a9a"}, {"name": "binary_logreg", "init": "zeros"}))
    with pytest.raises(ConfigError, match=r"experiments\.e\.datasets\.x\.model: .*'init' must be one of"):
        check_config(_config({"source": "a9a"}, {"name": "binary_logreg", "init": "ones"}))
    legacy = _config({"source": "a9a"}, {"name": "binary_logreg", "init": "numpy_legacy"})
    check_config(legacy)
    legacy["experiments"]["e"]["seeds"] = [1, 2**32]  # RandomState takes seeds < 2^32: refused before any job
    with pytest.raises(ConfigError, match=r"experiments\.e\.seeds\[1\]: with model init numpy_legacy"):
        check_config(legacy)


# ------------------------------------------------------------------------------ through the engines


@pytest.fixture(scope="module")
def binary_data():
    rng = np.random.default_rng(0)
    n, d = 240, 5
    w = rng.normal(size=d)
    x = rng.normal(size=(n + 40, d)).astype(np.float32)
    y = (rng.random(n + 40) < 1.0 / (1.0 + np.exp(-x @ w))).astype(np.int64)
    ds = Dataset("toy2", x[:n], y[:n], x[n:], y[n:], num_classes=2)
    part = make_partition(ds, {"scheme": "iid", "num_clients": 8}, seed=0)
    return ds, part


def _spec(algorithm, hparams, local):
    return {
        "experiment": "t", "dataset": "toy2", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": hparams, "model": {"name": "binary_logreg", "init": "normal"},
        "local": {"epochs": None, "steps": 4, "batch_size": 1, "lr": 0.1, "lr_decay": 1.0,
                  "weight_decay": 1e-2, "clip_norm": None} | local,
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": 3, "eval_every": 1,
        "target_accuracy": None, "dtype": "float64",
    }


def _rel(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].double() - b[k].double()).abs().max() / b[k].double().abs().max()) for k in a)


@pytest.mark.parametrize("algorithm, hparams, local", [
    ("fedavg", {}, {}),
    ("fedac", {"variant": "I", "beta_formula": "paper", "mu": None}, {}),
    ("mb_sgd", {}, {"batch_size": 4}),
])
def test_trains_identically_through_the_sequential_and_vectorized_engines(binary_data, algorithm, hparams, local):
    ds, part = binary_data
    spec = _spec(algorithm, hparams, local)
    rows_s, info_s = train(spec, ds, part, device="cpu", engine="sequential")
    rows_v, info_v = train(spec, ds, part, device="cpu", engine="vectorized")
    assert info_s["engine"] == "sequential" and info_v["engine"] == "vectorized"
    assert set(info_s["params"]) == {"weight"} and info_s["params"]["weight"].dtype == torch.float64
    assert _rel(info_s["params"], info_v["params"]) <= 1e-10
    assert len(rows_s) == len(rows_v) == 3
    for a, b in zip(rows_s, rows_v):
        for key in ("train_loss", "test_loss"):
            assert abs(a[key] - b[key]) <= 1e-10 * abs(a[key]), key
    # the model moved from w₀ ~ N(0, I), and the engine's train loss is the objective's data term (λ = 0)
    w0 = build_model(spec["model"], (5,), 2).init(np.random.default_rng(0), dtype=torch.float64)["weight"]
    assert not torch.equal(info_s["params"]["weight"], w0)
    z = ds.x_train.astype(np.float64) @ info_s["params"]["weight"].numpy()
    data_term = np.mean(np.logaddexp(0.0, -(2.0 * ds.y_train - 1.0) * z))
    np.testing.assert_allclose(rows_s[-1]["train_loss"], data_term, rtol=1e-14, atol=0)
