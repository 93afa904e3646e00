import numpy as np
import pytest

from fedbench.data.synthetic import generate_synthetic


def _label_dists(ds):
    K = int(ds.client_train.max()) + 1
    counts = np.zeros((K, 10))
    np.add.at(counts, (ds.client_train, ds.y_train), 1)
    return counts / counts.sum(axis=1, keepdims=True)


def _heterogeneity(ds):
    """Mean total-variation distance between each client's label distribution and the pooled one."""
    p = _label_dists(ds)
    pooled = np.bincount(ds.y_train, minlength=10) / len(ds.y_train)
    return 0.5 * np.abs(p - pooled).sum(axis=1).mean()


def test_shapes_classes_features_and_clients():
    ds = generate_synthetic(alpha=0.5, beta=0.5, num_clients=12, max_samples_per_client=300)
    assert ds.x_train.shape[1:] == (60,) and ds.x_train.dtype == np.float32
    assert ds.num_classes == 10 and ds.y_train.dtype == np.int64
    assert set(np.unique(ds.client_train)) == set(range(12)) == set(np.unique(ds.client_test))
    assert ds.y_train.min() >= 0 and ds.y_train.max() <= 9
    sizes = np.bincount(ds.client_train) + np.bincount(ds.client_test)
    assert sizes.min() >= 50 and sizes.max() <= 300
    # per-client 90/10 split, int((1 - 0.1) n) train samples
    np.testing.assert_array_equal(np.bincount(ds.client_train), (0.9 * sizes).astype(int))
    assert ds.has_natural_clients and ds.meta["params"]["alpha"] == 0.5


def test_deterministic_and_seed_dependent():
    a = generate_synthetic(num_clients=5, seed=3)
    b = generate_synthetic(num_clients=5, seed=3)
    c = generate_synthetic(num_clients=5, seed=4)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert a.x_train.shape != c.x_train.shape or not np.array_equal(a.x_train, c.x_train)


def test_heterogeneity_grows_with_alpha_beta():
    het = {}
    for ab in (0.0, 1.0, 5.0):
        het[ab] = np.mean([
            _heterogeneity(generate_synthetic(alpha=ab, beta=ab, num_clients=20, max_samples_per_client=200, seed=s))
            for s in range(2)
        ])
    iid = _heterogeneity(generate_synthetic(iid=True, num_clients=20, max_samples_per_client=200))
    assert iid < het[0.0] < het[5.0]
    assert het[1.0] < het[5.0]


def test_iid_variant_shares_one_model():
    ds = generate_synthetic(iid=True, num_clients=6, size_distribution="powerlaw", max_samples_per_client=400)
    # x ~ N(0, Σ) on every client: client means are near 0 on the high-variance first feature
    for k in range(6):
        assert abs(ds.x_train[ds.client_train == k, 0].mean()) < 0.5


def test_powerlaw_sizes():
    ds = generate_synthetic(num_clients=200, size_distribution="powerlaw", powerlaw_a=1.5,
                            min_samples_per_client=20, max_samples_per_client=None)
    sizes = np.bincount(ds.client_train) + np.bincount(ds.client_test)
    assert sizes.min() >= 20 and sizes.max() > 5 * np.median(sizes)


@pytest.mark.parametrize("key,value", [
    ("alpha", -1.0), ("beta", "x"), ("num_clients", 0), ("size_distribution", "zipf"),
    ("test_fraction", 1.0), ("max_samples_per_client", 10), ("powerlaw_a", 0),
])
def test_bad_parameters_are_named(key, value):
    with pytest.raises(ValueError, match=key):
        generate_synthetic(**{key: value})


def test_an_overflowing_size_draw_is_capped_or_refused():
    """LogNormal(800, 2) overflows a float: with max_samples_per_client every client gets the cap
    (once: a negative int64 size); without it the parameters are refused, naming the fix."""
    from fedbench.data.synthetic import ParamError, train_counts

    ds = generate_synthetic(num_clients=3, size_mean=800.0, max_samples_per_client=60)
    assert np.bincount(ds.client_train).tolist() == [54] * 3 and np.bincount(ds.client_test).tolist() == [6] * 3
    assert train_counts(num_clients=3, size_mean=800.0, max_samples_per_client=60).tolist() == [54] * 3
    with pytest.raises(ParamError, match="without max_samples_per_client") as e:
        generate_synthetic(num_clients=3, size_mean=800.0, max_samples_per_client=None)
    assert e.value.key == "max_samples_per_client"
