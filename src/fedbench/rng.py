"""Keyed randomness: every random draw is a pure function of (seed, round, client, purpose).

A cell's result then does not depend on the order clients are processed, on vectorization, on
the executor, or on resuming from a checkpoint.
Keys are fed to :class:`numpy.random.SeedSequence` as entropy, so distinct keys give
statistically independent streams.

Use ``round=0`` for draws made before training (model initialisation, partitioning) and
``client=-1`` for draws that belong to the server (client sampling).
"""

from __future__ import annotations

import zlib

import numpy as np

PURPOSES = ("init", "partition", "sample", "batches", "dataset", "holdout", "eval", "augment", "local_work")


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
