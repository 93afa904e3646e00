"""Local training of one client for one round: the reference (sequential) path.

Written to be obviously right: it runs the algorithm's ``client_init``, then (when the algorithm
holds out data, :mod:`fedbench.engine.clients.holdout`) ``client_holdout_step`` once per held-out
minibatch, then ``client_step`` once per training minibatch in the order given, then
``client_final`` (see :mod:`fedbench.algorithms`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType

import numpy as np
import torch

from fedbench.engine.clients.augment import apply as apply_augmentation
from fedbench.tree import Tree

GradFn = Callable[[Tree, torch.Tensor, torch.Tensor], tuple[Tree, torch.Tensor]]


def train_client(
    algorithm: ModuleType,
    server_state: dict,
    client_state: dict | None,
    x: torch.Tensor,
    y: torch.Tensor,
    batches: Sequence[np.ndarray],
    hparams: dict,
    grad_fn: GradFn,
    augment: tuple[dict, list] | None = None,
    holdout: tuple[torch.Tensor, torch.Tensor, Sequence[np.ndarray]] | None = None,
    output_grad_fn: GradFn | None = None,
) -> tuple[dict, dict | None, float]:
    """Run one client's local work for one round.

    Args:
        algorithm: an algorithm module (:mod:`fedbench.algorithms`).
        server_state: the server state after round t-1 (holds θ^{t-1}).
        client_state: this client's persistent state, or None if it never participated.
        x: (n_k, *feature_shape) the client's training inputs, on the compute device.
        y: (n_k,) int64 labels.
        batches: K arrays of row indices into x/y, one per local step (see
            :func:`fedbench.engine.clients.batches.local_batches`).
        hparams: the flat hyperparameter dict for this round (algorithm + lr/weight_decay/clip_norm).
        grad_fn: ``grad_fn(params, x, y) -> (grads, loss)``.
        augment: None (no augmentation), or ``(aug, draws)``: a checked record
            (:func:`fedbench.engine.clients.augment.check_record`) and one ``(flip, dy, dx)`` per step
            (:func:`fedbench.engine.clients.augment.draw`), applied to each minibatch's inputs.
        holdout: None (the algorithm holds out nothing), or ``(x_h, y_h, batches)``: the client's
            held-out inputs (|B_k|, *feature_shape) and labels (|B_k|,), and the row indices of
            each held-out minibatch of this round (:func:`fedbench.engine.clients.holdout.holdout_batches`).
        output_grad_fn: ``output_grad_fn(params, x, y) -> (grads, value)``
            (:func:`fedbench.engine.clients.holdout.make_output_grad_fn`); required with ``holdout``.

    Returns:
        (message, new client state, mean minibatch loss over the K steps; NaN if K = 0).
    """
    state = algorithm.client_init(server_state, client_state, hparams)
    if holdout is not None:
        x_h, y_h, held_batches = holdout
        for idx in held_batches:
            ix = torch.as_tensor(idx, device=x_h.device)
            state = algorithm.client_holdout_step(state, (x_h[ix], y_h[ix]), hparams, output_grad_fn)
    losses = []
    for s, idx in enumerate(batches):
        ix = torch.as_tensor(idx, device=x.device)
        xb = x[ix]
        if augment is not None:
            aug, draws = augment
            flip, dy, dx = (torch.as_tensor(a) for a in draws[s])
            xb = apply_augmentation(xb, flip, dy, dx, aug["padding"], aug["fill"])
        state = algorithm.client_step(state, (xb, y[ix]), hparams, grad_fn)
        losses.append(state["loss"])
    message, new_client_state = algorithm.client_final(server_state, state, hparams)
    mean_loss = float(torch.stack(losses).mean()) if losses else float("nan")
    return message, new_client_state, mean_loss
