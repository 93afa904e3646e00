"""Keyed randomness: every random draw is a pure function of (seed, round, client, purpose).

A cell's result then does not depend on the order clients are processed, on vectorization, on
the executor, or on resuming from a checkpoint.
Keys are fed to :class:`numpy.random.SeedSequence` as entropy, so distinct keys give
statistically independent streams.

Draws that are made for many clients every round (FedAc's one example per gradient query, M up
to 8,192 workers) use :func:`uniform_rows`, a counter-based generator evaluated for all clients at
once: a fresh :class:`numpy.random.Generator` per client costs ~50 µs, more than the training step
it feeds.

Use ``round=0`` for draws made before training (model initialisation, partitioning) and
``client=-1`` for draws that belong to the server (client sampling).
"""

from __future__ import annotations

import zlib

import numpy as np

PURPOSES = ("init", "partition", "sample", "batches", "dataset", "holdout", "eval", "augment")


def _purpose_id(purpose: str) -> int:
    if purpose not in PURPOSES:
        raise ValueError(f"unknown randomness purpose {purpose!r}; known: {', '.join(PURPOSES)}")
    return zlib.crc32(purpose.encode())


def seed_sequence(seed: int, round: int = 0, client: int = -1, purpose: str = "init") -> np.random.SeedSequence:
    """The SeedSequence for one (seed, round, client, purpose) key.

    Raises:
        ValueError: seed or round negative, or an unknown purpose.
    """
    if seed < 0 or round < 0:
        raise ValueError(f"seed and round must be >= 0 (got seed={seed}, round={round})")
    # client may be -1 (the server); shift by one to keep the entropy words non-negative.
    return np.random.SeedSequence([int(seed), int(round), int(client) + 1, _purpose_id(purpose)])


def generator(seed: int, round: int = 0, client: int = -1, purpose: str = "init") -> np.random.Generator:
    """A fresh PCG64 generator for the key (seed, round, client, purpose)."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, round, client, purpose)))


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / φ, SplitMix64's increment


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele, Lea & Flood, "Fast splittable pseudorandom number
    generators", OOPSLA 2014; the finalizer of MurmurHash3 with Stafford's "Mix13" constants), on
    uint64 arrays with wrapping arithmetic."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform_rows(seed: int, round: int, clients, num_rows, count: int, purpose: str = "batches") -> np.ndarray:
    """``count`` i.i.d. uniform row indices in {0, …, n_k − 1} for each client k: an int64 array
    ``[len(clients), count]``, a pure function of (seed, round, client, purpose, position).

    Counter-based: each client's stream is SplitMix64 (:func:`_mix64`; it passes BigCrush) started
    from a 64-bit state hashed from the key (seed, round, purpose, client), its j-th output
    ``mix64(state + (j + 1)·γ)`` mapped to ``⌊u · n_k⌋`` with u = the top 53 bits / 2^53 (bias below
    n_k / 2^53). Every client's draws are computed together in a few array operations; the same
    client gives the same row whatever other clients are drawn with it (engines agree).

    Args:
        seed, round: the key (≥ 0).
        clients: client ids (array-like of ints ≥ −1), shape [m].
        num_rows: n_k ≥ 1 per client (array-like, shape [m], or one int for all).
        count: draws per client (≥ 0).
        purpose: one of :data:`PURPOSES`.

    Raises:
        ValueError: a negative seed, round or count, an unknown purpose, or some n_k < 1.
    """
    if seed < 0 or round < 0 or count < 0:
        raise ValueError(f"seed, round and count must be >= 0 (got seed={seed}, round={round}, count={count})")
    clients = np.asarray(clients, dtype=np.int64).reshape(-1)
    n = np.broadcast_to(np.asarray(num_rows, dtype=np.int64), clients.shape)
    if n.size and n.min() < 1:
        raise ValueError(f"uniform_rows: every client needs >= 1 row (got {int(n.min())})")
    with np.errstate(over="ignore"):
        key = _mix64(np.uint64(int(seed)) * _GOLDEN + np.uint64(_purpose_id(purpose)))
        key = _mix64(key ^ (np.uint64(int(round)) * _GOLDEN))
        state = _mix64(key ^ ((clients + 1).astype(np.uint64) * _GOLDEN))  # [m]
        steps = (np.arange(1, count + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        bits = _mix64(state[:, None] + steps)  # [m, count]
    u = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 2.0**53)
    return np.minimum(np.floor(u * n[:, None]).astype(np.int64), n[:, None] - 1)
