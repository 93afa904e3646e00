import json

import numpy as np
import pytest

from fedbench.data.registry import (
    SHAKESPEARE_MAX_CLIENTS,
    SHAKESPEARE_MAX_SAMPLES,
    SOURCES,
    build_dataset,
    prepare_dataset,
    resolve_dataset_params,
)
from fedbench.data.store import load_dataset


def test_sources_and_defaults():
    assert set(SOURCES) == {"digits", "synthetic", "mnist", "emnist", "cifar10", "cifar100", "cinic10", "fed_emnist",
                            "fed_cifar100", "shakespeare", "a9a", "epsilon", "libsvm_file", "breast_cancer",
                            "quadratic", "mnist5k"}
    assert resolve_dataset_params({"source": "digits"}) == {"test_fraction": 0.2, "split_seed": 0}
    p = resolve_dataset_params({"source": "synthetic", "alpha": 0.5})
    assert p["alpha"] == 0.5 and p["beta"] == 1.0 and p["num_clients"] == 30 and set(p) == set(SOURCES["synthetic"])


def test_unknown_source_and_parameter_are_named():
    with pytest.raises(ValueError, match="imagenet.*allowed sources: digits, synthetic, mnist"):
        resolve_dataset_params({"source": "imagenet"})
    with pytest.raises(ValueError, match="'alpha'.*allowed parameters: test_fraction, split_seed"):
        resolve_dataset_params({"source": "digits", "alpha": 1})
    with pytest.raises(ValueError, match="source"):
        resolve_dataset_params({"alpha": 1})


def test_prepare_writes_a_loadable_dataset(tmp_path):
    out = prepare_dataset("syn_small", {"source": "synthetic", "num_clients": 4, "max_samples_per_client": 100},
                          tmp_path / "syn_small")
    ds = load_dataset(out, verify=True)
    assert ds.name == "syn_small" and ds.has_natural_clients and ds.feature_shape == (60,)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"] == "synthetic" and meta["params"]["num_clients"] == 4
    assert meta["params"]["alpha"] == 1.0  # defaults are recorded too


def test_prepare_digits(tmp_path):
    out = prepare_dataset("digits", {"source": "digits"}, tmp_path / "digits")
    ds = load_dataset(out)
    assert ds.x_train.shape == (1437, 1, 8, 8) and ds.num_classes == 10
    np.testing.assert_array_equal(ds.y_test, build_dataset("digits", {"source": "digits"}).y_test)


def test_bad_value_is_named(tmp_path):
    with pytest.raises(ValueError, match="test_fraction"):
        prepare_dataset("d", {"source": "digits", "test_fraction": 2}, tmp_path / "d")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("source, model, scheme, fragment", [
    ("mnist", "logreg", "natural", "'natural' needs a dataset with its own clients"),
    ("cifar10", "cnn", "pachinko", "'pachinko' needs coarse labels (cifar100, fed_cifar100); source 'cifar10'"),
    ("mnist", "lstm", "iid", "model 'lstm' takes text inputs (sources: shakespeare), but source 'mnist' gives image"),
    ("a9a", "cnn", "iid", "model 'cnn' takes image inputs"),
])
def test_a_model_or_scheme_the_source_cannot_feed_fails_the_config_check(source, model, scheme, fragment):
    """Caught by the config check, before anything is downloaded, naming the config key."""
    from fedbench.config import ConfigError, check_config
    from fedbench.data.registry import check_fits

    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        check_fits(source, model=model, scheme=scheme)
    cfg = {"datasets": {"d": {"source": source}},
           "experiments": {"e": {"seeds": [0], "rounds": 1, "local": {"epochs": 1, "batch_size": 8, "lr": 0.1},
                                 "datasets": {"d": {"model": {"name": model}, "partitions": {"p": {"scheme": scheme}}}},
                                 "algorithms": {"fedavg": {}}}}}
    with pytest.raises(ConfigError, match="experiments.e.datasets.d.(model|partitions.p): "):
        check_config(cfg)


