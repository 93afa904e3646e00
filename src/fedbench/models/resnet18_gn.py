"""ResNet-18 with GroupNorm, as a pure function of a parameter dict (CIFAR-100 in Charles & Konečný,
"Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021, §6,
which follows Reddi et al., "Adaptive Federated Optimization", ICLR 2021: ResNet-18 with batch
normalization replaced by group normalization, after Hsieh et al., "The Non-IID Data Quagmire of
Decentralized Machine Learning", ICML 2020).

Architecture (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, the 18-layer
net), in its CIFAR form: a 3×3 stride-1 stem without max-pooling (32×32 or 24×24 inputs are too
small for the ImageNet stem), then four stages of two basic blocks with 64, 128, 256, 512 channels
(strides 1, 2, 2, 2), global average pooling and one linear layer:

    stem:  conv3×3(C_in → 64) → GN → ReLU
    block: conv3×3(s) → GN → ReLU → conv3×3 → GN, + shortcut (identity, or conv1×1(s) → GN when the
           shape changes) → ReLU
    head:  global average pool → FC C

Every GroupNorm has ``groups`` groups (default 2, Hsieh et al.'s and Reddi et al.'s choice) and a
learned affine (weight 1, bias 0 at init). Convolutions have no bias (the norm follows). 11,220,132
parameters with 100 classes (the same count as torchvision's CIFAR ResNet-18 with BatchNorm:
GroupNorm has the same affine parameters and no running statistics, so the model stays a pure
function of its parameters, as federated training and ``torch.func.vmap`` need).

Shapes:
    params: ``stem.conv.weight`` (64, C_in, 3, 3), ``stem.norm.{weight,bias}`` (64,);
            ``layer{s}.{b}.conv{1,2}.weight``, ``layer{s}.{b}.norm{1,2}.{weight,bias}``,
            ``layer{s}.{b}.shortcut.conv.weight`` (c_out, c_in, 1, 1) and
            ``layer{s}.{b}.shortcut.norm.{weight,bias}`` where the block changes shape;
            ``fc.weight`` (C, 512), ``fc.bias`` (C,).
    x: (B, C_in, H, W) (or (B, H, W), or flattened with ``input_shape``) → logits (B, C).

Initialisation: convolutions Kaiming-normal (fan_out, ReLU gain), as torchvision's ResNet; the
linear head PyTorch's default U(±1/√fan_in); norms weight 1, bias 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models.cnn import image_shape
from fedbench.models.logreg import linear_init
from fedbench.tree import Tree

#: Output channels and first-block stride of the four stages.
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))
BLOCKS_PER_STAGE = 2
#: On CPU one client at a time (vmap turns convolutions into grouped ones: the CNN's measurement,
#: fedbench.models.cnn.BATCH_CLIENTS_ON_CPU).
BATCH_CLIENTS_ON_CPU = False


def _conv(rng: np.random.Generator, c_out: int, c_in: int, k: int, dtype: torch.dtype) -> torch.Tensor:
    std = math.sqrt(2.0 / (c_out * k * k))  # Kaiming normal, mode fan_out, ReLU
    return torch.from_numpy(rng.normal(0.0, std, size=(c_out, c_in, k, k))).to(dtype)


def _norm(params: Tree, name: str, c: int, dtype: torch.dtype) -> None:
    params[f"{name}.weight"] = torch.ones(c, dtype=dtype)
    params[f"{name}.bias"] = torch.zeros(c, dtype=dtype)


def check_groups(groups: int) -> None:
    """Every stage's channel count must be divisible by ``groups``.

    Raises:
        ValueError: ``groups`` not a positive integer dividing 64.
    """
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1 or 64 % groups:
        raise ValueError(f"resnet18_gn: 'groups' must be a positive divisor of 64 (the narrowest stage); "
                         f"got {groups!r}")


def init(rng: np.random.Generator, input_shape: tuple, num_classes: int, dtype: torch.dtype = torch.float32,
         groups: int = 2) -> Tree:
    """Parameters, drawn layer by layer in forward order."""
    check_groups(groups)
    c_in = image_shape(input_shape)[0]
    params: Tree = {"stem.conv.weight": _conv(rng, 64, c_in, 3, dtype)}
    _norm(params, "stem.norm", 64, dtype)
    c_in = 64
    for s, (c_out, stride) in enumerate(STAGES, start=1):
        for b in range(BLOCKS_PER_STAGE):
            p = f"layer{s}.{b}"
            params[f"{p}.conv1.weight"] = _conv(rng, c_out, c_in, 3, dtype)
            _norm(params, f"{p}.norm1", c_out, dtype)
            params[f"{p}.conv2.weight"] = _conv(rng, c_out, c_out, 3, dtype)
            _norm(params, f"{p}.norm2", c_out, dtype)
            if (stride if b == 0 else 1) != 1 or c_in != c_out:
                params[f"{p}.shortcut.conv.weight"] = _conv(rng, c_out, c_in, 1, dtype)
                _norm(params, f"{p}.shortcut.norm", c_out, dtype)
            c_in = c_out
    params["fc.weight"], params["fc.bias"] = linear_init(rng, c_in, int(num_classes), dtype)
    return params


def apply(params: Tree, x: torch.Tensor, input_shape: Sequence[int] | None = None, groups: int = 2) -> torch.Tensor:
    """Logits (B, C). ``input_shape`` (C, H, W) reshapes flattened or channel-less inputs."""
    if input_shape is not None:
        x = x.reshape(x.shape[0], *image_shape(input_shape))
    elif x.dim() == 3:
        x = x.unsqueeze(1)

    def gn(h, name):
        return F.group_norm(h, groups, params[f"{name}.weight"], params[f"{name}.bias"])

    h = F.relu(gn(F.conv2d(x, params["stem.conv.weight"], padding=1), "stem.norm"))
    for s, (_, stride) in enumerate(STAGES, start=1):
        for b in range(BLOCKS_PER_STAGE):
            p, st = f"layer{s}.{b}", (stride if b == 0 else 1)
            out = F.relu(gn(F.conv2d(h, params[f"{p}.conv1.weight"], stride=st, padding=1), f"{p}.norm1"))
            out = gn(F.conv2d(out, params[f"{p}.conv2.weight"], padding=1), f"{p}.norm2")
            if f"{p}.shortcut.conv.weight" in params:
                h = gn(F.conv2d(h, params[f"{p}.shortcut.conv.weight"], stride=st), f"{p}.shortcut.norm")
            h = F.relu(out + h)
    h = h.mean(dim=(2, 3))
    return F.linear(h, params["fc.weight"], params["fc.bias"])
