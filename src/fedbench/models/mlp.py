"""Fully connected network with ReLU hidden layers on the flattened input.

Layers ``fc1 … fc{L+1}`` for ``hidden = [h_1, …, h_L]``: D → h_1 → … → h_L → C, ReLU between
layers, none after the last (logits).

Shapes:
    params: ``fc{i}.weight`` (out, in), ``fc{i}.bias`` (out,) (nn.Linear layout).
    x: (B, *input_shape) → logits (B, C).

Source: the FedAvg paper's "2NN" (McMahan et al. 2017: 784-200-200-10, 199,210 parameters) and
the FedDyn code's MNIST / EMNIST-L models (200-200 and 100-100; github.com/alpemreacar/FedDyn;
Acar et al., "Federated Learning Based on Dynamic Regularization", ICLR 2021). Kim et al.,
"Communication-Efficient and Drift-Robust Federated Learning via Elastic Net" (arXiv 2022) ran
those: their §4 says "200 and 100", but the dense counts of their Table 2 are 199,210 / 89,610
parameters × Σ_t |P_t|.
Initialised like ``torch.nn.Linear``: U(±1/√fan_in) for weights and biases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models.logreg import linear_init
from fedbench.tree import Tree

DEFAULT_HIDDEN = (200, 200)


def init(
    rng: np.random.Generator,
    input_shape: tuple,
    num_classes: int,
    dtype: torch.dtype = torch.float32,
    hidden: Sequence[int] = DEFAULT_HIDDEN,
) -> Tree:
    """Parameters of the D → hidden → C network, drawn layer by layer (weight, then bias)."""
    sizes = [int(np.prod(input_shape)), *[int(h) for h in hidden], int(num_classes)]
    params: Tree = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"fc{i}.weight"], params[f"fc{i}.bias"] = linear_init(rng, fan_in, fan_out, dtype)
    return params


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Logits (B, C) for x (B, *input_shape); the depth is read from the parameter names."""
    n_layers = sum(1 for k in params if k.endswith(".weight"))
    h = x.flatten(start_dim=1)
    for i in range(1, n_layers + 1):
        h = F.linear(h, params[f"fc{i}.weight"], params[f"fc{i}.bias"])
        if i < n_layers:
            h = F.relu(h)
    return h
