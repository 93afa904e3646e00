"""scikit-learn's bundled handwritten digits: a small image dataset that needs no download.

Source: ``sklearn.datasets.load_digits`` (the UCI "Optical Recognition of Handwritten Digits"
test set, 1,797 images of 8x8 pixels with integer intensities 0..16, 10 classes). It ships inside
the scikit-learn wheel, so the default workflow runs offline in seconds.

The split is fixed: a stratified ``train_test_split`` with ``test_fraction`` (default 0.2) and
``split_seed`` (default 0) gives 1,437 train / 360 test images. The dataset has no natural
clients; partition it with :mod:`fedbench.data.partition`.
"""

from __future__ import annotations

import numpy as np

from fedbench.data.store import Dataset

NUM_CLASSES = 10
NUM_SAMPLES = 1797
SOURCE = "sklearn.datasets.load_digits"


def load_digits(test_fraction: float = 0.2, split_seed: int = 0, name: str = "digits") -> Dataset:
    """Build the digits :class:`~fedbench.data.store.Dataset` with a stratified train/test split.

    Args:
        test_fraction: share of the 1,797 images held out as the global test set, in (0, 1).
            scikit-learn rounds the test count up: 0.2 gives 360 test and 1,437 train images.
        split_seed: ``random_state`` of ``sklearn.model_selection.train_test_split``.
        name: the dataset id recorded in the Dataset (and its meta.json once written).

    Returns:
        A Dataset with ``x_train`` (n_train, 1, 8, 8) float32 in [0, 1] (pixel / 16, channels
        first), ``y_train`` (n_train,) int64 in 0..9, the same for the test split, num_classes 10
        and no natural clients.

    Raises:
        ValueError: ``test_fraction`` outside (0, 1) or ``split_seed`` not a non-negative integer.
    """
    from sklearn.datasets import load_digits as _sk_load_digits
    from sklearn.model_selection import train_test_split

    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0 < test_fraction < 1:
        raise ValueError(f"digits: test_fraction must be a number in (0, 1), got {test_fraction!r}; e.g. 0.2")
    if isinstance(split_seed, bool) or not isinstance(split_seed, (int, np.integer)) or split_seed < 0:
        raise ValueError(f"digits: split_seed must be an integer >= 0, got {split_seed!r}")

    bunch = _sk_load_digits()
    x = (bunch.images.astype(np.float32) / np.float32(16.0))[:, None, :, :]
    y = bunch.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=float(test_fraction), random_state=int(split_seed), stratify=y
    )
    return Dataset(
        name=name,
        x_train=np.ascontiguousarray(x_tr, dtype=np.float32),
        y_train=np.ascontiguousarray(y_tr, dtype=np.int64),
        x_test=np.ascontiguousarray(x_te, dtype=np.float32),
        y_test=np.ascontiguousarray(y_te, dtype=np.int64),
        num_classes=NUM_CLASSES,
        meta={"source": SOURCE, "params": {"test_fraction": float(test_fraction), "split_seed": int(split_seed)}},
    )
