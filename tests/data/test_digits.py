import numpy as np
import pytest

from fedbench.data.digits import load_digits


@pytest.fixture(scope="module")
def digits():
    return load_digits()


def test_shapes_dtypes_and_scale(digits):
    assert digits.x_train.shape == (1437, 1, 8, 8) and digits.x_test.shape == (360, 1, 8, 8)
    assert digits.x_train.dtype == np.float32 and digits.y_train.dtype == np.int64
    assert digits.num_classes == 10 and not digits.has_natural_clients
    assert digits.x_train.min() == 0.0 and digits.x_train.max() == 1.0
    # pixels are integers 0..16 scaled by 1/16
    np.testing.assert_array_equal(digits.x_train * 16, np.round(digits.x_train * 16))


def test_split_is_stratified_and_complete(digits):
    train_counts = np.bincount(digits.y_train, minlength=10)
    test_counts = np.bincount(digits.y_test, minlength=10)
    share = test_counts / (train_counts + test_counts)
    assert np.all(np.abs(share - 0.2) < 0.02)
    # together the two splits are exactly the bundled set, class by class
    from sklearn.datasets import load_digits as sk

    np.testing.assert_array_equal(train_counts + test_counts, np.bincount(sk().target))
    assert len(digits.y_train) + len(digits.y_test) == 1797


def test_fixed_split_and_parameters(digits):
    again = load_digits()
    np.testing.assert_array_equal(again.y_train, digits.y_train)
    np.testing.assert_array_equal(again.x_test, digits.x_test)
    other = load_digits(split_seed=1)
    assert not np.array_equal(other.y_train, digits.y_train)
    small = load_digits(test_fraction=0.5)
    assert len(small.y_test) == 899 and len(small.y_train) == 898
    assert digits.meta["params"] == {"test_fraction": 0.2, "split_seed": 0}


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, "0.2"])
def test_bad_test_fraction_is_named(bad):
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=bad)
