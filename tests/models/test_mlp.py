"""Fully connected ReLU network."""

import numpy as np
import pytest
import torch

from fedbench.models import build_model, make_grad_fn, num_parameters


# Kim et al. 2022 = Kim, Woo, Seo & Kim, "Communication-Efficient and Drift-Robust Federated
# Learning via Elastic Net" (arXiv 2022): its Table 2 dense counts imply the FedDyn code's MLPs.
@pytest.mark.parametrize(
    "hidden,shape,classes,count",
    [
        ([200, 200], (1, 28, 28), 10, 199_210),  # FedAvg 2NN / FedDyn-code MNIST (Kim et al. 2022, Table 2)
        ([100, 100], (784,), 10, 89_610),  # FedDyn-code EMNIST-L
        ([200, 100], (784,), 10, 178_110),  # FedElasticNet's text, "200 and 100"
        ([], (64,), 10, 650),  # no hidden layer: logistic regression
    ],
)
def test_parameter_counts(hidden, shape, classes, count):
    model = build_model({"name": "mlp", "hidden": hidden}, shape, classes)
    p = model.init(np.random.default_rng(0))
    assert num_parameters(p) == count
    assert model.apply(p, torch.zeros(2, *shape)).shape == (2, classes)


def test_default_is_200_200_and_names():
    p = build_model({"name": "mlp"}, (784,), 10).init(np.random.default_rng(0))
    assert {k: tuple(v.shape) for k, v in p.items()} == {
        "fc1.weight": (200, 784), "fc1.bias": (200,),
        "fc2.weight": (200, 200), "fc2.bias": (200,),
        "fc3.weight": (10, 200), "fc3.bias": (10,),
    }


def test_matches_nn_sequential_forward_and_grad():
    model = build_model({"name": "mlp", "hidden": [6, 5]}, (2, 4), 3)
    p = model.init(np.random.default_rng(0), dtype=torch.float64)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 5),
                              torch.nn.ReLU(), torch.nn.Linear(5, 3)).double()
    names = {"1": "fc1", "3": "fc2", "5": "fc3"}
    net.load_state_dict({f"{i}.{s}": p[f"{n}.{s}"] for i, n in names.items() for s in ("weight", "bias")})
    rng = np.random.default_rng(1)
    x, y = torch.from_numpy(rng.normal(size=(10, 2, 4))), torch.from_numpy(rng.integers(0, 3, size=10))
    torch.testing.assert_close(model.apply(p, x), net(x), rtol=0, atol=1e-15)
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    grads, ours = make_grad_fn(model)(p, x, y)
    torch.testing.assert_close(ours, loss.detach(), rtol=0, atol=1e-15)
    for key, param in net.named_parameters():
        i, s = key.split(".")
        torch.testing.assert_close(grads[f"{names[i]}.{s}"], param.grad, rtol=0, atol=1e-15)
