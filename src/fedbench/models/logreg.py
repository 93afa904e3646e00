"""Multinomial logistic regression on the flattened input.

Shapes:
    params: ``weight`` (C, D), ``bias`` (C,), with D = prod(input_shape) (nn.Linear layout).
    x: (B, *input_shape) → logits (B, C).

Source: the convex model of FedAc (Yuan & Ma 2020, logistic regression) and of the FedDyn /
FedProx convex experiments. Initialised like ``torch.nn.Linear``: W, b ~ U(−1/√D, 1/√D).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.tree import Tree


def uniform(rng: np.random.Generator, bound: float, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """U(−bound, bound) drawn in float64 with numpy, then cast: identical on every device."""
    return torch.from_numpy(rng.uniform(-bound, bound, size=shape)).to(dtype)


def linear_init(
    rng: np.random.Generator, fan_in: int, fan_out: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """PyTorch's default ``nn.Linear`` init: weight (fan_out, fan_in) and bias, both U(±1/√fan_in)."""
    bound = 1.0 / math.sqrt(fan_in)
    return uniform(rng, bound, (fan_out, fan_in), dtype), uniform(rng, bound, (fan_out,), dtype)


def init(rng: np.random.Generator, input_shape: tuple, num_classes: int, dtype: torch.dtype = torch.float32) -> Tree:
    """Parameters ``{"weight": (C, D), "bias": (C,)}``."""
    d = int(np.prod(input_shape))
    w, b = linear_init(rng, d, num_classes, dtype)
    return {"weight": w, "bias": b}


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Logits x·Wᵀ + b for x (B, *input_shape); returns (B, C)."""
    return F.linear(x.flatten(start_dim=1), params["weight"], params["bias"])
