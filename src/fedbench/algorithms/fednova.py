"""FedNova: normalized averaging (Wang, Liu, Liang, Joshi & Poor, "Tackling the Objective
Inconsistency Problem in Heterogeneous Federated Optimization", NeurIPS 2020: the generalized
update G_i a_i, the normalized update and τ_eff; the paper's a_i of local heavy-ball momentum).
The same normalization is Fed-Norm-SGDA's (Sharma, Panda & Joshi, "Federated Minimax Optimization
With Client Heterogeneity", TMLR, eq. (2) and Appendix A.1).

Any local solver whose update is a linear combination of its local gradients,

    θ^{t−1} − θ_i = η_l Σ_{k<τ_i} a_i^{(k)} g_i^{(k)} = η_l G_i a_i,

is normalized by ‖a_i‖₁: client i sends d_i = (θ^{t−1} − θ_i) / ‖a_i‖₁ (a weighted average of its
local steps, whatever their number) and the scalar ‖a_i‖₁. The server, with p_i = n_i / Σ_j n_j:

    τ_eff = Σ_i p_i ‖a_i‖₁                                   (the paper's default choice)
    θ^t   = θ^{t−1} − η_g · τ_eff · Σ_i p_i d_i

FedAvg is the same with each d_i weighted by p_i ‖a_i‖₁ / τ_eff instead of p_i: with unequal
local work it tends (as η_l → 0) to the minimizer of the surrogate Σ_i p_i ‖a_i‖₁ f_i (the
objective inconsistency); FedNova weights every client by p_i and tends to that of Σ_i p_i f_i.
Both keep an O(η_l) bias at a fixed η_l (tested on quadratics). When every ‖a_i‖₁ is equal
(equal τ_i, same solver) and η_g = 1, FedNova is FedAvg.

Local solvers (τ_i = the client's number of local steps this round, ``local.epochs`` or
``local.steps``; with epochs and unequal n_i the τ_i differ):

- plain SGD (``momentum`` ρ = 0): a_i = (1, …, 1), ‖a_i‖₁ = τ_i;
- heavy-ball momentum ρ (``torch.optim.SGD(momentum=ρ)`` form, buffer v = 0 at the start of every
  round): v ← ρ v + g, θ ← θ − η_l v, so a_i^{(k)} = (1 − ρ^{τ_i−k}) / (1 − ρ) and
  ‖a_i‖₁ = Σ_{j=1}^{τ_i} (1 − ρ^j) / (1 − ρ).

‖a_i‖₁ is accumulated step by step, without the closed form's division by 1 − ρ: q ← ρ q + 1
(q = Σ_{j<k} ρ^j, the momentum buffer of a constant gradient 1), ‖a‖₁ ← ‖a‖₁ + q. With ρ = 0
this counts the steps exactly.

Departures and choices:

- Partial participation (our choice): p_i and τ_eff are taken over the *sampled* clients,
  p_i = n_i / Σ_{j∈P_t} n_j and τ_eff = Σ_{i∈P_t} p_i ‖a_i‖₁. This keeps FedNova ≡ FedAvg with
  equal τ_i under any sampling, since :mod:`fedbench.algorithms.fedavg` normalizes over the
  sampled clients too (no n/P reweighting of unbiased sampling estimators).
- The momentum buffer is reset to 0 every round (the paper's a_i assumes it); weight decay and
  clipping (:mod:`fedbench.algorithms.local`) act on the direction before it enters the buffer, as
  in ``torch.optim.SGD``, and are then part of the normalized update.
- The message is d_i (d floats) plus ‖a_i‖₁ (1 float), counted as sent: d + 1 floats per client.
  d_i is not divided by η_l (the paper's d_i is; the server then multiplies by η_l again).
- A client that took no step sends d_i = 0 and ‖a_i‖₁ = 0.
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, clip_by_global_norm, init_step_state, sgd_step
from fedbench.tree import Tree, tree_axpy, tree_sub, tree_weighted_mean, tree_zeros_like

HPARAMS: dict[str, float] = {"server_lr": 1.0, "momentum": 0.0}
BOUNDS: dict[str, str] = {"server_lr": "(0, inf)", "momentum": "[0, 1)"}

__all__ = ["BOUNDS", "HPARAMS", "a_norm_closed_form", "broadcast", "client_final", "client_init", "client_step",
           "server_init", "server_update", "tau_eff"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰}``."""
    return {"params": params}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": θ^{t−1}}`` (d floats of downlink per client)."""
    return {"params": server_state["params"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """θ_i = θ^{t−1}; momentum buffer v = 0; ``q`` = 0 and ``a_norm`` ‖a_i‖₁ = 0 (0-d float64).
    FedNova clients are stateless across rounds. The buffer is always present (also for ρ = 0),
    so that cells with different ρ have one step-state structure (stacked training)."""
    params = server_state["params"]
    device = next(iter(params.values())).device
    zero = torch.zeros((), dtype=torch.float64, device=device)
    return init_step_state(params, momentum_buffer=tree_zeros_like(params), q=zero, a_norm=zero)


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """One local step and the update of ‖a_i‖₁.

    ρ = 0 (a Python number): θ ← θ − η_l (clip(g) + λ θ), the shared :func:`sgd_step`.
    Otherwise (ρ > 0, or a 0-d tensor under stacked training): d = clip(g) + λ θ, v ← ρ v + d,
    θ ← θ − η_l v (``torch.optim.SGD(momentum=ρ, dampening=0)``; with ρ = 0 the same values).
    Then q ← ρ q + 1, ‖a‖₁ ← ‖a‖₁ + q. Branch-free on tensor values (vmap-safe).
    """
    rho = number(hparam(hparams, HPARAMS, "momentum"))
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    q = step_state["q"] * rho + 1.0
    extra = {"q": q, "a_norm": step_state["a_norm"] + q}
    if not torch.is_tensor(rho) and rho == 0.0:
        return {**advance(step_state, sgd_step(params, grads, hparams), loss), **extra}
    direction = grads
    clip_norm = hparams.get("clip_norm")
    if clip_norm is not None:
        direction = clip_by_global_norm(direction, clip_norm if torch.is_tensor(clip_norm) else float(clip_norm))
    weight_decay = hparams.get("weight_decay", 0.0)
    if torch.is_tensor(weight_decay) or weight_decay:
        direction = _fma(direction, params, weight_decay)
    buffer = _fma(direction, step_state["momentum_buffer"], rho)
    new_params = sgd_step(params, buffer, {"lr": hparams["lr"]})
    return {**advance(step_state, new_params, loss), "momentum_buffer": buffer, **extra}


def _fma(y: Tree, x: Tree, alpha) -> Tree:
    """y + alpha·x leaf-wise, rounded as :func:`fedbench.algorithms.local.sgd_step` rounds its weight
    decay (``torch.addcmul`` for a tensor alpha, ``torch.add(..., alpha=)`` for a number: the same
    bits), so that ρ = 0 as a tensor gives exactly the values of the plain SGD path."""
    if torch.is_tensor(alpha):
        return {k: torch.addcmul(y[k], x[k], alpha) for k in y}
    return {k: torch.add(y[k], x[k], alpha=alpha) for k in y}


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"normalized_update": d_i = (θ^{t−1} − θ_i)/‖a_i‖₁, "a_norm": ‖a_i‖₁}`` (d + 1
    floats; ‖a_i‖₁ a 0-d float64 tensor); no client state. Branch-free: ‖a_i‖₁ is either 0 (no
    step, θ_i = θ^{t−1}, d_i = 0) or ≥ 1, so dividing by max(‖a_i‖₁, 1) is exact."""
    a_norm = step_state["a_norm"]
    denom = torch.clamp(a_norm, min=1.0)
    update = tree_sub(server_state["params"], step_state["params"])
    normalized = {k: v / denom.to(v.dtype) for k, v in update.items()}
    return {"normalized_update": normalized, "a_norm": a_norm}, None


def tau_eff(messages: list[dict], weights) -> torch.Tensor:
    """τ_eff = Σ_i p_i ‖a_i‖₁ with p_i = n_i / Σ_j n_j over the round's messages (0-d float64).

    Args:
        messages: the round's ClientMessages (``"a_norm"`` entries).
        weights: (P,) the clients' sample counts n_i (any positive weights).

    Raises:
        ValueError: no messages, or the weights sum to zero.
    """
    if len(messages) == 0:
        raise ValueError("fednova.tau_eff: no messages")
    w = torch.as_tensor(weights, dtype=torch.float64).cpu()
    total = float(w.sum())
    if total <= 0:
        raise ValueError(f"fednova.tau_eff: weights sum to {total}; need a positive total")
    a = torch.stack([torch.as_tensor(m["a_norm"]).detach().to(torch.float64).cpu() for m in messages])
    return (w / total * a).sum()


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """θ^t = θ^{t−1} − η_g τ_eff Σ_i p_i d_i, p_i = n_i / Σ_{j∈P_t} n_j (Wang et al. 2020, the FedNova update).

    ``messages``: the round's ClientMessages (``"normalized_update"`` d_i, ``"a_norm"`` ‖a_i‖₁);
    ``weights``: (P,) sample counts n_i. Raises ValueError for no messages or zero total weight."""
    eta_g = float(hparam(hparams, HPARAMS, "server_lr"))
    mean_d = tree_weighted_mean([m["normalized_update"] for m in messages], weights)
    step = -eta_g * float(tau_eff(messages, weights))
    return {**server_state, "params": tree_axpy(step, mean_d, server_state["params"])}


def a_norm_closed_form(tau: int, rho: float) -> float:
    """‖a‖₁ of τ heavy-ball steps with momentum ρ ∈ [0, 1), buffer 0 at the start:
    Σ_{j=1}^{τ} (1 − ρ^j)/(1 − ρ) = (τ − ρ(1 − ρ^τ)/(1 − ρ)) / (1 − ρ) (τ for ρ = 0).
    Wang et al. 2020's local-momentum a_i = [1 − ρ^τ, …, 1 − ρ]/(1 − ρ).

    Raises:
        ValueError: τ < 0 or ρ outside [0, 1).
    """
    if tau < 0 or not 0.0 <= rho < 1.0:
        raise ValueError(f"a_norm_closed_form: need tau >= 0 and 0 <= rho < 1 (got {tau}, {rho})")
    return (tau - rho * (1.0 - rho**tau) / (1.0 - rho)) / (1.0 - rho)
