"""FedProx (Li et al. 2020, "Federated Optimization in Heterogeneous Networks", MLSys 2020,
Algorithm 2).

Client k approximately solves

    θ_k^t ≈ argmin_θ  L_k(θ) + (μ/2) ‖θ − θ^{t−1}‖²₂

by local SGD from θ^{t−1}:

    θ_k ← θ_k − η_l ( ∇L_k(θ_k; b) + μ (θ_k − θ^{t−1}) )

and sends Δ_k = θ_k − θ^{t−1}. The server aggregates as FedAvg:
θ^t = θ^{t−1} + Σ_{k∈P_t} n_k Δ_k / Σ_{k∈P_t} n_k. With μ = 0 this is exactly FedAvg.

Departures and choices:

- Fixed local work (epochs or steps) for every client, as in the paper's experiments with no
  stragglers, rather than γ-inexact solutions.
- Aggregation weighted by n_k over the sampled clients, as the FedDyn code (whose numbers
  FedElasticNet reports) does; Li et al.'s Algorithm 2 samples with probability p_k and averages
  uniformly, which is the same in expectation.
- The proximal term is part of the local direction, so ``clip_norm`` clips ∇L + μ(θ − θ^{t−1})
  together, as the FedDyn code's ``loss_algo`` does.
"""

from __future__ import annotations

from fedbench.algorithms.fedavg import broadcast, client_final, server_update
from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.tree import Tree, tree_axpy, tree_sub

HPARAMS: dict[str, float] = {"mu": 0.01}
BOUNDS: dict[str, str] = {"mu": "[0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰}``."""
    return {"params": params}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """θ_k = θ^{t−1}; keeps the anchor θ^{t−1} as ``"global_params"`` for the proximal term."""
    return init_step_state(server_state["params"], global_params=server_state["params"])


def prox_direction(grads: Tree, params: Tree, anchor: Tree, mu) -> Tree:
    """FedProx's local direction ∇L_k + μ (θ_k − θ^{t−1}), computed as μ·(θ_k − θ^{t−1}) + ∇L_k
    (μ a Python number or a 0-d tensor)."""
    return tree_axpy(mu, tree_sub(params, anchor), grads)


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """θ_k ← θ_k − η_l (∇L_k(θ_k; b) + μ (θ_k − θ^{t−1}))."""
    mu = number(hparam(hparams, HPARAMS, "mu"))
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    direction = prox_direction(grads, params, step_state["global_params"], mu)
    return advance(step_state, sgd_step(params, direction, hparams), loss)
