"""Federated algorithms, one module each, as pure functions over explicit state (FedJAX style).

Every algorithm module ``fedbench.algorithms.<name>`` defines:

``HPARAMS: dict[str, float]``
    The algorithm's own hyperparameters and their defaults (for example FedProx ``{"mu": 0.01}``).
    A config key not listed here is rejected by the config check. The module reads a value with
    :func:`fedbench.algorithms.hparams.hparam` (the config's value, else this default).

``BOUNDS: dict[str, str]``
    Next to the defaults: the interval each numeric hyperparameter must lie in, written as in
    mathematics (FedProx ``{"mu": "[0, inf)"}``; ``"(0, 1]"`` excludes 0). The config check
    (:mod:`fedbench.config`) rejects a value outside it, naming the key; a hyperparameter
    without an entry is not range-checked.

``server_init(params, hparams, num_clients) -> ServerState``
    ``params`` is the initial model θ⁰ (a pytree, ``dict[str, Tensor]``); ``num_clients`` is m.
    ServerState is a dict holding at least ``"params"`` plus the algorithm's server state
    (momentum buffer, control variate c, FedDyn h, ...). An algorithm with per-round diagnostics
    keeps them under ``"metrics"``: a flat dict of 0-d float64 tensors, present from
    ``server_init`` on and replaced by each ``server_update`` (Elastic Aggregation:
    ``{"boosted_pct": ...}``). The engine records each in the metrics.parquet column of the same
    name; the name must be one of :data:`fedbench.metrics.schema.ALGORITHM_METRICS` (documented
    there; null for algorithms without it).

    A ``server_init`` with a keyword parameter ``client_weights`` also gets every client's
    training-sample count n_k ((m,) float64 numpy array), which it may keep in the server state:
    the minimax algorithms need N = Σ n_k for the unbiased n/P reweighting of partial
    participation (:mod:`fedbench.algorithms.sgda`).

``broadcast(server_state) -> dict[str, Tree]``
    What the server sends to every sampled client (θ, plus c for SCAFFOLD); counted as downlink.

``client_init(server_state, client_state, hparams) -> ClientStepState``
    ``client_state`` is the client's persistent state from its previous participation
    (SCAFFOLD c_k, FedDyn gradient state), or ``None`` the first time.
    ClientStepState is a dict holding at least ``"params"`` (the local model, starts at θ^{t-1}),
    ``"steps"`` (int, local steps done) and ``"loss"`` (0-d tensor, loss of the last step).

``client_step(step_state, batch, hparams, grad_fn) -> ClientStepState``
    One local step on ``batch = (x, y)``. ``grad_fn(params, x, y) -> (grads, loss)`` returns the
    gradient pytree of the mean minibatch loss and the loss (0-d tensor). Local optimizer settings
    are in ``hparams``: ``lr`` (this round's client learning rate η_l), ``weight_decay``,
    ``clip_norm`` (None = no clipping). Shared by every algorithm: :func:`fedbench.algorithms.local.sgd_step`.

``client_final(server_state, step_state, hparams) -> (ClientMessage, ClientState | None)``
    ClientMessage is a dict of pytrees: exactly what the client transmits (communication is
    counted from it). The second value is the client's new persistent state (None if stateless).
    Naming convention: an entry ``"params"`` is the client's model θ_k (FedDyn); every other
    entry is already an update or side information (``"delta"`` Δ_k, ``"delta_c"``, ``"omega"``).
    The engine uses it for the Δ-convention entropy (``uplink_entropy_bits_delta``, the message
    with θ_k replaced by Δ_k = θ_k − θ^{t−1}) and for the Δ histograms.

``server_update(server_state, messages, weights, hparams) -> ServerState``
    ``messages``: the P ClientMessages of the round, in ascending client id order.
    ``weights``: (P,) float64 tensor of the clients' training-sample counts n_k.

Optional: a check before any job

``check_cell(hparams) -> None``
    Raises ValueError when a cell's settings cannot run this algorithm (FedAc: local work in
    epochs, clipping, μ ≤ 0, an unknown ``variant``; Elastic Aggregation: an unknown
    ``sensitivity``). ``hparams`` are the round-1 hyperparameters
    (:meth:`fedbench.engine.spec.CellSpec.round_hparams`). The config check calls it for every cell and
    reports the message at ``experiments.<e>.algorithms.<label>``, so the error comes before any
    job instead of inside one; the module's own functions keep their checks.

Optional: a held-out pass (only Elastic Aggregation has one; see :mod:`fedbench.engine.clients.holdout`)

``holdout_fraction(hparams) -> float``
    The fraction f ∈ [0, 1) of each client's training samples to hold out, drawn once before
    training from the keyed RNG and removed from its training data (n_k then counts the rest).
    A module without it, or returning 0, holds out nothing and the engines do no extra work.

``client_holdout_step(step_state, batch, hparams, output_grad_fn) -> ClientStepState``
    Required when f > 0. Called by both engines after ``client_init`` and before the first
    ``client_step``, once per minibatch of the client's held-out rows (one pass per round, in a
    fresh order each round, training batch size). ``batch = (x, y)``; rows with a negative label
    are padding (vectorized engine). ``output_grad_fn(params, x, y) -> (grads, value)`` is the
    gradient of the mean over real rows of ‖F(θ; x_i)‖²₂, F = the model's logits. Same rules as
    ``client_step`` (pure, vmap-compatible).

Optional: ``STRUCTURAL_HPARAMS: tuple[str, ...]``, the numeric hyperparameters that change a
round's structure (Elastic Aggregation's ``sensitivity_fraction``, the held-out split's size):
cells that differ in them are never trained together (:mod:`fedbench.engine.rounds.stacking`).

Minimax (two players): a minimax model (:mod:`fedbench.models.minimax`) keeps the ascent player y
in the same parameter dict, as the leaves named ``y.*``, and its ``grad_fn`` differentiates f(x, y;
batch) with respect to both; the minimax algorithms (:mod:`fedbench.algorithms.sgda`) descend on x
and ascend on y. The engines need nothing else.

All functions are pure: they return new dicts and never modify their inputs in place.
Hyperparameters arrive as one flat dict: the algorithm's HPARAMS (overridden by the config)
plus ``lr``, ``weight_decay`` and ``clip_norm`` for the round, and ``local_steps``: the spec's
``local.steps`` (an int K), or None when local work is given in epochs (FedAc's γ depends on K).
``server_init`` gets only the algorithm's HPARAMS (no round settings). In ``client_step`` and
``client_holdout_step`` a numeric one may be a 0-d tensor (the vectorized engine training
cells with different values together); read it with :func:`fedbench.algorithms.hparams.number`
and use it in arithmetic only (no ``float()``, ``bool()``, comparisons in Python ``if``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

ALGORITHMS = (
    "fedavg", "fedavgm", "fedprox", "scaffold", "feddyn",
    "fedelasticnet_prox", "fedelasticnet_scaffold", "fedelasticnet_feddyn",
    "elastic_fedavg", "elastic_fedavgm", "elastic_fedprox",
    "fedadam", "fedyogi", "fedadagrad",
    "fedac", "mb_sgd", "mb_ac_sgd",
    "fednova",
    "local_update", "reptile", "maml",
    "local_sgda", "local_sgda_plus", "fed_norm_sgda", "fed_norm_sgda_plus",
)


def get_algorithm(name: str) -> ModuleType:
    """The algorithm module for ``name``.

    Raises:
        KeyError: unknown name; the message lists the known algorithms.
    """
    if name not in ALGORITHMS:
        raise KeyError(f"unknown algorithm {name!r}; known algorithms: {', '.join(ALGORITHMS)}")
    return importlib.import_module(f"fedbench.algorithms.{name}")
