import numpy as np
import pytest

from fedbench.engine.clients.batches import local_batches


def test_epochs_cover_every_sample_once_per_epoch():
    b = local_batches(0, 1, 3, num_samples=23, batch_size=5, epochs=3)
    assert len(b) == 3 * 5
    for e in range(3):
        epoch = np.concatenate(b[e * 5 : (e + 1) * 5])
        assert sorted(epoch.tolist()) == list(range(23))
    assert [len(x) for x in b[:5]] == [5, 5, 5, 5, 3]


def test_steps_mode_sizes_and_reuse():
    b = local_batches(0, 1, 0, num_samples=7, batch_size=3, steps=10)
    assert len(b) == 10 and all(len(x) == 3 for x in b)
    assert all(len(set(x.tolist())) == 3 for x in b)
    # batch larger than the client: capped at n_k
    assert all(len(x) == 4 for x in local_batches(0, 1, 0, num_samples=4, batch_size=50, steps=3))


def test_keyed_by_seed_round_client():
    ref = local_batches(1, 2, 3, 40, 8, epochs=1)
    assert all(np.array_equal(a, c) for a, c in zip(ref, local_batches(1, 2, 3, 40, 8, epochs=1)))
    for other in [(0, 2, 3), (1, 1, 3), (1, 2, 4)]:
        o = local_batches(*other, 40, 8, epochs=1)
        assert not all(np.array_equal(a, c) for a, c in zip(ref, o))


def test_exactly_one_of_epochs_steps():
    with pytest.raises(ValueError, match="exactly one"):
        local_batches(0, 1, 0, 10, 2)
    with pytest.raises(ValueError, match="exactly one"):
        local_batches(0, 1, 0, 10, 2, epochs=1, steps=1)


def _reference_batches(seed, round, client, n, b, epochs=None, steps=None):
    """The draws as a DataLoader-like loop makes them, one step at a time (the definition)."""
    from fedbench.rng import generator

    rng = generator(seed, round, client, "batches")
    if epochs is not None:
        out = []
        for _ in range(epochs):
            perm = rng.permutation(n)
            out.extend(perm[i : i + b] for i in range(0, n, b))
        return out
    b = min(b, n)
    out, perm, pos = [], rng.permutation(n), 0
    for _ in range(steps):
        if pos + b > n:
            perm, pos = rng.permutation(n), 0
        out.append(perm[pos : pos + b])
        pos += b
    return out


@pytest.mark.parametrize("n", [1, 5, 7, 32, 33])
@pytest.mark.parametrize("b", [1, 2, 5, 8, 40])
def test_batches_equal_the_step_by_step_definition(n, b):
    """The [K, B] arrays drawn at once hold exactly the batches of the step-by-step loop."""
    for kw in ({"steps": 0}, {"steps": 1}, {"steps": 13}, {"steps": 64}, {"epochs": 0}, {"epochs": 1}, {"epochs": 3}):
        got = local_batches(4, 2, 9, n, b, **kw)
        want = _reference_batches(4, 2, 9, n, b, **kw)
        assert len(got) == len(want), kw
        for g, w in zip(got, want):
            assert np.array_equal(g, w) and np.asarray(g).dtype == np.int64, kw


# --------------------------------------------------------------------------- with replacement


def test_replacement_is_the_keyed_iid_uniform_draw():
    """``replacement``: each step's B rows i.i.d. uniform on 0..n_k-1, from the batches key
    (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §4)."""
    from fedbench.rng import generator

    b = local_batches(4, 2, 9, num_samples=13, batch_size=3, steps=7, replacement=True)
    assert isinstance(b, np.ndarray) and b.shape == (7, 3) and b.dtype == np.int64
    np.testing.assert_array_equal(b, generator(4, 2, 9, "batches").integers(0, 13, size=(7, 3)))
    np.testing.assert_array_equal(b, local_batches(4, 2, 9, 13, 3, steps=7, replacement=True))
    for other in [(5, 2, 9), (4, 3, 9), (4, 2, 8)]:
        assert not np.array_equal(b, local_batches(*other, 13, 3, steps=7, replacement=True))
    # B may exceed n_k (no cap: each row is its own draw); K = 0 gives an empty [0, B]
    assert local_batches(0, 1, 0, num_samples=2, batch_size=5, steps=4, replacement=True).shape == (4, 5)
    assert local_batches(0, 1, 0, num_samples=2, batch_size=5, steps=0, replacement=True).shape == (0, 5)


