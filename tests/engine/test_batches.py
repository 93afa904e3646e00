import numpy as np
import pytest

from fedbench.engine.batches import local_batches


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
