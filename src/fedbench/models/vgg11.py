"""VGG-11 for 32×32 images, as a pure function of a parameter dict (CIFAR-10 in Sharma, Panda &
Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023, §6: "VGG11").

Architecture: configuration "A" of Simonyan & Zisserman, "Very Deep Convolutional Networks for
Large-Scale Image Recognition", ICLR 2015 (8 convolutions, 3×3, padding 1, ReLU; max-pool 2×2 after
convolutions 1, 2, 4, 6 and 8), in its CIFAR form: after five pools a 32×32 image is 512×1×1, and
one linear layer maps the 512 features to the C classes (the common CIFAR VGG; the ImageNet
model's 4096-4096 head would hold 120M parameters for 32×32 inputs):

    [64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M] → flatten → FC C

``norm``: ``none`` (the default) or ``group`` (GroupNorm with ``groups`` groups after every
convolution). The paper does not say whether its VGG-11 has BatchNorm; fedbench has none by
default, as federated codes usually drop it (running statistics are client state that federated
averaging does not define, and they make the model impure under ``torch.func.vmap``); ``group``
is the usual federated replacement (Hsieh et al., ICML 2020). 9,225,610 parameters for 10 classes
without norms.

Shapes:
    params: ``features.{j}.weight`` (c_j, c_{j−1}, 3, 3), ``features.{j}.bias`` (c_j,) for the
            j-th convolution (1-based), ``features.{j}.norm.{weight,bias}`` with ``norm: group``;
            ``fc.weight`` (C, 512·h·w), ``fc.bias`` (C,).
    x: (B, C_in, H, W) (or flattened with ``input_shape``) → logits (B, C).

Initialisation: convolutions Kaiming-normal (fan_out, ReLU gain) with zero bias, as torchvision's
VGG; the linear layer PyTorch's default U(±1/√fan_in); norms weight 1, bias 0.
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

#: Configuration "A": output channels of each convolution, "M" a 2×2 max-pool.
CONFIG_A = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")
NORMS = ("none", "group")
#: On CPU one client at a time (as the CNN: fedbench.models.cnn.BATCH_CLIENTS_ON_CPU).
BATCH_CLIENTS_ON_CPU = False


def feature_shape(input_shape: Sequence[int]) -> tuple[int, int, int]:
    """(512, h, w) after the five pools.

    Raises:
        ValueError: an image smaller than 32×32 (a spatial size would reach 0).
    """
    _, h, w = image_shape(input_shape)
    for _ in range(CONFIG_A.count("M")):
        h, w = h // 2, w // 2
    if h < 1 or w < 1:
        raise ValueError(f"vgg11: input {tuple(input_shape)} is too small for five 2×2 max-pools (needs ≥ 32×32)")
    return 512, h, w


def check_options(norm: str, groups: int) -> None:
    """Raises ValueError for an unknown ``norm`` or ``groups`` not dividing 64."""
    if norm not in NORMS:
        raise ValueError(f"vgg11: 'norm' must be one of {NORMS}; got {norm!r}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1 or 64 % groups:
        raise ValueError(f"vgg11: 'groups' must be a positive divisor of 64; got {groups!r}")


def init(rng: np.random.Generator, input_shape: tuple, num_classes: int, dtype: torch.dtype = torch.float32,
         norm: str = "none", groups: int = 2) -> Tree:
    """Parameters, drawn layer by layer in forward order."""
    check_options(norm, groups)
    c_in = image_shape(input_shape)[0]
    params: Tree = {}
    j = 0
    for v in CONFIG_A:
        if v == "M":
            continue
        j += 1
        std = math.sqrt(2.0 / (v * 9))
        params[f"features.{j}.weight"] = torch.from_numpy(rng.normal(0.0, std, size=(v, c_in, 3, 3))).to(dtype)
        params[f"features.{j}.bias"] = torch.zeros(v, dtype=dtype)
        if norm == "group":
            params[f"features.{j}.norm.weight"] = torch.ones(v, dtype=dtype)
            params[f"features.{j}.norm.bias"] = torch.zeros(v, dtype=dtype)
        c_in = v
    c, h, w = feature_shape(input_shape)
    params["fc.weight"], params["fc.bias"] = linear_init(rng, c * h * w, int(num_classes), dtype)
    return params


def apply(params: Tree, x: torch.Tensor, input_shape: Sequence[int] | None = None, groups: int = 2) -> torch.Tensor:
    """Logits (B, C). GroupNorm is applied where the parameters have norm entries."""
    if input_shape is not None:
        x = x.reshape(x.shape[0], *image_shape(input_shape))
    h, j = x, 0
    for v in CONFIG_A:
        if v == "M":
            h = F.max_pool2d(h, 2)
            continue
        j += 1
        h = F.conv2d(h, params[f"features.{j}.weight"], params[f"features.{j}.bias"], padding=1)
        if f"features.{j}.norm.weight" in params:
            h = F.group_norm(h, groups, params[f"features.{j}.norm.weight"], params[f"features.{j}.norm.bias"])
        h = F.relu(h)
    return F.linear(h.flatten(start_dim=1), params["fc.weight"], params["fc.bias"])