def test_replacement_frequencies_are_uniform_and_independent():
    """Over 10⁵ draws: every row's count within 6σ of n_draws/n, and the ordered pairs within a
    step (B = 2) uniform on all n² pairs, ties included (a draw without replacement has none)."""
    n, k = 10, 50_000
    b = local_batches(0, 1, 0, num_samples=n, batch_size=2, steps=k, replacement=True)
    counts = np.bincount(b.ravel(), minlength=n)
    draws, p = b.size, 1 / n
    assert np.all(np.abs(counts - draws * p) < 6 * np.sqrt(draws * p * (1 - p))), counts
    pairs = np.bincount(b[:, 0] * n + b[:, 1], minlength=n * n)
    q = 1 / n**2
    assert np.all(np.abs(pairs - k * q) < 6 * np.sqrt(k * q * (1 - q))), pairs
    assert pairs.reshape(n, n).trace() > 0  # repeats within a step happen
    assert set(np.unique(b).tolist()) == set(range(n))


def test_replacement_with_epochs_is_refused():
    with pytest.raises(ValueError, match="local.replacement needs local.steps"):
        local_batches(0, 1, 0, 10, 2, epochs=1, replacement=True)


# -- heterogeneous local work: a distribution for epochs / steps ---------------------------------

from fedbench.engine.clients.batches import local_work  # noqa: E402

UNIFORM = {"distribution": "uniform", "low": 2, "high": 5, "per": "round"}


def test_local_work_is_keyed_and_independent_of_call_order():
    keys = [(s, t, k) for s in (0, 1) for t in (1, 2, 3) for k in range(6)]
    forward = {key: local_work(UNIFORM, *key) for key in keys}
    backward = {key: local_work(UNIFORM, *key) for key in reversed(keys)}
    assert forward == backward
    assert len(set(forward.values())) > 1  # really drawn


def test_local_work_per_round_varies_per_client_is_fixed():
    fixed = {**UNIFORM, "per": "client"}
    for k in range(8):
        assert len({local_work(fixed, 0, t, k) for t in range(1, 30)}) == 1
    assert any(len({local_work(UNIFORM, 0, t, k) for t in range(1, 30)}) > 1 for k in range(8))
    assert len({local_work(fixed, 0, 1, k) for k in range(40)}) > 1  # differs across clients


def test_local_work_uniform_covers_both_ends_evenly():
    draws = np.array([local_work(UNIFORM, 3, t, k) for t in range(1, 201) for k in range(20)])
    values, counts = np.unique(draws, return_counts=True)
    assert values.tolist() == [2, 3, 4, 5]
    assert np.all(np.abs(counts / draws.size - 0.25) < 0.03)  # 4,000 draws: sd ≈ 0.007


def test_local_work_plain_values_and_errors():
    assert local_work(3, 0, 1, 0) == 3 and local_work(None, 0, 1, 0) is None
    assert local_work({**UNIFORM, "low": 4, "high": 4}, 0, 1, 0) == 4
    with pytest.raises(ValueError, match="unknown distribution"):
        local_work({**UNIFORM, "distribution": "normal"}, 0, 1, 0)
    with pytest.raises(ValueError, match="per must be one of round, client"):
        local_work({**UNIFORM, "per": "epoch"}, 0, 1, 0)
    with pytest.raises(ValueError, match="low <= high"):
        local_work({**UNIFORM, "low": 6}, 0, 1, 0)


@pytest.mark.parametrize("key", ["epochs", "steps"])
def test_local_batches_with_a_distribution_uses_the_drawn_count(key):
    for t in range(1, 6):
        for k in range(5):
            tau = local_work(UNIFORM, 0, t, k)
            got = local_batches(0, t, k, num_samples=23, batch_size=5, **{key: UNIFORM})
            want = local_batches(0, t, k, num_samples=23, batch_size=5, **{key: tau})
            assert len(got) == (5 * tau if key == "epochs" else tau)
            assert all(np.array_equal(a, b) for a, b in zip(got, want))  # the same batch stream
