"""Keyed uniform integers for many keys at once (:mod:`fedbench.engine.keyed_integers`) are bit for
bit numpy's ``SeedSequence`` → ``PCG64`` → ``Generator.integers`` of each key, so the engine's
batched draws (:func:`fedbench.engine.batches.replacement_batches`) are the rows ``local_batches``
draws one client at a time."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.engine.batches import local_batches, replacement_batches
from fedbench.engine.keyed_integers import supported, uniform_rows
from fedbench.rng import PURPOSES, generator


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 32_561, 400_000, 2**31 - 1, 2**31 + 11, 2**32 - 1, 2**32])
def test_equals_numpy_generator_for_every_key(n):
    clients = np.arange(-1, 130)
    seeds = np.array([0, 1, 7, 123456789, 2**32 - 1])[np.arange(len(clients)) % 5]
    for t in (0, 1, 4096, 2**32 - 1):
        got = uniform_rows(seeds, t, clients, n, (3, 4))
        want = np.stack([generator(int(s), t, int(c), "batches").integers(0, n, size=(3, 4), dtype=np.int64)
                         for s, c in zip(seeds, clients)])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("purpose", PURPOSES)
def test_every_purpose(purpose):
    got = uniform_rows(3, 2, np.arange(20), 97, (5,), purpose=purpose)
    want = np.stack([generator(3, 2, c, purpose).integers(0, 97, size=5, dtype=np.int64) for c in range(20)])
    np.testing.assert_array_equal(got, want)


def test_rejection_path_is_exercised_and_exact():
    """n = 2³¹ + 1: about half of all 32-bit draws are rejected, so the loop's rejections are checked."""
    n = 2**31 + 1
    got = uniform_rows(0, 1, np.arange(50), n, (40,))
    want = np.stack([generator(0, 1, c, "batches").integers(0, n, size=40, dtype=np.int64) for c in range(50)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("steps,batch_size", [(1, 1), (16, 1), (5, 3), (0, 2)])
def test_replacement_batches_are_local_batches(steps, batch_size):
    seeds = np.array([0, 0, 1, 2, 2**40])  # the last key is beyond 32 bits: drawn one by one
    clients = np.array([0, 5, 3, 8191, 2])
    got = replacement_batches(seeds, 9, clients, 32_561, steps, batch_size)
    assert got.shape == (5, steps, batch_size)
    for i, (s, k) in enumerate(zip(seeds, clients)):
        np.testing.assert_array_equal(got[i], local_batches(int(s), 9, int(k), 32_561, batch_size, steps=steps,
                                                            replacement=True))


def test_supported_keys():
    assert supported([0, 2**32 - 1], 3, [-1, 2**32 - 2], 10)
    assert not supported([2**32], 3, [0], 10)
    assert not supported([0], 3, [2**32 - 1], 10)
    assert not supported([0], 3, [0], 2**32 + 1)
    with pytest.raises(ValueError):
        uniform_rows([2**32], 1, [0], 10, (1,))
