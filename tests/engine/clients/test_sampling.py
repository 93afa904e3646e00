import numpy as np
import pytest

from fedbench.engine.clients.sampling import sample_clients


@pytest.mark.parametrize("rounds, expected", [(100, 1019), (200, 2053), (500, 5070)])
def test_bernoulli_reproduces_feddyn_reference_counts(rounds, expected):
    # FedElasticNet's Table 2 baselines (uplink counts) match the FedDyn authors' code (Acar et al.,
    # "Federated Learning Based on Dynamic Regularization", ICLR 2021) run with rand_seed 0:
    # 100 clients, each sampled with p = 0.1 per round; these are that code's cumulative counts.
    total = sum(len(sample_clients("bernoulli", 100, 0.1, 0, t)) for t in range(1, rounds + 1))
    assert total == expected


def test_bernoulli_redraws_when_empty():
    # with p tiny nearly every first draw is empty; the sampler must still return a client
    for t in range(1, 30):
        s = sample_clients("bernoulli", 5, 0.01, 3, t)
        assert s.size >= 1 and np.all(np.diff(s) > 0)


def test_uniform_size_sorted_unique_and_keyed():
    a = sample_clients("uniform", 50, 0.2, 7, 3)
    assert a.size == 10 and np.all(np.diff(a) > 0) and a.min() >= 0 and a.max() < 50
    assert np.array_equal(a, sample_clients("uniform", 50, 0.2, 7, 3))
    assert not np.array_equal(a, sample_clients("uniform", 50, 0.2, 7, 4))
    assert sample_clients("uniform", 50, 1.0, 0, 1).tolist() == list(range(50))
    assert sample_clients("uniform", 10, 0.01, 0, 1).size == 1


def test_uniform_is_roughly_uniform():
    counts = np.zeros(20)
    for t in range(1, 2001):
        counts[sample_clients("uniform", 20, 0.25, 0, t)] += 1
    assert counts.sum() == 2000 * 5
    assert np.all(np.abs(counts / 2000 - 0.25) < 0.04)


@pytest.mark.parametrize("kwargs, match", [
    (dict(scheme="nope"), "scheme"),
    (dict(participation=0.0), "participation"),
    (dict(participation=1.5), "participation"),
    (dict(round=0), "round"),
])
def test_bad_arguments(kwargs, match):
    args = dict(scheme="uniform", num_clients=10, participation=0.5, seed=0, round=1) | kwargs
    with pytest.raises(ValueError, match=match):
        sample_clients(**args)
