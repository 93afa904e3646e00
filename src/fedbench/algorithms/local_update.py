"""LocalUpdate: the family of local update methods of Charles & Konečný, "Convergence and Accuracy
Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021 (Algorithms 1 and 2, Table 1).

Client i, from the broadcast model x (Algorithm 2), with client learning rate γ (``local.lr``),
proximal strength α (``alpha``) and weights Θ = (θ_1, …, θ_K) ≥ 0 (``theta``):

    x_1 = x
    for k = 1..K:   g_k = ∇f_i(x_k; S_k) + α (x_k − x)         (minibatch S_k; + λ x_k with weight decay λ)
                    x_{k+1} = x_k − γ g_k
    send q_i = Σ_k θ_k g_k                                      (the pseudo-gradient; d floats)

Server (Algorithm 1): q̄ = Σ_i n_i q_i / Σ_i n_i over the round's clients, then ServerOpt(x, q̄)
with server learning rate η (``server_lr``) and ``server_opt``:

- ``gd``:         x ← x − η q̄
- ``heavy_ball``: v ← β v + q̄, x ← x − η v              (β = ``momentum``; v⁰ = 0)
- ``nesterov``:   v ← β v + q̄, x ← x − η (q̄ + β v)      (``torch.optim.SGD(nesterov=True)`` form)
- ``adam``:       FedOpt's Adam on the ascent direction −q̄ (Reddi et al. 2021, "Adaptive Federated
  Optimization", Algorithm 2: ``beta1``, ``beta2``, ``tau``; :mod:`fedbench.algorithms.fedopt`)

The heavy-ball and Nesterov steps are :func:`fedbench.algorithms.fedavgm.momentum_step` on −q̄ (its
buffer holds −v). Members (Table 1; ServerOpt = gd): Θ_1 (``first``) with γ = 0 is minibatch SGD;
Θ_{1:K} (``all``) is FedSGD at γ = 0, FedAvg / Local SGD / Reptile at α = 0 (FedAvg's model
averaging is exactly η = γ: Appendix A; Reptile's interpolation ε is η = εγ), FedProx /
MetaMinibatchProx at α > 0; Θ_K (``last``) is FOMAML-type; Θ_{2K+1} is MAML with K inner
full-batch steps on quadratics (Theorem 2; :mod:`fedbench.algorithms.maml`). With heavy ball it is
FedAvgM (Hsu et al. 2019), with Adam FedAdam.

For quadratic losses the expected message is exactly ∇f̃_i(x) = Q_i A_i (x − c_i) with
Q_i = Σ_k θ_k (I − γ(A_i + αI))^{k−1} (Theorem 1), so LocalUpdate is ServerOpt on the surrogate
f̃ and converges (deterministically) to x*(α, γ, Θ) = E[Q_i A_i]⁻¹ E[Q_i A_i c_i], not to x*:
:mod:`fedbench.theory.quadratic`, tested on the engine with :mod:`fedbench.data.quadratic`.

``theta``: ``all`` (Θ_{1:K}, the default, also written null), ``last`` (Θ_K: only the last local gradient), ``first``
(Θ_1: only the first), or an explicit list [θ_1, …, θ_K] of non-negative numbers, not all 0
(K(Θ) = its length; steps beyond it carry weight 0, and a client that takes fewer steps, as with
local work in epochs, uses only the first weights). ``all`` and ``last`` take K as the client's
number of local steps this round, so they also work with local work given in epochs.

Departures and choices:

- The clients' messages are averaged with weights n_i (fedbench's convention); Algorithm 1 writes the
  unweighted mean over the M sampled clients and the deterministic analysis Σ p_i q_i: equal for
  equal n_i (the quadratic problem), and p_i = n_i/Σ n_j otherwise.
- Weight decay λ (``local.weight_decay``) is part of g_k (the gradient of f_i + (λ/2)‖x‖²), so the
  message is the sum of the directions actually stepped along. Gradient clipping (``local.clip_norm``)
  would make the message a non-linear function of the gradients and is an error (:func:`check_cell`).
- The message is sent as it is, not normalized by w(Θ) = Σ θ_k (the paper does not normalize; the
  γ → 0 limit of f̃ is w(Θ) f).
"""

from __future__ import annotations

import math

import torch

from fedbench.algorithms import fedopt
from fedbench.algorithms.fedavgm import momentum_step
from fedbench.algorithms.fedprox import prox_direction
from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.tree import Tree, tree_axpy, tree_scale, tree_weighted_mean, tree_zeros_like

