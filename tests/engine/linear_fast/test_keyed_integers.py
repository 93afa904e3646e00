"""Keyed uniform integers for many keys at once (:mod:`fedbench.engine.linear_fast.keyed_integers`) are bit for
bit numpy's ``SeedSequence`` → ``PCG64`` → ``Generator.integers`` of each key, so the engine's
batched draws (:func:`fedbench.engine.clients.batches.replacement_batches`) are the rows ``local_batches``
draws one client at a time."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.engine.clients.batches import local_batches, stacked_batches
from fedbench.engine.linear_fast.keyed_integers import permutations, supported, uniform_rows, uniform_rows_rounds
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


@pytest.mark.parametrize("n", [1, 97, 32_561])
def test_rounds_at_once_equal_one_round_at_a_time(n):
    """uniform_rows_rounds (several rounds, numba's threads, more keys than one chunk of 4,096) is
    uniform_rows round by round, bit for bit."""
    clients = np.arange(-1, 5000)
    seeds = np.array([0, 3, 2**32 - 1])[np.arange(len(clients)) % 3]
    rounds = np.array([1, 2, 4096, 2**32 - 1])
    got = uniform_rows_rounds(seeds, rounds, clients, n, 3)
    assert got.shape == (4, len(clients), 3)
    for r, t in enumerate(rounds):
        np.testing.assert_array_equal(got[r], uniform_rows(seeds, int(t), clients, n, (3,)))
    with pytest.raises(ValueError, match="keys need"):
        uniform_rows_rounds(seeds, np.array([2**32]), clients, n, 3)


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


@pytest.mark.parametrize("n", [1, 2, 3, 32, 33, 1000, 32_561])
def test_permutations_equal_numpy(n):
    clients = np.arange(-1, 40)
    got = permutations(5, 3, clients, n, 3)
    want = np.stack([np.stack([g.permutation(n) for _ in range(3)])
                     for g in (generator(5, 3, int(c), "batches") for c in clients)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n,steps,epochs,batch_size,replacement", [
    (32_561, 1, None, 1, True), (32_561, 16, None, 1, True), (32_561, 5, None, 3, True), (10, 0, None, 2, True),
    (32, 64, None, 1, False), (32, 7, None, 5, False), (3, 4, None, 8, False), (40, None, 2, 10, False),
    (40, None, 0, 4, False), (1, 3, None, 1, False)])
def test_stacked_batches_are_local_batches(n, steps, epochs, batch_size, replacement):
    seeds = np.array([0, 0, 1, 2, 2**40])  # the last key is beyond 32 bits: drawn one by one
    clients = np.array([0, 5, 3, 8191, 2])
    for keys in (slice(0, 4), slice(0, 5)):
        got = stacked_batches(seeds[keys], 9, clients[keys], n, batch_size, epochs=epochs, steps=steps,
                              replacement=replacement)
        for i, (s, k) in enumerate(zip(seeds[keys], clients[keys])):
            want = local_batches(int(s), 9, int(k), n, batch_size, epochs=epochs, steps=steps, replacement=replacement)
            assert got[i].shape == want.shape
            np.testing.assert_array_equal(got[i], want)


def test_stacked_batches_refuses_unequal_batches():
    with pytest.raises(ValueError, match="unequal"):
        stacked_batches([0], 1, [0], 10, 3, epochs=1)


def test_supported_keys():
    assert supported([0, 2**32 - 1], 3, [-1, 2**32 - 2], 10)
    assert not supported([2**32], 3, [0], 10)
    assert not supported([0], 3, [2**32 - 1], 10)
    assert not supported([0], 3, [0], 2**32 + 1)
    with pytest.raises(ValueError):
        uniform_rows([2**32], 1, [0], 10, (1,))
