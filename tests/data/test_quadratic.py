"""The federated quadratic problem as a dataset (:mod:`fedbench.data.quadratic`): the stored rows
define exactly the generated A_i, c_i (1e-12), spectra in [μ, L], ‖c_i‖ ≤ C, noise orthogonal to the
design, keyed and reproducible, registered (natural clients, float64 on disk), parameters checked
with their names."""

import numpy as np
import pytest

from fedbench.data.partition import client_indices, make_partition
from fedbench.data.quadratic import ParamError, check_params, client_problem, client_quadratics, generate_quadratic
from fedbench.data.registry import (
    INPUT_KIND,
    NATURAL_CLIENTS,
    check_fits,
    natural_client_count,
    prepare_dataset,
    resolve_dataset_params,
    train_size,
)
from fedbench.data.store import load_dataset


@pytest.mark.parametrize("kw", [{}, {"examples_per_client": 23, "noise": 0.4}, {"shared_basis": True},
                                {"spectrum": "linspace", "dim": 3, "L": 50.0}])
def test_rows_define_exactly_the_generated_quadratics(kw):
    params = {"num_clients": 5, "dim": 6, "mu": 0.5, "L": 8.0, "c_radius": 2.0, "seed": 3} | kw
    ds = generate_quadratic(**params)
    d = params["dim"]
    n = params.get("examples_per_client") or d
    assert ds.x_train.shape == (5 * n, d + 1) and ds.x_train.dtype == np.float64
    assert ds.num_classes == 1 and not ds.y_train.any()
    np.testing.assert_array_equal(ds.client_train, np.repeat(np.arange(5), n))
    np.testing.assert_array_equal(ds.x_test, ds.x_train)
    A, c, p = client_quadratics(ds.x_train, ds.client_train)
    np.testing.assert_allclose(p, 0.2)
    full = {k: v for k, v in params.items()}
    for i in range(5):
        gen = client_problem(i, **full)
        np.testing.assert_allclose(A[i], gen["A"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c[i], gen["c"], rtol=0, atol=1e-12)
        ev = np.linalg.eigvalsh(A[i])
        assert ev[0] == pytest.approx(params["mu"], abs=1e-12) and ev[-1] == pytest.approx(params["L"], abs=1e-12)
        assert np.linalg.norm(c[i]) <= params["c_radius"]
        if params.get("shared_basis"):
            np.testing.assert_allclose(A[i], np.diag(np.diag(A[i])), atol=1e-12)
    # the mean loss over a client's rows is ½(x − c)ᵀA(x − c) + ½ noise²
    x = np.random.default_rng(0).normal(size=d)
    rows = ds.x_train[ds.client_train == 1]
    loss = 0.5 * np.mean((rows[:, :-1] @ x - rows[:, -1]) ** 2)
    quad = 0.5 * (x - c[1]) @ A[1] @ (x - c[1])
    assert loss == pytest.approx(quad + 0.5 * kw.get("noise", 0.0) ** 2, rel=1e-12)


def test_client_bases_differ_and_the_problem_is_heterogeneous():
    ds = generate_quadratic(num_clients=3, dim=4, seed=0)
    A, c, _ = client_quadratics(ds.x_train, ds.client_train)
    assert np.abs(A[0] - A[1]).max() > 0.1 and np.abs(c[0] - c[1]).max() > 1e-3


def test_keyed_and_reproducible():
    a = generate_quadratic(num_clients=4, dim=3, seed=1)
    b = generate_quadratic(num_clients=6, dim=3, seed=1)
    np.testing.assert_array_equal(a.x_train, b.x_train[: len(a.x_train)])  # a client does not depend on the others
    assert not np.array_equal(a.x_train, generate_quadratic(num_clients=4, dim=3, seed=2).x_train)


@pytest.mark.parametrize("kw,key", [
    ({"num_clients": 0}, "num_clients"), ({"dim": 0}, "dim"), ({"mu": 0.0}, "mu"), ({"L": 0.5}, "L"),
    ({"dim": 1, "L": 2.0}, "L"), ({"spectrum": "log"}, "spectrum"), ({"shared_basis": 1}, "shared_basis"),
    ({"c_radius": -1.0}, "c_radius"), ({"examples_per_client": 5}, "examples_per_client"),
    ({"noise": 0.1}, "noise"), ({"noise": -1.0, "examples_per_client": 20}, "noise"), ({"seed": -1}, "seed"),
])
def test_bad_parameters_name_their_key(kw, key):
    with pytest.raises(ParamError) as e:
        check_params(**({"dim": 10} | kw))
    assert e.value.key == key


def test_registered_natural_float64_and_only_for_the_quadratic_model(tmp_path):
    assert INPUT_KIND["quadratic"] == "quadratic" and "quadratic" in NATURAL_CLIENTS
    params = resolve_dataset_params({"source": "quadratic", "num_clients": 7, "dim": 3, "examples_per_client": 4,
                                     "noise": 0.1})
    assert train_size("quadratic", params) == 28 and natural_client_count("quadratic", params) == 7
    check_fits("quadratic", model="quadratic", scheme="natural")
    with pytest.raises(ValueError, match="only model 'quadratic'"):
        check_fits("quadratic", model="logreg")
    with pytest.raises(ValueError, match="takes quadratic inputs"):
        check_fits("digits", model="quadratic")
    path = prepare_dataset("q", {"source": "quadratic", **params}, tmp_path / "q", progress=False)
    ds = load_dataset(path, verify=True)
    assert ds.x_train.dtype == np.float64 and ds.meta["x_dtype"] == "float64"
    np.testing.assert_array_equal(ds.x_train, generate_quadratic(**params).x_train)
    part = make_partition(ds, {"scheme": "natural"}, seed=0)
    assert [len(ix) for ix in client_indices(part, "train")] == [4] * 7
