"""Shared fixtures for the algorithm tests: a small heterogeneous logistic-regression federation
(float64) and a reference round loop built from the engine's own pieces
(:func:`fedbench.engine.clients.local.train_client`, :func:`fedbench.engine.clients.batches.local_batches`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.engine.clients.batches import local_batches
from fedbench.engine.clients.holdout import holdout_batches, holdout_fraction, holdout_split, make_output_grad_fn
from fedbench.engine.clients.local import train_client
from fedbench.models import build_model, make_grad_fn

DIM, CLASSES = 5, 3


@pytest.fixture(autouse=True)
def _single_thread():
    """Tiny tensors: intra-op threads only add overhead (10x on a busy 2-core machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_clients(sizes, seed=0):
    """One (x, y) per client: shifted Gaussian features, labels from a shared noisy linear teacher."""
    rng = np.random.default_rng(seed)
    teacher = rng.normal(size=(DIM, CLASSES))
    clients = []
    for k, n in enumerate(sizes):
        x = rng.normal(loc=0.5 * k, size=(n, DIM))
        y = np.argmax(x @ teacher + rng.gumbel(size=(n, CLASSES)), axis=1)
        clients.append((torch.from_numpy(x), torch.from_numpy(y).long()))
    return clients


@pytest.fixture
def model():
    return build_model({"name": "logreg"}, (DIM,), CLASSES)


@pytest.fixture
def grad_fn(model):
    return make_grad_fn(model)


@pytest.fixture
def params0(model):
    return model.init(np.random.default_rng(123), dtype=torch.float64)


@pytest.fixture
def unequal_clients():
    return make_clients([12, 20, 9, 15])


@pytest.fixture
def equal_clients():
    return make_clients([10, 10, 10, 10])


def run_rounds(alg, params0, clients, hparams, grad_fn, rounds=3, sampled=None, seed=0, batch_size=4,
               epochs=None, steps=None, record=False):
    """Run ``rounds`` rounds of ``alg``; ``sampled(t)`` gives the client ids of round t (default all).

    An algorithm with a held-out pass (Elastic Aggregation) gets the engine's split
    (:func:`fedbench.engine.clients.holdout.holdout_split`, keyed by ``seed``): it trains on D_k \\ B_k,
    n_k counts those rows, and its held-out pass runs on B_k with the logreg's output gradient.

    Returns (server_state, client_states, history); history holds per round the messages and the
    states, when ``record``.
    """
    if epochs is None and steps is None:
        epochs = 1
    m = len(clients)
    held = None
    frac = holdout_fraction(alg, hparams)
    if frac > 0:
        train_rows, held_rows = holdout_split([np.arange(len(y)) for _, y in clients], frac, seed)
        held = [(x[h], y[h]) for (x, y), h in zip(clients, held_rows)]
        clients = [(x[r], y[r]) for (x, y), r in zip(clients, train_rows)]
        output_grad_fn = make_output_grad_fn(build_model({"name": "logreg"}, (DIM,), CLASSES).apply)
    server = alg.server_init(params0, hparams, m)
    client_states: dict[int, dict] = {}
    history = []
    weights_all = np.array([len(y) for _, y in clients], dtype=np.float64)
    for t in range(1, rounds + 1):
        ids = list(range(m)) if sampled is None else list(sampled(t))
        messages = []
        for k in ids:
            x, y = clients[k]
            batches = local_batches(seed, t, k, len(y), batch_size, epochs=epochs, steps=steps)
            kw = {}
            if held is not None:
                xh, yh = held[k]
                kw = {"holdout": (xh, yh, holdout_batches(seed, t, k, len(yh), batch_size)),
                      "output_grad_fn": output_grad_fn}
            msg, cstate, _ = train_client(alg, server, client_states.get(k), x, y, batches, hparams, grad_fn, **kw)
            if cstate is not None:
                client_states[k] = cstate
            messages.append(msg)
        prev = server
        server = alg.server_update(server, messages, torch.as_tensor(weights_all[ids]), hparams)
        if record:
            history.append({"ids": ids, "messages": messages, "prev": prev, "server": server,
                            "client_states": dict(client_states)})
    return server, client_states, history


@pytest.fixture
def rounds_runner():
    return run_rounds


def assert_trees_equal(a, b, atol=0.0):
    assert a.keys() == b.keys()
    for k in a:
        if atol == 0.0:
            assert torch.equal(a[k], b[k]), k
        else:
            torch.testing.assert_close(a[k], b[k], atol=atol, rtol=0.0, msg=k)


@pytest.fixture
def trees_equal():
    return assert_trees_equal
