"""CUDA graphs of the vectorized step loop (fedbench.engine.clients.graphs).

On CPU: the cache key (hyperparameters are baked into a captured step, so they are part of it).
On CUDA: a graphed run equals the eager run of the same engine (float64, unequal client sizes,
partial participation, a learning rate that decays every round, so every round recaptures), the
graphs are used at all, and a cell whose hyperparameters do not change reuses its graphs.
The equivalence with the sequential reference on CUDA is tests/engine/clients/test_vectorized.py.
"""

import pytest
import torch
from test_vectorized import SAMPLING, _rel, _spec, data  # noqa: F401 (data: the fixture)

from fedbench.engine.clients import graphs
from fedbench.engine.rounds.loop import train

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible")


def _state(g=4, d=3):
    return {"params": {"w": torch.zeros(g, d, dtype=torch.float64)}, "steps": torch.zeros(g, dtype=torch.int64),
            "loss": torch.zeros(g)}


def test_key_changes_with_hyperparameters_and_shapes_only():
    inputs = [torch.zeros(5, 4, 7, dtype=torch.int64)]
    loss = torch.zeros(4, dtype=torch.float64)
    k = graphs.graph_key(_state(), loss, inputs, {"lr": 0.1, "mu": 0.01})
    assert k == graphs.graph_key(_state(), loss, [torch.ones(9, 4, 7, dtype=torch.int64)], {"lr": 0.1, "mu": 0.01})
    assert k != graphs.graph_key(_state(), loss, inputs, {"lr": 0.1 * 0.95, "mu": 0.01})  # decayed lr
    assert k != graphs.graph_key(_state(g=5), torch.zeros(5, dtype=torch.float64), inputs, {"lr": 0.1, "mu": 0.01})
    assert k != graphs.graph_key(_state(), loss, [torch.zeros(5, 4, 8, dtype=torch.int64)], {"lr": 0.1, "mu": 0.01})
    with_momentum = _state() | {"momentum": {"w": torch.zeros(4, 3, dtype=torch.float64)}}
    assert k != graphs.graph_key(with_momentum, loss, inputs, {"lr": 0.1, "mu": 0.01})


def test_step_graphs_refuse_a_cpu_device():
    with pytest.raises(ValueError, match="CUDA device"):
        graphs.StepGraphs(torch.device("cpu"))


@pytest.fixture
def recorded(monkeypatch):
    """Every StepGraphs the engine creates, kept for inspection."""
    made, original = [], graphs.StepGraphs

    def make(device):
        made.append(original(device))
        return made[-1]

    monkeypatch.setattr(graphs, "StepGraphs", make)
    return made


@cuda
@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold", "feddyn", "elastic_fedprox"])
def test_graphed_run_equals_eager_run(data, algorithm, recorded, monkeypatch):
    ds, part = data
    spec = _spec(algorithm, sampling=SAMPLING["bernoulli"])  # lr decays: a new graph every round
    _, graphed = train(spec, ds, part, device="cuda", engine="vectorized")
    assert recorded[-1].captures >= spec["rounds"] and recorded[-1].replays > 0
    monkeypatch.setattr(graphs, "MIN_STEPS", 10**9)  # the same engine, every step eager
    _, eager = train(spec, ds, part, device="cuda", engine="vectorized")
    assert recorded[-1].captures == 0
    for key in ("params", "server_state", "client_states"):
        assert _rel(eager[key], graphed[key]) <= 1e-13, key


@cuda
def test_graphs_are_reused_while_hyperparameters_stay(data, recorded):
    ds, part = data
    local = _spec("fedavg")["local"] | {"lr_decay": 1.0}
    spec = _spec("fedavg", local=local, sampling={"scheme": "uniform", "participation": 1.0})
    train(spec | {"rounds": 1}, ds, part, device="cuda", engine="vectorized")
    one_round = recorded[-1].captures
    train(spec | {"rounds": 4}, ds, part, device="cuda", engine="vectorized")
    assert 0 < one_round == recorded[-1].captures  # rounds 2-4: same groups, same hyperparameters
