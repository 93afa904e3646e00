"""FedAvg: Federated Averaging (McMahan et al. 2017, "Communication-Efficient Learning of Deep
Networks from Decentralized Data", AISTATS 2017, Algorithm 1).

Round t, for each sampled client k ∈ P_t, starting from θ_k = θ^{t−1}:

    θ_k ← θ_k − η_l ∇L_k(θ_k; b)            for each local minibatch b (K steps)
    send Δ_k = θ_k − θ^{t−1}

Server:

    θ^t = θ^{t−1} + Σ_{k∈P_t} n_k Δ_k / Σ_{k∈P_t} n_k   (= Σ n_k θ_k / Σ n_k)

Departures and choices:

- Aggregation is normalised over the *sampled* clients (Σ_{k∈P_t} n_k), as McMahan et al.'s
  experiments and the FedDyn code do, not by the total n of FedElasticNet's Algorithm 1 as printed
  (which shrinks the step by ≈ |P_t|/m).
- The local step is the shared :func:`fedbench.algorithms.local.sgd_step`, so the optional gradient
  clipping and weight decay of the FedDyn code apply (both off by default in the config).
- The client sends Δ_k rather than θ_k (the same information; Δ_k is what FedElasticNet counts).
"""

from __future__ import annotations

from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.tree import Tree, messages_weighted_mean, tree_add, tree_sub

HPARAMS: dict[str, float] = {}
BOUNDS: dict[str, str] = {}


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰}``."""
    return {"params": params}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": θ^{t−1}}``."""
    return {"params": server_state["params"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """Local model θ_k = θ^{t−1}; FedAvg clients are stateless."""
    return init_step_state(server_state["params"])


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """θ_k ← θ_k − η_l ∇L_k(θ_k; b)."""
    x, y = batch
    grads, loss = grad_fn(step_state["params"], x, y)
    return advance(step_state, sgd_step(step_state["params"], grads, hparams), loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"delta": Δ_k = θ_k − θ^{t−1}}``; no client state."""
    return {"delta": tree_sub(step_state["params"], server_state["params"])}, None


def weighted_delta(messages: list[dict], weights) -> Tree:
    """Δ̄ = Σ_k n_k Δ_k / Σ_k n_k over the round's messages (``"delta"`` entries)."""
    return messages_weighted_mean(messages, "delta", weights)


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """θ^t = θ^{t−1} + Σ n_k Δ_k / Σ n_k."""
    return {**server_state, "params": tree_add(server_state["params"], weighted_delta(messages, weights))}
