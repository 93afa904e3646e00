"""LIBSVM binary-classification datasets (a9a, epsilon) from svmlight files.

Files (LIBSVM "binary" page): ``a9a`` (32,561 rows) and ``a9a.t`` (16,281), 123 binary features;
``epsilon_normalized.bz2`` (400,000) and ``epsilon_normalized.t.bz2`` (100,000), 2,000 features
(each feature standardised, then each row scaled to unit norm, by the LIBSVM maintainers).
Read with ``sklearn.datasets.load_svmlight_file`` (which decompresses ``.bz2``/``.gz`` on the fly
while parsing), with ``n_features`` fixed so train and test agree even when the last feature never
occurs in one file. The sparse matrix is densified in row chunks into a float32 array
(epsilon: 400,000 x 2,000 x 4 B = 3.2 GB; the FedAc reference code densifies too).

Labels {-1, +1} (or {0, 1}) become {0, 1}: class 1 = the positive label. FedAc (paper 001) uses
only the training file; the test file is kept as the test split.

Returns x (n, d) float32, y int64 in {0, 1}, no natural clients.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.store import Dataset

NUM_FEATURES = {"a9a": 123, "epsilon": 2000}
CHUNK = 20000  # rows densified per step


def read_svmlight(path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(x (n, n_features) float32 dense, raw labels (n,) float64) of one svmlight file."""
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    with reading(path, "svmlight"):
        xs, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float32)
    x = np.empty(xs.shape, dtype=np.float32)
    for i in range(0, xs.shape[0], CHUNK):
        x[i:i + CHUNK] = xs[i:i + CHUNK].toarray()
    return x, y


def _binary(y: np.ndarray, fname: str) -> np.ndarray:
    vals = set(np.unique(y).tolist())
    if not vals <= {-1.0, 1.0} and not vals <= {0.0, 1.0}:
        raise CorruptFileError(f"{fname}: labels {sorted(vals)[:5]} are not binary (-1/+1 or 0/1)")
    return (y > 0).astype(np.int64)


def load_libsvm(paths: dict, name: str, n_features: int) -> Dataset:
    """A LIBSVM binary dataset from ``paths["train"]`` and ``paths["test"]``."""
    x_tr, y_tr = read_svmlight(paths["train"], n_features)
    x_te, y_te = read_svmlight(paths["test"], n_features)
    return Dataset(name=name, x_train=x_tr, y_train=_binary(y_tr, Path(paths["train"]).name), x_test=x_te,
                   y_test=_binary(y_te, Path(paths["test"]).name), num_classes=2,
                   meta={"label_map": {"-1 or 0": 0, "+1": 1}})


def load_a9a(paths: dict, name: str = "a9a") -> Dataset:
    """a9a: x (n, 123) float32 in {0, 1}."""
    return load_libsvm(paths, name, NUM_FEATURES["a9a"])


def load_epsilon(paths: dict, name: str = "epsilon") -> Dataset:
    """epsilon (normalized): x (n, 2000) float32, unit-norm rows."""
    return load_libsvm(paths, name, NUM_FEATURES["epsilon"])
