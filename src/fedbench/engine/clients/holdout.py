"""Per-client held-out subsets: the optional "held-out pass" of the algorithm protocol.

Some algorithms need, on each client, a small subset of its data that is never trained on:
Elastic Aggregation (Chen, Hu, Tan, Wei and Wu, "Elastic Aggregation for Federated Optimization",
CVPR 2023) estimates its parameter sensitivity Ω_k (eq. 1 and its momentum version) on a subset
B_k of client k's data, sampled from D_k once before training (supplementary Algorithms 1 and 2)
and removed from it; the supplement's Section 4 sets its size to 10 % of D_k. The protocol
(:mod:`fedbench.algorithms`) lets an algorithm declare it with two optional functions:

- ``holdout_fraction(hparams) -> float`` in [0, 1): the fraction f of each client's training
  samples to hold out; absent or 0 = nothing (the engines then do no extra work at all);
- ``client_holdout_step(step_state, batch, hparams, output_grad_fn) -> step_state``: run by both
  engines after ``client_init`` and before the first ``client_step``, once per minibatch of B_k.

This module holds the engine side, shared by the sequential reference and the vectorized engine:

:func:`holdout_split`
    B_k and D_k \\ B_k for every client, from the keyed RNG (seed, 0, k, "holdout"): a pure
    function of the cell's seed and the partition, drawn once, so it is the same in both engines,
    on resume, and under any client order. |B_k| = min(n_k − 1, ⌈f · n_k⌉) for f > 0: the
    ``ceil`` of scikit-learn's ``train_test_split(test_size=f)``, so every client with n_k ≥ 2
    holds out at least one sample (a client with n_k < 10 still gets 1), and at least one sample
    is always left to train on (a client with n_k = 1 holds out nothing). n_k, the aggregation
    weight, then counts D_k \\ B_k.
:func:`holdout_batches`
    The minibatches of one round's held-out pass: one pass over B_k in a fresh random order keyed
    (seed, t, k, "holdout") (t ≥ 1, so never the split's key), cut into ⌈|B_k| / B⌉ batches of
    the training batch size B, the last one smaller (a shuffled ``DataLoader(drop_last=False)``).
    Held-out batches are never augmented.
:func:`make_output_grad_fn`
    ``output_grad_fn(params, x, y) -> (grads, value)``: the gradient at θ of
    mean_{rows i} ‖F(θ; x_i)‖²₂ with F the model's output (logits), and the value. Label-free:
    ``y`` only marks rows, a negative label (the vectorized engine's padding label −100) excluding
    a row from both the sum and the count, so a padded batch gives exactly the unpadded batch's
    mean and gradient (tested in ``tests/engine/clients/test_vectorized.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType

import numpy as np
import torch

from fedbench.rng import generator
from fedbench.tree import Tree


def holdout_fraction(algorithm: ModuleType, hparams: dict) -> float:
    """The algorithm's held-out fraction f for these hyperparameters (0 when it declares none).

    Raises:
        ValueError: f outside [0, 1).
        TypeError: f > 0 but the module has no ``client_holdout_step``.
    """
    fn = getattr(algorithm, "holdout_fraction", None)
    if fn is None:
        return 0.0
    f = float(fn(hparams))
    if not 0.0 <= f < 1.0:
        raise ValueError(f"{algorithm.__name__}.holdout_fraction must be in [0, 1) (got {f})")
    if f > 0 and not callable(getattr(algorithm, "client_holdout_step", None)):
        raise TypeError(f"{algorithm.__name__} holds out data (holdout_fraction {f}) but defines no "
                        "client_holdout_step(step_state, batch, hparams, output_grad_fn)")
    return f


def holdout_size(num_samples: int, fraction: float) -> int:
    """|B_k| = min(n_k − 1, ⌈f · n_k⌉) for f > 0 (0 when f = 0 or n_k ≤ 1).

    ``f · n_k`` is rounded to 9 decimals before the ceiling, so that 0.1 · 30 (= 3.0000000000000004
    in floating point) gives 3, not 4.
    """
    if fraction <= 0 or num_samples <= 1:
        return 0
    return min(num_samples - 1, math.ceil(round(fraction * num_samples, 9)))


def holdout_split(clients: Sequence[np.ndarray], fraction: float, seed: int
                  ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(D_k \\ B_k, B_k) for every client k, as rows of the training split.

    Args:
        clients: per client k, its training rows (int array of n_k row indices, partition order).
        fraction: f in [0, 1) (:func:`holdout_fraction`).
        seed: the cell's seed; client k's draw is keyed (seed, 0, k, "holdout").

    Returns:
        Two lists of int64 arrays, one entry per client, each keeping the partition order of the
        rows: the rows left for training and the held-out rows. With f = 0 the training rows are
        the input arrays and every B_k is empty.
    """
    train, held = [], []
    for k, rows in enumerate(clients):
        rows = np.asarray(rows, dtype=np.int64)
        h = holdout_size(len(rows), fraction)
        if h == 0:
            train.append(rows)
            held.append(rows[:0])
            continue
        perm = generator(seed, 0, k, "holdout").permutation(len(rows))
        held.append(rows[np.sort(perm[:h])])
        train.append(rows[np.sort(perm[h:])])
    return train, held


def holdout_batches(seed: int, round: int, client: int, num_samples: int, batch_size: int) -> list[np.ndarray]:
    """Row indices (into the client's held-out rows, 0..|B_k|−1) of each minibatch of round
    ``round``'s held-out pass: one shuffled pass, batches of ``batch_size``, the last smaller.
    Empty when ``num_samples`` is 0.

    Raises:
        ValueError: round < 1 (round 0 is the split's key) or batch_size < 1.
    """
    if round < 1:
        raise ValueError(f"held-out batches are drawn per training round t >= 1 (got {round})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    if num_samples == 0:
        return []
    perm = generator(seed, round, client, "holdout").permutation(num_samples)
    return [perm[i : i + batch_size] for i in range(0, num_samples, batch_size)]


def make_output_grad_fn(apply: Callable[[Tree, torch.Tensor], torch.Tensor]
                        ) -> Callable[[Tree, torch.Tensor, torch.Tensor], tuple[Tree, torch.Tensor]]:
    """``output_grad_fn(params, x, y) -> (grads, value)`` for a model ``apply(params, x) -> logits``.

    value = Σ_i r_i ‖F(θ; x_i)‖²₂ / max(1, Σ_i r_i) with r_i = 1 for rows whose label y_i ≥ 0 and 0
    for padded rows (negative label); ‖·‖²₂ sums over every output dimension but the first (the
    batch). grads = ∇_θ value, a pytree like ``params``. Built with
    :func:`torch.func.grad_and_value`, so it runs under :func:`torch.func.vmap`.
    """

    def squared_output_norm(params: Tree, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = apply(params, x)
        per_row = out.reshape(out.shape[0], -1).pow(2).sum(dim=1)
        real = (y >= 0).to(per_row.dtype)
        return (per_row * real).sum() / real.sum().clamp(min=1.0)

    return torch.func.grad_and_value(squared_output_norm)
