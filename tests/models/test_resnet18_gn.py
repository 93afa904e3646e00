"""fedbench.models.resnet: ResNet-18 with GroupNorm equals the same network built from torch.nn
modules (an independent implementation), has the CIFAR ResNet-18 parameter count, and trains
under torch.func (vmap over clients, grad)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fedbench.models import build_model, num_parameters


class Block(nn.Module):
    def __init__(self, c_in, c_out, stride, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.norm1 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential()
            self.shortcut.add_module("conv", nn.Conv2d(c_in, c_out, 1, stride, bias=False))
            self.shortcut.add_module("norm", nn.GroupNorm(groups, c_out))

    def forward(self, x):
        out = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(out)) + self.shortcut(x))


class ResNet18GN(nn.Module):
    def __init__(self, c_in, classes, groups=2):
        super().__init__()
        self.stem = nn.Sequential()
        self.stem.add_module("conv", nn.Conv2d(c_in, 64, 3, 1, 1, bias=False))
        self.stem.add_module("norm", nn.GroupNorm(groups, 64))
        c = 64
        for s, (c_out, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], start=1):
            setattr(self, f"layer{s}", nn.Sequential(Block(c, c_out, stride, groups), Block(c_out, c_out, 1, groups)))
            c = c_out
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for s in range(1, 5):
            h = getattr(self, f"layer{s}")(h)
        return self.fc(h.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def model():
    return build_model({"name": "resnet18_gn"}, (3, 32, 32), 100)


def test_parameter_count_and_names_match_the_module(model):
    params = model.init(np.random.default_rng(0))
    assert num_parameters(params) == 11_220_132
    ref = ResNet18GN(3, 100)
    assert set(params) == set(ref.state_dict())
    assert all(params[k].shape == v.shape for k, v in ref.state_dict().items())


def test_forward_equals_the_nn_module():
    model = build_model({"name": "resnet18_gn"}, (3, 24, 24), 100)  # Fed-CIFAR100's 24×24 crops
    params = model.init(np.random.default_rng(1), dtype=torch.float64)
    params = {k: v + 0.01 * torch.randn_like(v) for k, v in params.items()}  # norms away from (1, 0)
    ref = ResNet18GN(3, 100).double()
    ref.load_state_dict(params)
    x = torch.randn(4, 3, 24, 24, dtype=torch.float64)
    torch.testing.assert_close(model.apply(params, x), ref(x), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(model.apply(params, x.reshape(4, -1)), ref(x), rtol=1e-10, atol=1e-12)


def test_vmap_over_clients_of_grad_equals_one_at_a_time():
    small = build_model({"name": "resnet18_gn", "groups": 4}, (3, 4, 4), 5)  # 4×4: stages at 4, 2, 1, 1
    params = small.init(np.random.default_rng(2), dtype=torch.float64)
    x, y = torch.randn(2, 3, 3, 4, 4, dtype=torch.float64), torch.randint(0, 5, (2, 3))

    def loss(p, xb, yb):
        return torch.nn.functional.cross_entropy(small.apply(p, xb), yb)

    stacked = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in params.items()}
    g = torch.func.vmap(torch.func.grad(loss))(stacked, x, y)
    for i in range(2):
        one = torch.func.grad(loss)(params, x[i], y[i])
        for k in one:
            torch.testing.assert_close(g[k][i], one[k], rtol=1e-9, atol=1e-12)


def test_bad_groups_are_refused():
    with pytest.raises(ValueError, match="groups"):
        build_model({"name": "resnet18_gn", "groups": 3}, (3, 32, 32), 10)
