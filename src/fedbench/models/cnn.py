"""The FedAvg-paper CNN (McMahan et al. 2017, "CNN" for MNIST), configurable.

Architecture for ``channels = [c_1, …, c_J]``, ``hidden = [h_1, …, h_L]``:

    [conv k×k (c_j filters, stride 1, padding) → ReLU → maxpool 2×2] × J
    → flatten → [FC h_l → ReLU] × L → FC C (logits)

Defaults are the FedAvg paper's: conv5×5 32 ('same') → pool → conv5×5 64 → pool → FC 512 → FC C
(1,663,370 parameters on 1×28×28 MNIST). The FedDyn code's CIFAR model (github.com/alpemreacar/FedDyn;
Acar et al., "Federated Learning Based on Dynamic Regularization", ICLR 2021) is
``channels=[64, 64], hidden=[384, 192], padding="valid"`` (797,962 parameters on 3×32×32 with
10 classes). Kim et al., "Communication-Efficient and Drift-Robust Federated Learning via Elastic
Net" (arXiv 2022), §4 print FC 394-192, but the dense counts of their Table 2 are 797,962 × Σ_t |P_t|
(163.82e7 over 200 rounds): the code's 384 is what was run.

The flatten size is computed from the input shape (pooling floors odd sizes, as
``nn.MaxPool2d(2)``), so the same code runs on 1×8×8 digits, 1×28×28 MNIST and 3×32×32 CIFAR.

Shapes:
    params: ``conv{j}.weight`` (c_j, c_{j−1}, k, k), ``conv{j}.bias`` (c_j,),
            ``fc{l}.weight`` (out, in), ``fc{l}.bias`` (out,)  (nn.Conv2d / nn.Linear layout).
    x: (B, C_in, H, W), or (B, H, W) for one channel, or flattened (B, C_in·H·W) → logits (B, C).

Initialised like PyTorch's default: U(±1/√fan_in), fan_in = c_{j−1}·k·k for convolutions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models.logreg import linear_init, uniform
from fedbench.tree import Tree

DEFAULT_CHANNELS = (32, 64)
DEFAULT_HIDDEN = (512,)
PADDINGS = ("same", "valid")

#: On CPU the vectorized engine trains one client per chunk: ``vmap`` turns a convolution over
#: stacked clients into one grouped convolution, which oneDNN ran 1.2–1.7× slower per client than
#: separate convolutions (FedDyn CIFAR CNN, B = 50, 4 and 10 clients; benchmarks/RESULTS.md, W2).
#: On CUDA clients are stacked.
BATCH_CLIENTS_ON_CPU = False


def image_shape(input_shape: Sequence[int]) -> tuple[int, int, int]:
    """(C, H, W) from an input shape (C, H, W) or (H, W).

    Raises:
        ValueError: any other rank.
    """
    s = tuple(int(v) for v in input_shape)
    if len(s) == 2:
        return (1, *s)
    if len(s) == 3:
        return s
    raise ValueError(f"cnn needs an image input shape (C, H, W) or (H, W); got {s}")


def feature_size(input_shape: Sequence[int], channels: Sequence[int], kernel_size: int, padding: str) -> int:
    """Length of the flattened feature vector after the conv/pool stages.

    Raises:
        ValueError: the image is too small for the stack (a spatial size reaches 0).
    """
    _, h, w = image_shape(input_shape)
    for _ in channels:
        if padding == "valid":
            h, w = h - kernel_size + 1, w - kernel_size + 1
        h, w = h // 2, w // 2
        if h < 1 or w < 1:
            raise ValueError(
                f"cnn: input {tuple(input_shape)} is too small for {len(channels)} conv+pool stages "
                f"with kernel {kernel_size} and padding {padding!r}"
            )
    return int(channels[-1]) * h * w if channels else image_shape(input_shape)[0] * h * w


def init(
    rng: np.random.Generator,
    input_shape: tuple,
    num_classes: int,
    dtype: torch.dtype = torch.float32,
    channels: Sequence[int] = DEFAULT_CHANNELS,
    kernel_size: int = 5,
    hidden: Sequence[int] = DEFAULT_HIDDEN,
    padding: str = "same",
) -> Tree:
    """Parameters, drawn layer by layer in forward order (weight, then bias)."""
    if padding not in PADDINGS:
        raise ValueError(f"cnn: padding must be one of {PADDINGS}; got {padding!r}")
    c_in = image_shape(input_shape)[0]
    params: Tree = {}
    for j, c_out in enumerate(channels, start=1):
        fan_in = c_in * kernel_size * kernel_size
        bound = 1.0 / math.sqrt(fan_in)
        params[f"conv{j}.weight"] = uniform(rng, bound, (int(c_out), c_in, kernel_size, kernel_size), dtype)
        params[f"conv{j}.bias"] = uniform(rng, bound, (int(c_out),), dtype)
        c_in = int(c_out)
    sizes = [feature_size(input_shape, channels, kernel_size, padding), *[int(h) for h in hidden], int(num_classes)]
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"fc{i}.weight"], params[f"fc{i}.bias"] = linear_init(rng, fan_in, fan_out, dtype)
    return params


def apply(params: Tree, x: torch.Tensor, input_shape: tuple | None = None, padding: str = "same") -> torch.Tensor:
    """Logits (B, C). ``input_shape`` (C, H, W) reshapes flattened or channel-less inputs."""
    if input_shape is not None:
        x = x.reshape(x.shape[0], *image_shape(input_shape))
    elif x.dim() == 3:
        x = x.unsqueeze(1)
    n_conv = sum(1 for k in params if k.startswith("conv") and k.endswith(".weight"))
    n_fc = sum(1 for k in params if k.startswith("fc") and k.endswith(".weight"))
    h = x
    for j in range(1, n_conv + 1):
        h = F.conv2d(h, params[f"conv{j}.weight"], params[f"conv{j}.bias"], padding=padding)
        h = F.max_pool2d(F.relu(h), 2)
    h = h.flatten(start_dim=1)
    for i in range(1, n_fc + 1):
        h = F.linear(h, params[f"fc{i}.weight"], params[f"fc{i}.bias"])
        if i < n_fc:
            h = F.relu(h)
    return h
