import numpy as np
import pytest

from fedbench.rng import generator


def test_same_key_same_stream_and_distinct_keys_differ():
    a = generator(1, 2, 3, "batches").random(5)
    assert (a == generator(1, 2, 3, "batches").random(5)).all()
    for key in [(0, 2, 3, "batches"), (1, 1, 3, "batches"), (1, 2, 4, "batches"), (1, 2, 3, "sample")]:
        assert not (a == generator(*key).random(5)).all()
    # client -1 (the server) is a valid key distinct from client 0
    assert not (generator(0, 1, -1, "sample").random(3) == generator(0, 1, 0, "sample").random(3)).all()


def test_unknown_purpose_and_negative_seed():
    with pytest.raises(ValueError, match="purpose"):
        generator(0, 0, 0, "typo")
    with pytest.raises(ValueError, match="seed"):
        generator(-1)


def test_uniform_rows_is_keyed_uniform_and_independent_of_the_batch_of_clients():
    from fedbench.rng import uniform_rows

    a = uniform_rows(1, 2, [0, 5, 9], [10, 1000, 7], 50)
    assert a.shape == (3, 50) and a.dtype == np.int64
    assert a[1].max() < 1000 and a[2].max() < 7 and a.min() >= 0
    np.testing.assert_array_equal(a[1], uniform_rows(1, 2, [5], 1000, 50)[0])  # alone or with others
    for key in [(2, 2, [5]), (1, 3, [5]), (1, 2, [6])]:
        assert not np.array_equal(uniform_rows(*key, 1000, 50)[0], a[1])
    assert not np.array_equal(uniform_rows(1, 2, [5], 1000, 50, "augment")[0], a[1])  # the purpose counts
    # 2·10⁵ draws over 1,000 clients: counts within 6σ; successive draws uncorrelated (pairs)
    n = 8
    d = uniform_rows(0, 1, np.arange(1000), n, 200)
    counts = np.bincount(d.ravel(), minlength=n)
    p = 1 / n
    assert np.all(np.abs(counts - d.size * p) < 6 * np.sqrt(d.size * p * (1 - p)))
    pairs = np.bincount((d[:, :-1] * n + d[:, 1:]).ravel(), minlength=n * n)
    q, m = 1 / n**2, d[:, 1:].size
    assert np.all(np.abs(pairs - m * q) < 6 * np.sqrt(m * q * (1 - q)))
    # across clients: the first draws of consecutive client ids are uncorrelated too
    cross = np.bincount(d[:-1, 0] * n + d[1:, 0], minlength=n * n)
    assert np.all(np.abs(cross - 999 * q) < 6 * np.sqrt(999 * q * (1 - q)) + 1)
    with pytest.raises(ValueError, match=">= 1 row"):
        uniform_rows(0, 1, [0], 0, 3)
    with pytest.raises(ValueError, match="must be >= 0"):
        uniform_rows(-1, 1, [0], 5, 3)
