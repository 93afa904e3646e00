"""The FedAvg-paper CNN and the FedDyn-code CIFAR CNN."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from fedbench.models import build_model, make_grad_fn, num_parameters
from fedbench.models.cnn import feature_size

# Parameter counts that the dense communication counts of Kim et al., "Communication-Efficient and
# Drift-Robust Federated Learning via Elastic Net" (arXiv 2022), Table 2, imply (d · Σ_t |P_t|):
# the FedDyn code's models (github.com/alpemreacar/FedDyn, Acar et al., ICLR 2021).
FEDDYN_CIFAR = {"name": "cnn", "channels": [64, 64], "hidden": [384, 192], "padding": "valid"}


@pytest.mark.parametrize(
    "cfg,shape,classes,count",
    [
        ({"name": "cnn"}, (1, 28, 28), 10, 1_663_370),  # McMahan et al. 2017 MNIST CNN
        (FEDDYN_CIFAR, (3, 32, 32), 10, 797_962),  # Kim et al. 2022, Table 2, CIFAR-10
        (FEDDYN_CIFAR, (3, 32, 32), 100, 815_332),  # CIFAR-100
    ],
)
def test_paper_parameter_counts(cfg, shape, classes, count):
    assert num_parameters(build_model(cfg, shape, classes).init(np.random.default_rng(0))) == count


@pytest.mark.parametrize("shape", [(1, 8, 8), (1, 28, 28), (3, 32, 32), (8, 8)])
def test_runs_on_every_input_size(shape):
    model = build_model({"name": "cnn", "channels": [4, 8], "hidden": [16]}, shape, 10)
    p = model.init(np.random.default_rng(0))
    assert model.apply(p, torch.zeros(2, *shape)).shape == (2, 10)


def test_flatten_sizes():
    assert feature_size((1, 28, 28), [32, 64], 5, "same") == 64 * 7 * 7
    assert feature_size((3, 32, 32), [64, 64], 5, "valid") == 64 * 5 * 5
    assert feature_size((1, 8, 8), [32, 64], 5, "same") == 64 * 2 * 2
    assert feature_size((1, 9, 9), [4], 3, "same") == 4 * 4 * 4  # pooling floors odd sizes


def test_flattened_and_channel_less_inputs_give_same_logits():
    model = build_model({"name": "cnn", "channels": [3, 4], "hidden": [5]}, (1, 8, 8), 6)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    x = torch.from_numpy(np.random.default_rng(1).normal(size=(3, 1, 8, 8)))
    out = model.apply(p, x)
    torch.testing.assert_close(model.apply(p, x.reshape(3, 64)), out, rtol=0, atol=0)
    torch.testing.assert_close(model.apply(p, x.reshape(3, 8, 8)), out, rtol=0, atol=0)


class _TorchCNN(nn.Module):
    def __init__(self, c_in, channels, k, hidden, classes, padding, flat):
        super().__init__()
        c = c_in
        for i, co in enumerate(channels, start=1):
            setattr(self, f"conv{i}", nn.Conv2d(c, co, k, padding=padding))
            c = co
        self.n_conv = len(channels)
        sizes = [flat, *hidden, classes]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
            setattr(self, f"fc{i}", nn.Linear(a, b))
        self.n_fc = len(sizes) - 1

    def forward(self, x):
        for i in range(1, self.n_conv + 1):
            x = nn.functional.max_pool2d(torch.relu(getattr(self, f"conv{i}")(x)), 2)
        x = x.flatten(1)
        for i in range(1, self.n_fc + 1):
            x = getattr(self, f"fc{i}")(x)
            if i < self.n_fc:
                x = torch.relu(x)
        return x


@pytest.mark.parametrize(
    "cfg,shape",
    [
        ({"name": "cnn", "channels": [3, 4], "hidden": [6]}, (1, 8, 8)),
        ({"name": "cnn", "channels": [4, 5], "hidden": [7, 6], "padding": "valid"}, (3, 16, 16)),
    ],
)
def test_matches_nn_module_forward_and_grad(cfg, shape):
    model = build_model(cfg, shape, 5)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    opts = {"kernel_size": 5, "padding": "same", **cfg}
    net = _TorchCNN(shape[0], opts["channels"], opts["kernel_size"], opts["hidden"], 5, opts["padding"],
                    feature_size(shape, opts["channels"], opts["kernel_size"], opts["padding"])).double()
    net.load_state_dict(p)  # same names and layouts as the nn.Module's state_dict
    rng = np.random.default_rng(1)
    x, y = torch.from_numpy(rng.normal(size=(4, *shape))), torch.from_numpy(rng.integers(0, 5, size=4))
    torch.testing.assert_close(model.apply(p, x), net(x), rtol=0, atol=1e-13)
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward()
    grads, ours = make_grad_fn(model)(p, x, y)
    torch.testing.assert_close(ours, loss.detach(), rtol=0, atol=1e-13)
    for k, param in net.named_parameters():
        torch.testing.assert_close(grads[k], param.grad, rtol=0, atol=1e-13)