def test_every_source_fits_its_natural_models_and_schemes():
    from fedbench.data.registry import COARSE_LABELS, INPUT_KIND, NATURAL_CLIENTS, check_fits

    assert set(INPUT_KIND) == set(SOURCES)
    for source in SOURCES:
        if source == "quadratic":  # rows [a, t] of a least-squares problem: its own model only
            check_fits(source, model="quadratic", scheme="natural")
            continue
        check_fits(source, model="logreg", scheme="iid")
        check_fits(source, model="mlp", scheme="dirichlet")
    for source in NATURAL_CLIENTS:
        check_fits(source, scheme="natural")
    for source in COARSE_LABELS:
        check_fits(source, model="cnn", scheme="pachinko")
    check_fits("shakespeare", model="lstm", scheme="natural")


def test_train_sizes_known_before_the_data_exist():
    from fedbench.data.registry import natural_client_count, train_size

    for tf in (0.2, 0.5, 0.01):
        params = resolve_dataset_params({"source": "digits", "test_fraction": tf})
        built = build_dataset("d", {"source": "digits", "test_fraction": tf})
        assert train_size("digits", params) == len(built.y_train)
    syn = resolve_dataset_params({"source": "synthetic", "num_clients": 5, "max_samples_per_client": 80})
    for extra in ({}, {"max_samples_per_client": None},
                  {"size_distribution": "powerlaw", "max_samples_per_client": None},
                  {"iid": True, "seed": 3, "test_fraction": 0.3}, {"size_mean": 800.0}):
        params = {**syn, **extra}  # the exact count, drawn from the seed without generating the data
        assert train_size("synthetic", params) == len(build_dataset("s", {"source": "synthetic", **params}).y_train)
    assert natural_client_count("synthetic", syn) == 5
    assert train_size("emnist", resolve_dataset_params({"source": "emnist"})) == 48_000  # EMNIST-L, a..j
    assert train_size("emnist", resolve_dataset_params({"source": "emnist", "num_classes": None})) == 124_800
    assert train_size("cinic10", resolve_dataset_params({"source": "cinic10", "train_splits": ["train", "valid"]})) \
        == 180_000
    sh = resolve_dataset_params({"source": "shakespeare"})
    assert train_size("shakespeare", sh) == SHAKESPEARE_MAX_SAMPLES  # a bound: parsed only in the job
    assert natural_client_count("shakespeare", sh) == SHAKESPEARE_MAX_CLIENTS
    assert train_size("shakespeare", {**sh, "max_train_samples": 10}) == SHAKESPEARE_MAX_CLIENTS * 10
    assert natural_client_count("fed_emnist", {}) == 3_400 and natural_client_count("mnist", {}) is None
    assert all(train_size(s, resolve_dataset_params({"source": s})) for s in SOURCES if s != "libsvm_file")


def test_libsvm_file_train_size_is_its_lines(tmp_path):
    from fedbench.data.registry import train_size

    p = tmp_path / "d.svm"
    p.write_text("1 1:1\n-1 2:1\n1 1:2\n-1 3:1")  # no newline at the end: 4 rows
    params = resolve_dataset_params({"source": "libsvm_file", "path": str(p)})
    for tf, n in ((0.0, 4), (0.5, 2)):
        params["test_fraction"] = tf
        assert train_size("libsvm_file", params) == len(build_dataset("d", {"source": "libsvm_file", **params}).y_train)
        assert train_size("libsvm_file", params) == n
    assert train_size("libsvm_file", {**params, "path": str(tmp_path / "d.svm.bz2")}) is None


def test_classes_known_before_the_data_exist():
    from fedbench.data.registry import train_classes

    for tf in (0.2, 0.99):  # the stratified split keeps every class even in a tiny train split
        params = resolve_dataset_params({"source": "digits", "test_fraction": tf})
        built = build_dataset("d", {"source": "digits", **params})
        assert train_classes("digits", params) == len(np.unique(built.y_train))
    assert train_classes("emnist", resolve_dataset_params({"source": "emnist"})) == 10
    assert train_classes("emnist", resolve_dataset_params({"source": "emnist", "num_classes": None})) == 26
    assert train_classes("synthetic", {}) is None and train_classes("shakespeare", {}) is None
