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
