"""scikit-learn's bundled breast-cancer data: a small binary problem that needs no download.

Source: ``sklearn.datasets.load_breast_cancer``, the UCI "Breast Cancer Wisconsin (Diagnostic)"
data (Street, Wolberg & Mangasarian 1993): 569 samples, 30 real features, 2 classes (class 0
malignant, 212 samples; class 1 benign, 357). It ships inside the scikit-learn wheel.

fedbench's embedded stand-in for the binary LIBSVM sets of FedAc's experiments (a9a, epsilon:
Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5): the raw
features span five orders of magnitude (areas up to 4,254, smoothness around 0.1), so each column
is scaled linearly to [−1, 1] over all 569 samples, as LIBSVM's ``svm-scale`` prepares its
``*_scale`` sets (a constant column would map to 0; there is none). With model ``binary_logreg``
class 1 is y = +1.

Split: ``test_fraction`` 0 (the default: FedAc measures only the training objective) keeps every
sample for training and leaves an empty test split (test metrics NaN); a fraction in (0, 1) holds
out a stratified test split (``sklearn.model_selection.train_test_split``, ``split_seed``). No
natural clients.
"""

from __future__ import annotations

import math

import numpy as np

from fedbench.data.store import Dataset

NUM_CLASSES = 2
NUM_SAMPLES = 569
NUM_FEATURES = 30
SOURCE = "sklearn.datasets.load_breast_cancer"


def train_count(test_fraction: float) -> int:
    """Training samples for ``test_fraction`` (sklearn rounds the test count up)."""
    return NUM_SAMPLES - math.ceil(NUM_SAMPLES * test_fraction)


def load_breast_cancer(test_fraction: float = 0.0, split_seed: int = 0, name: str = "breast_cancer") -> Dataset:
    """Build the breast-cancer :class:`~fedbench.data.store.Dataset`, features scaled to [−1, 1].

    Args:
        test_fraction: share held out as the test set, in [0, 1); 0: no test split.
        split_seed: ``random_state`` of the stratified split (unused when ``test_fraction`` is 0).
        name: the dataset id recorded in the Dataset.

    Returns:
        A Dataset with ``x_train`` (n_train, 30) float32 in [−1, 1], ``y_train`` (n_train,) int64
        in {0, 1}, the same for the test split ((0, 30) and (0,) when ``test_fraction`` is 0),
        num_classes 2, no natural clients.

    Raises:
        ValueError: ``test_fraction`` outside [0, 1) or ``split_seed`` not an integer ≥ 0.
    """
    from sklearn.datasets import load_breast_cancer as _sk_load
    from sklearn.model_selection import train_test_split

    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0 <= test_fraction < 1:
        raise ValueError(f"breast_cancer: test_fraction must be a number in [0, 1), got {test_fraction!r}; e.g. 0")
    if isinstance(split_seed, bool) or not isinstance(split_seed, (int, np.integer)) or split_seed < 0:
        raise ValueError(f"breast_cancer: split_seed must be an integer >= 0, got {split_seed!r}")
    bunch = _sk_load()
    x = bunch.data.astype(np.float64)
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    x = (2.0 * (x - lo) / span - 1.0).astype(np.float32)
    y = bunch.target.astype(np.int64)
    if test_fraction > 0:
        x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=float(test_fraction),
                                                  random_state=int(split_seed), stratify=y)
    else:
        x_tr, y_tr = x, y
        x_te, y_te = np.zeros((0, NUM_FEATURES), np.float32), np.zeros(0, np.int64)
    return Dataset(
        name=name,
        x_train=np.ascontiguousarray(x_tr, dtype=np.float32),
        y_train=np.ascontiguousarray(y_tr, dtype=np.int64),
        x_test=np.ascontiguousarray(x_te, dtype=np.float32),
        y_test=np.ascontiguousarray(y_te, dtype=np.int64),
        num_classes=NUM_CLASSES,
        meta={"source": SOURCE, "params": {"test_fraction": float(test_fraction), "split_seed": int(split_seed)},
              "scaling": "each feature linearly to [-1, 1] over all samples (svm-scale)"},
    )
