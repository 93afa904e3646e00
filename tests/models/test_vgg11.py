"""fedbench.models.vgg: VGG-11 equals the same network built from torch.nn modules, has the CIFAR
VGG-11 parameter count, and refuses images smaller than 32×32."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fedbench.models import build_model, num_parameters


def reference(c_in, classes, norm=None, groups=2):
    layers, c, j = [], c_in, 0
    names = {}
    for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2))
            continue
        j += 1
        conv = nn.Conv2d(c, v, 3, padding=1)
        layers.append(conv)
        names[f"features.{j}"] = conv
        if norm:
            gn = nn.GroupNorm(groups, v)
            layers.append(gn)
            names[f"features.{j}.norm"] = gn
        layers.append(nn.ReLU())
        c = v
    net = nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, classes))
    names["fc"] = net[-1]
    return net, names


@pytest.mark.parametrize("norm", ["none", "group"])
def test_forward_and_count_equal_the_nn_module(norm):
    model = build_model({"name": "vgg11", "norm": norm}, (3, 32, 32), 10)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    net, names = reference(3, 10, norm == "group")
    net = net.double()
    with torch.no_grad():
        for prefix, mod in names.items():
            mod.weight.copy_(params[f"{prefix}.weight"] + 0.01)
            mod.bias.copy_(params[f"{prefix}.bias"] + 0.01)
    shifted = {k: v + 0.01 for k, v in params.items()}
    x = torch.randn(3, 3, 32, 32, dtype=torch.float64)
    torch.testing.assert_close(model.apply(shifted, x), net(x), rtol=1e-10, atol=1e-12)
    assert num_parameters(params) == sum(p.numel() for p in net.parameters())
    if norm == "none":
        assert num_parameters(params) == 9_225_610


def test_small_images_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="too small"):
        build_model({"name": "vgg11"}, (1, 8, 8), 10)
    with pytest.raises(ValueError, match="norm"):
        build_model({"name": "vgg11", "norm": "batch"}, (3, 32, 32), 10)
