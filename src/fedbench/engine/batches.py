"""Minibatch indices for every client and local step, drawn up front from the keyed RNG.

Drawing them before training (rather than from a DataLoader during it) makes a client's batches a
pure function of (seed, round, client), so every engine and executor consumes identical batches.
"""

from __future__ import annotations

import numpy as np

from fedbench.rng import generator


def local_batches(
    seed: int,
    round: int,
    client: int,
    num_samples: int,
    batch_size: int,
    epochs: int | None = None,
    steps: int | None = None,
) -> list[np.ndarray]:
    """Row indices (into the client's own data, 0..n_k-1) for each local step of one round.

    Local work is given either in epochs or in steps (exactly one of them):

    - ``epochs=E``: E passes; each pass is a fresh random permutation cut into ⌈n_k/B⌉ batches
      (the last one smaller when B does not divide n_k), as a shuffled DataLoader with
      ``drop_last=False`` does.
    - ``steps=K``: K batches of size min(B, n_k) taken in order from consecutive random
      permutations (a pass restarts when the data are used up), as FedDyn's reference code's
      re-created iterator does.

    Args:
        seed, round, client: the randomness key (round is 1-based, client is the client id).
        num_samples: n_k ≥ 1.
        batch_size: B ≥ 1.

    Returns:
        A list of int64 arrays, one per local step.

    Raises:
        ValueError: both or neither of epochs/steps given, or a non-positive count.
    """
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of local.epochs or local.steps")
    if num_samples < 1 or batch_size < 1:
        raise ValueError(f"num_samples and batch_size must be >= 1 (got {num_samples}, {batch_size})")
    rng = generator(seed, round, client, "batches")
    if epochs is not None:
        if epochs < 0:
            raise ValueError(f"local.epochs must be >= 0 (got {epochs})")
        out = []
        for _ in range(epochs):
            perm = rng.permutation(num_samples)
            out.extend(perm[i : i + batch_size] for i in range(0, num_samples, batch_size))
        return out
    if steps < 0:
        raise ValueError(f"local.steps must be >= 0 (got {steps})")
    b = min(batch_size, num_samples)
    out, perm, pos = [], rng.permutation(num_samples), 0
    for _ in range(steps):
        if pos + b > num_samples:
            perm, pos = rng.permutation(num_samples), 0
        out.append(perm[pos : pos + b])
        pos += b
    return out
