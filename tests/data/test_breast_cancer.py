"""fedbench.data.breast_cancer: scikit-learn's bundled binary data, scaled to [−1, 1]."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.data.breast_cancer import NUM_SAMPLES, load_breast_cancer, train_count
from fedbench.data.registry import train_classes, train_size


def test_all_samples_train_by_default_features_scaled_to_the_unit_box():
    ds = load_breast_cancer()
    assert ds.x_train.shape == (NUM_SAMPLES, 30) and ds.x_test.shape == (0, 30) and ds.y_test.shape == (0,)
    assert ds.x_train.min(axis=0) == pytest.approx(-1.0) and ds.x_train.max(axis=0) == pytest.approx(1.0)
    assert np.bincount(ds.y_train).tolist() == [212, 357] and ds.num_classes == 2


def test_stratified_split_and_registry_sizes():
    ds = load_breast_cancer(test_fraction=0.2, split_seed=1)
    assert len(ds.y_train) == train_count(0.2) == train_size("breast_cancer", {"test_fraction": 0.2}) == 455
    assert len(ds.y_test) == 114 and set(ds.y_test.tolist()) == {0, 1}
    assert train_classes("breast_cancer", {"test_fraction": 0.0, "split_seed": 0}) == 2
    again = load_breast_cancer(test_fraction=0.2, split_seed=1)
    assert np.array_equal(ds.x_train, again.x_train)


@pytest.mark.parametrize("bad", [1.0, -0.1, True])
def test_bad_test_fraction(bad):
    with pytest.raises(ValueError, match="test_fraction"):
        load_breast_cancer(test_fraction=bad)
