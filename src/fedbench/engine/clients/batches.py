"""Minibatch indices for every client and local step, drawn up front from the keyed RNG.

Drawing them before training (rather than from a DataLoader during it) makes a client's batches a
pure function of (seed, round, client), so every engine and executor consumes identical batches.

Heterogeneous local work: ``local.epochs`` or ``local.steps`` may be a distribution instead of
an int (:func:`local_work`), e.g. τ_i ~ Uniform{2, …, E} epochs as in Sharma, Panda & Joshi,
"Federated Minimax Optimization With Client Heterogeneity", TMLR 2023, §6. The count is drawn from
its own key (seed, round, client, "local_work"), or (seed, 0, client, "local_work") when fixed per
client, so it is independent of the batch stream and of the engine.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedbench.rng import generator

#: The distributions a local-work count may follow (``local.epochs`` / ``local.steps`` mapping).
DISTRIBUTIONS = ("uniform",)
#: How often a drawn count is redrawn: every round (τ_i^(t)) or once per client (τ_i).
DRAW_PER = ("round", "client")


def local_work(amount, seed: int, round: int, client: int) -> int | None:
    """The local-work count (epochs or steps) of client ``client`` in round ``round``.

    Args:
        amount: None, an int (every client, every round), or a distribution
            ``{"distribution": "uniform", "low": a, "high": b, "per": "round" | "client"}``:
            τ ~ Uniform{a, …, b} (both ends included), drawn from the key
            (seed, round, client, "local_work") when ``per`` is ``"round"`` (τ_i^(t), redrawn every
            round), from (seed, 0, client, "local_work") when ``"client"`` (τ_i, fixed for the run).
        seed, round, client: the cell's seed, the 1-based round, the client id.

    Returns:
        None for None, else the count (an int ≥ ``low``).

    Raises:
        ValueError: an unknown distribution or ``per``, or not 0 ≤ low ≤ high.
    """
    if amount is None or not isinstance(amount, Mapping):
        return amount
    dist, per = amount.get("distribution"), amount.get("per", "round")
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"local work: unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")
    if per not in DRAW_PER:
        raise ValueError(f"local work: per must be one of {', '.join(DRAW_PER)} (got {per!r})")
    low, high = int(amount["low"]), int(amount["high"])
    if not 0 <= low <= high:
        raise ValueError(f"local work: need 0 <= low <= high (got low={low}, high={high})")
    rng = generator(seed, round if per == "round" else 0, client, "local_work")
    return int(rng.integers(low, high + 1))


def work_label(amount: Mapping) -> str:
    """A local-work distribution in a cell label or a plot: ``uniform2-5`` (drawn per round) or
    ``uniform2-5.client`` (fixed per client)."""
    per = "" if amount.get("per", "round") == "round" else f".{amount['per']}"
    return f"{amount['distribution']}{amount.get('low')}-{amount.get('high')}{per}"


def local_batches(
    seed: int,
    round: int,
    client: int,
    num_samples: int,
    batch_size: int,
    epochs: int | Mapping | None = None,
    steps: int | Mapping | None = None,
    replacement: bool = False,
) -> list[np.ndarray]:
    """Row indices (into the client's own data, 0..n_k-1) for each local step of one round.

    Local work is given either in epochs or in steps (exactly one of them):

    - ``epochs=E``: E passes; each pass is a fresh random permutation cut into ⌈n_k/B⌉ batches
      (the last one smaller when B does not divide n_k), as a shuffled DataLoader with
      ``drop_last=False`` does.
    - ``steps=K``: K batches of size min(B, n_k) taken in order from consecutive random
      permutations (a pass restarts when the data are used up), as FedDyn's reference code's
      re-created iterator does.
    - either one a distribution (:func:`local_work`): this client's count for this round is drawn
      first, then used as above.
    - ``steps=K, replacement=True``: each step's B row indices drawn i.i.d. uniform on
      {0, …, n_k−1} (``rng.integers(0, n_k, size=(K, B))``, the same keyed generator); B may
      exceed n_k. With n_k = n (the ``shared`` partition) this is the stochastic oracle of Yuan &
      Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §4 (each worker's
      gradient query samples uniformly with replacement from the whole training set). The paper
      draws one example per query (B = 1); B > 1 draws B i.i.d. examples per query.

    Args:
        seed, round, client: the randomness key (round is 1-based, client is the client id).
        num_samples: n_k ≥ 1.
        batch_size: B ≥ 1.
        replacement: draw with replacement (only with ``steps``: an epoch is a pass without
            replacement).

    Returns:
        One int64 array of row indices per local step: an array ``[K, B']`` (its rows are the
        steps) when every step has the same size B' (``steps``; ``epochs`` when B divides n_k),
        else a list of 1-D arrays. Either way ``len()`` is K and iterating gives the steps.

    Raises:
        ValueError: both or neither of epochs/steps given, a non-positive count, or replacement
            with epochs.
    """
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of local.epochs or local.steps")
    if replacement and epochs is not None:
        raise ValueError("local.replacement needs local.steps: an epoch is a pass without replacement; "
                         "give local.steps or set local.replacement: false")
    if num_samples < 1 or batch_size < 1:
        raise ValueError(f"num_samples and batch_size must be >= 1 (got {num_samples}, {batch_size})")
    epochs, steps = local_work(epochs, seed, round, client), local_work(steps, seed, round, client)
    rng = generator(seed, round, client, "batches")
    if epochs is not None:
        if epochs < 0:
            raise ValueError(f"local.epochs must be >= 0 (got {epochs})")
        if num_samples % batch_size == 0:  # equal batches: one [K, B] array, the same rows
            perms = [rng.permutation(num_samples) for _ in range(epochs)]
            return _rows(perms, num_samples, epochs * (num_samples // batch_size), batch_size)
        out = []
        for _ in range(epochs):
            perm = rng.permutation(num_samples)
            out.extend(perm[i : i + batch_size] for i in range(0, num_samples, batch_size))
        return out
    if steps < 0:
        raise ValueError(f"local.steps must be >= 0 (got {steps})")
    if replacement:  # i.i.d. uniform rows: one [K, B] array
        return rng.integers(0, num_samples, size=(steps, batch_size), dtype=np.int64)
    # K batches of b in order from consecutive permutations: each permutation gives n_k // b of
    # them (a pass restarts when fewer than b rows are left), so ⌈K / (n_k // b)⌉ permutations.
    b = min(batch_size, num_samples)
    per = num_samples // b
    perms = [rng.permutation(num_samples)[: per * b] for _ in range(-(-steps // per))]
    return _rows(perms, per * b, steps, b)


def _rows(perms: list[np.ndarray], length: int, steps: int, b: int) -> np.ndarray:
    """The first ``steps`` rows of the concatenated permutations (each ``length`` long) cut into
    rows of ``b``: an int64 array [steps, b]."""
    if not perms:
        return np.empty((0, b), dtype=np.int64)
    return np.concatenate(perms).reshape(len(perms) * length // b, b)[:steps]


def uniform_shape(num_samples: int, batch_size: int, epochs: int | None = None, steps: int | None = None) -> bool:
    """Whether :func:`local_batches` returns one ``[K, B']`` array for these settings (``steps``;
    ``epochs`` when B divides n_k), so that :func:`stacked_batches` can draw many clients at once."""
    return steps is not None or (epochs is not None and num_samples % batch_size == 0)


def stacked_batches(seeds, round: int, clients, num_samples: int, batch_size: int, epochs: int | None = None,
                    steps: int | None = None, replacement: bool = False) -> np.ndarray:
    """``local_batches(seeds[i], round, clients[i], num_samples, batch_size, epochs, steps,
    replacement)`` for many clients with the same n_k at once: an int64 array [G, K, B'], bit for
    bit the same rows (:mod:`fedbench.engine.linear_fast.keyed_integers`: the keyed generators' draws for all
    clients in one compiled loop, ~0.2 µs a client instead of ~17–35 µs; keys it does not handle
    are drawn one by one). Only where :func:`uniform_shape` holds.

    Raises:
        ValueError: the settings give unequal batches (``not uniform_shape(...)``), or as
            :func:`local_batches`.
    """
    from fedbench.engine.linear_fast import keyed_integers  # numba: imported (and initialised, ~2 s) only when used

    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.int64), np.shape(clients))
    clients = np.asarray(clients, dtype=np.int64)
    if not uniform_shape(num_samples, batch_size, epochs, steps):
        raise ValueError(f"stacked_batches: {num_samples} rows in batches of {batch_size} per epoch are unequal")
    if not keyed_integers.supported(seeds, round, clients, num_samples) or len(clients) == 0:
        per_client = [local_batches(int(s), round, int(k), num_samples, batch_size, epochs=epochs, steps=steps,
                                    replacement=replacement) for s, k in zip(seeds, clients)]
        if not per_client:
            b = batch_size if replacement or epochs is not None else min(batch_size, num_samples)
            k = steps if steps is not None else epochs * (num_samples // batch_size)
            return np.empty((0, k, b), dtype=np.int64)
        return np.stack(per_client)
    local_batches(int(seeds[0]), round, int(clients[0]), num_samples, batch_size, epochs=epochs, steps=steps,
                  replacement=replacement)  # the same argument checks (one client's draw)
    g = len(clients)
    if replacement:
        return keyed_integers.uniform_rows(seeds, round, clients, num_samples, (steps, batch_size))
    if epochs is not None:  # E permutations, each cut into n_k / B batches
        perms = keyed_integers.permutations(seeds, round, clients, num_samples, epochs)
        return perms.reshape(g, epochs * (num_samples // batch_size), batch_size)
    b = min(batch_size, num_samples)
    per = num_samples // b
    count = -(-steps // per)
    perms = keyed_integers.permutations(seeds, round, clients, num_samples, count)[:, :, : per * b]
    return perms.reshape(g, count * per, b)[:, :steps]