#: ``theta``: None (the default) means ``all``, Θ_{1:K} (a None default lets the config take a name
#: or a list); ``server_opt`` and ``theta`` are non-numeric (structural under stacking).
HPARAMS: dict = {"theta": None, "alpha": 0.0, "server_opt": "gd", "server_lr": 1.0, "momentum": 0.9,
                 "beta1": 0.9, "beta2": 0.99, "tau": 1e-3}
BOUNDS: dict[str, str] = {"alpha": "[0, inf)", "server_lr": "[0, inf)", "momentum": "[0, 1)", "beta1": "[0, 1)",
                          "beta2": "[0, 1)", "tau": "(0, inf)"}

#: Named coefficient vectors: Θ_{1:K}, Θ_K, Θ_1.
THETA_NAMES = ("all", "last", "first")
SERVER_OPTS = ("gd", "heavy_ball", "nesterov", "adam")

__all__ = ["BOUNDS", "HPARAMS", "SERVER_OPTS", "THETA_NAMES", "accumulate", "broadcast", "check_cell", "check_theta",
           "client_final", "client_init", "client_step", "mean_pseudo_gradient", "server_init", "server_step",
           "server_update", "theta_vector", "weight_decay_of"]


def check_theta(theta) -> str | tuple[float, ...]:
    """``theta`` checked: one of :data:`THETA_NAMES` (None: ``all``), or a tuple of finite
    non-negative numbers with at least one positive.

    Raises:
        ValueError: anything else (the message says what is allowed).
    """
    if theta is None:
        return "all"
    if isinstance(theta, str):
        if theta not in THETA_NAMES:
            raise ValueError(f"local_update: theta must be one of {', '.join(THETA_NAMES)} or a list of "
                             f"non-negative weights (got {theta!r})")
        return theta
    if isinstance(theta, (list, tuple)) and theta and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in theta) \
            and any(v > 0 for v in theta):
        return tuple(float(v) for v in theta)
    raise ValueError(f"local_update: theta must be one of {', '.join(THETA_NAMES)} or a non-empty list of finite "
                     f"non-negative weights [θ_1, ..., θ_K], not all 0 (got {theta!r})")


def theta_vector(theta, steps: int):
    """Θ = [θ_1, …, θ_K(Θ)] as a list of floats for a client taking ``steps`` local steps (``all``:
    ``steps`` ones; ``last``: ``steps − 1`` zeros and a final 1; ``first``: [1]; a list: itself), the
    argument :mod:`fedbench.theory.quadratic` takes for the same client.

    Raises:
        ValueError: an invalid ``theta`` (:func:`check_theta`).
    """
    theta = check_theta(theta)
    if theta == "all":
        return [1.0] * steps
    if theta == "last":
        return [0.0] * (steps - 1) + [1.0] if steps else []
    if theta == "first":
        return [1.0]
    return list(theta)


def check_server_opt(hparams: dict) -> str:
    """``server_opt``, checked.

    Raises:
        ValueError: not one of :data:`SERVER_OPTS`.
    """
    opt = hparam(hparams, HPARAMS, "server_opt")
    if opt not in SERVER_OPTS:
        raise ValueError(f"local_update: server_opt must be one of {', '.join(SERVER_OPTS)} (got {opt!r})")
    return opt


