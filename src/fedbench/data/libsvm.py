"""LIBSVM binary-classification datasets (a9a, epsilon) from svmlight files.

Files (LIBSVM "binary" page): ``a9a`` (32,561 rows) and ``a9a.t`` (16,281), 123 binary features;
``epsilon_normalized.bz2`` (400,000) and ``epsilon_normalized.t.bz2`` (100,000), 2,000 features
(each feature standardised, then each row scaled to unit norm, by the LIBSVM maintainers).
Read with ``sklearn.datasets.load_svmlight_file`` (which decompresses ``.bz2``/``.gz`` on the fly
while parsing), with ``n_features`` fixed so train and test agree even when the last feature never
occurs in one file. The sparse matrix is densified in row chunks into a float32 array
(epsilon: 400,000 x 2,000 x 4 B = 3.2 GB; the FedAc reference code densifies too).

Verification: the LIBSVM page publishes no checksums, so these files are verified by the row
counts it states (``rows`` in :data:`fedbench.data.sources.REMOTE`), checked after parsing: a
file cut short exactly at a line end parses cleanly, and only its row count gives it away. The
feature count is an upper bound enforced while parsing (a9a.t's highest index is 122, not 123).
A mismatch raises :class:`~fedbench.data.errors.ChecksumError` naming every bad file with the
expected and the found counts. Files vouched for by a mirror's SHA256SUMS
(``trust_mirror_checksums``) or pinned by a checksum are not count-checked.

Labels {-1, +1} (or {0, 1}) become {0, 1}: class 1 = the positive label. FedAc (paper 001) uses
only the training file; the test file is kept as the test split.

Returns x (n, d) float32, y int64 in {0, 1}, no natural clients.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedbench.data.errors import ChecksumError, CorruptFileError, reading
from fedbench.data.sources import REMOTE
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


def check_rows(paths: dict, source: str, found: dict[str, int]) -> None:
    """Check each file's parsed row count against the registry's ``rows``.

    Args:
        paths: ``{role: path}``; when it is a :class:`~fedbench.data.download.FetchedFiles`, the
            counts of the entries it was verified against (``paths.remote``), else ``REMOTE[source]``.
        source: the registry source (``"a9a"`` or ``"epsilon"``).
        found: ``{role: rows parsed}``.

    Raises:
        ChecksumError: one message naming every file whose count differs, expected and found.
    """
    remote = getattr(paths, "remote", None) or REMOTE[source]
    bad = []
    for role, n in found.items():
        f = remote.files[role]
        if f.rows is not None and n != f.rows:
            bad.append(f"  - {f.name} ({paths[role]}): {n:,} rows, expected {f.rows:,} (LIBSVM's dataset page; "
                       f"{f.features} features)")
    if bad:
        raise ChecksumError(
            f"{source}: {len(bad)} file(s) failed verification by their known row counts (LIBSVM publishes no "
            f"checksums):\n" + "\n".join(bad) + "\nEach is truncated or not the file LIBSVM serves: delete it (or "
            f"replace it in the mirror) with a fresh download of {remote.files['train'].url.rsplit('/', 1)[0]}/"
            f"<name> and prepare the dataset again")


def load_libsvm(paths: dict, name: str, n_features: int, source: str | None = None) -> Dataset:
    """A LIBSVM binary dataset from ``paths["train"]`` and ``paths["test"]``.

    ``source`` (``"a9a"``/``"epsilon"``): check the files' row counts (:func:`check_rows`).
    """
    x_tr, y_tr = read_svmlight(paths["train"], n_features)
    x_te, y_te = read_svmlight(paths["test"], n_features)
    if source is not None:
        check_rows(paths, source, {"train": len(x_tr), "test": len(x_te)})
    return Dataset(name=name, x_train=x_tr, y_train=_binary(y_tr, Path(paths["train"]).name), x_test=x_te,
                   y_test=_binary(y_te, Path(paths["test"]).name), num_classes=2,
                   meta={"label_map": {"-1 or 0": 0, "+1": 1}})


def load_a9a(paths: dict, name: str = "a9a") -> Dataset:
    """a9a: x (n, 123) float32 in {0, 1}."""
    return load_libsvm(paths, name, NUM_FEATURES["a9a"], "a9a")


def load_epsilon(paths: dict, name: str = "epsilon") -> Dataset:
    """epsilon (normalized): x (n, 2000) float32, unit-norm rows."""
    return load_libsvm(paths, name, NUM_FEATURES["epsilon"], "epsilon")
