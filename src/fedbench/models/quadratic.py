"""The quadratic model: least squares on the rows of the federated quadratic problem.

Trains :mod:`fedbench.data.quadratic` (Charles & Konečný, "Convergence and Accuracy Trade-Offs in
Federated Learning and Meta-Learning", AISTATS 2021, Section 2): a row is z = [a_z, t_z] (d + 1
values) and its loss is f(x; z) = ½(a_zᵀx − t_z)², so a client's mean loss over its rows is
f_i(x) = ½(x − c_i)ᵀA_i(x − c_i) (plus the noise constant) and its gradient A_i(x − c_i).

Shapes:
    params: ``weight`` (d,), the model x ∈ ℝ^d; d = input_shape[0] − 1.
    x: (B, d + 1) rows [a, t] → outputs (B,): the residuals r = aᵀx − t.

Loss (:func:`loss`, declared on the :class:`fedbench.models.Model` instead of cross-entropy):
½ r², the mean over the rows whose label is not the padding label −100 (the vectorized engine's
padded rows, :data:`fedbench.engine.clients.chunking.IGNORE_INDEX`), so a padded row adds exactly zero
to the loss and its gradient, as cross-entropy's ``ignore_index`` does. It is not a classifier:
accuracy is NaN (:func:`fedbench.engine.rounds.evaluate.evaluate`).

Initialisation: ``init: zeros`` (x₀ = 0, the default) or ``normal`` (x₀ ~ N(0, I_d), drawn in
float64 from the keyed init generator).
"""

from __future__ import annotations

import numpy as np
import torch

from fedbench.tree import Tree

#: The number of classes of the quadratic problem's rows: one dummy label 0.
NUM_CLASSES = 1
#: ``init`` option values.
INITS = ("zeros", "normal")
#: The label of a padded row (cross-entropy's default ``ignore_index``).
IGNORE_INDEX = -100


def init(rng: np.random.Generator, input_shape: tuple, num_classes: int, dtype: torch.dtype = torch.float32,
         init: str = "zeros") -> Tree:
    """Parameters ``{"weight": (d,)}``, d = input_shape[0] − 1.

    Raises:
        ValueError: an input that is not one row of d + 1 ≥ 2 values, or an unknown ``init``.
    """
    if len(input_shape) != 1 or int(input_shape[0]) < 2:
        raise ValueError(f"quadratic: inputs must be rows [a, t] of d + 1 >= 2 values, got shape {tuple(input_shape)}")
    d = int(input_shape[0]) - 1
    if init == "zeros":
        return {"weight": torch.zeros(d, dtype=dtype)}
    if init == "normal":
        return {"weight": torch.from_numpy(rng.standard_normal(d)).to(dtype)}
    raise ValueError(f"quadratic: init must be one of {INITS}; got {init!r}")


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Residuals aᵀx − t (B,) of rows x = [a, t] (B, d + 1). Pure, vmap- and grad-safe."""
    return x[:, :-1] @ params["weight"] - x[:, -1]


def loss(outputs: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """½ r² of the residuals ``outputs`` (B,), rows with label −100 excluded.

    ``reduction``: ``"mean"`` (over the real rows; 0/0 = NaN for a batch without any, as
    cross-entropy) or ``"sum"``. Branch-free on values (vmap-safe).
    """
    real = (y != IGNORE_INDEX).to(outputs.dtype)
    total = (0.5 * outputs * outputs * real).sum()
    if reduction == "sum":
        return total
    if reduction == "mean":
        return total / real.sum()
    raise ValueError(f"quadratic loss: reduction must be 'mean' or 'sum', got {reduction!r}")