def _check_no_clipping(hparams: dict, name: str) -> None:
    if hparams.get("clip_norm") is not None:
        raise ValueError(f"{name}: gradient clipping would make the message a non-linear function of the "
                         f"gradients; set local.clip_norm to null (got {hparams['clip_norm']!r})")


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job): ``theta`` and ``server_opt`` are known values; no gradient
    clipping; an explicit Θ has no more weights than ``local.steps`` (when local work is in steps).

    Raises:
        ValueError: as said.
    """
    theta = check_theta(hparam(hparams, HPARAMS, "theta"))
    check_server_opt(hparams)
    _check_no_clipping(hparams, "local_update")
    steps = hparams.get("local_steps")
    if isinstance(theta, tuple) and steps is not None and len(theta) > steps:
        raise ValueError(f"local_update: theta has K(Θ) = {len(theta)} weights but a client takes local.steps = "
                         f"{steps}: the weights beyond step {steps} would never be used; set local.steps to "
                         f"{len(theta)} or shorten theta")


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": x⁰}``, plus ``"momentum"`` 0 (heavy ball, Nesterov) or FedOpt's
    ``"m"`` 0 and ``"v"`` τ² (Adam).

    Raises:
        ValueError: an unknown ``server_opt``, or τ ≤ 0 for Adam.
    """
    opt = check_server_opt(hparams)
    if opt in ("heavy_ball", "nesterov"):
        return {"params": params, "momentum": tree_zeros_like(params)}
    if opt == "adam":
        return fedopt.server_init(params, hparams, HPARAMS)
    return {"params": params}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": x}`` (d floats)."""
    return {"params": server_state["params"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """x_1 = x; the anchor x (``global_params``) for the proximal term; ``pseudo_grad`` = 0 (the
    running Σ θ_k g_k); ``theta_rest``: the weights of the steps still to come (explicit Θ and
    ``first``; a 1-D tensor shifted by one each step), absent for ``all`` and ``last``. Clients are
    stateless.

    Raises:
        ValueError: ``clip_norm`` is set, or ``theta`` is not valid (:func:`check_theta`).
    """
    _check_no_clipping(hparams, "local_update")
    params = server_state["params"]
    theta = check_theta(hparam(hparams, HPARAMS, "theta"))
    extra = {"global_params": params, "pseudo_grad": tree_zeros_like(params)}
    if theta not in ("all", "last"):
        first = next(iter(params.values()))
        extra["theta_rest"] = torch.tensor(theta_vector(theta, 1), dtype=first.dtype, device=first.device)
    return init_step_state(params, **extra)


def accumulate(step_state: dict, direction: Tree, theta) -> dict:
    """``pseudo_grad`` and ``theta_rest`` after a step along ``direction`` g_k: Σ θ_k g_k so far.

    ``all``: + g_k; ``last``: replaced by g_k (after K steps it is g_K); otherwise + θ_k g_k with
    θ_k the head of ``theta_rest``, which is then shifted left (a 0 enters at the end), so no
    tensor-valued step index is needed (vmap-safe)."""
    acc = step_state["pseudo_grad"]
    if theta == "all":
        return {"pseudo_grad": {k: acc[k] + direction[k] for k in acc}}
    if theta == "last":
        return {"pseudo_grad": dict(direction)}
    rest = step_state["theta_rest"]
    weight = rest[0]
    shifted = torch.cat([rest[1:], torch.zeros_like(rest[:1])])
    return {"pseudo_grad": {k: torch.addcmul(acc[k], direction[k], weight.to(acc[k].dtype)) for k in acc},
            "theta_rest": shifted}


def weight_decay_of(hparams: dict):
    """λ = ``weight_decay`` (None: 0), a Python number or a 0-d tensor (never tested for truth)."""
    value = hparams.get("weight_decay")
    return 0.0 if value is None else value


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """g_k = ∇f_i(x_k; b) + α (x_k − x) + λ x_k;  x_{k+1} = x_k − γ g_k;  Σ θ_k g_k updated.

    α (``alpha``), λ (``weight_decay``) and γ (``lr``) may be 0-d tensors (stacked cells)."""
    alpha = number(hparam(hparams, HPARAMS, "alpha"))
    weight_decay = weight_decay_of(hparams)
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    direction = prox_direction(grads, params, step_state["global_params"], alpha)
    if torch.is_tensor(weight_decay) or weight_decay:
        direction = tree_axpy(weight_decay, params, direction)
    new_params = sgd_step(params, direction, {"lr": hparams["lr"]})
    theta = check_theta(hparam(hparams, HPARAMS, "theta"))
    return {**advance(step_state, new_params, loss), **accumulate(step_state, direction, theta)}


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"pseudo_grad": q_i = Σ_k θ_k g_k}`` (d floats); no client state."""
    return {"pseudo_grad": step_state["pseudo_grad"]}, None


def mean_pseudo_gradient(messages: list[dict], weights) -> Tree:
    """q̄ = Σ_i n_i q_i / Σ_i n_i over the round's messages (``"pseudo_grad"`` entries)."""
    return tree_weighted_mean([m["pseudo_grad"] for m in messages], weights)


def server_step(server_state: dict, q: Tree, hparams: dict) -> dict:
    """ServerOpt(x, q̄) for ``server_opt`` (module docstring), on a given pseudo-gradient ``q``
    (shared with :mod:`fedbench.algorithms.maml`)."""
    opt = check_server_opt(hparams)
    eta = float(hparam(hparams, HPARAMS, "server_lr"))
    if opt == "gd":
        return {**server_state, "params": tree_axpy(-eta, q, server_state["params"])}
    if opt == "adam":
        return fedopt.adaptive_step(server_state, tree_scale(q, -1.0), hparams, HPARAMS, "adam")
    beta = float(hparam(hparams, HPARAMS, "momentum"))
    return momentum_step(server_state, tree_scale(q, -1.0),
                         {"server_lr": eta, "momentum": beta, "dampening": 0.0, "nesterov": opt == "nesterov"})


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """x ← ServerOpt(x, q̄), q̄ = Σ n_i q_i / Σ n_i."""
    return server_step(server_state, mean_pseudo_gradient(messages, weights), hparams)
