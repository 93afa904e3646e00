"""FedAvgM: FedAvg with server momentum (Hsu, Qi & Brown 2019, "Measuring the Effects of
Non-Identical Data Distribution for Federated Visual Classification"; Reddi et al. 2021,
"Adaptive Federated Optimization", FedOpt with SGD-momentum as ServerOpt).

Clients run FedAvg's local SGD and send Δ_k = θ_k − θ^{t−1}. The server treats −Δ̄ as a
pseudo-gradient and takes a heavy-ball step with server learning rate η_s and momentum β:

    Δ̄ = Σ_{k∈P_t} n_k Δ_k / Σ_{k∈P_t} n_k
    v^t = β v^{t−1} + (1 − τ) Δ̄              (v⁰ = 0; dampening τ = 0 by default)
    θ^t = θ^{t−1} + η_s v^t                   (heavy ball)
    θ^t = θ^{t−1} + η_s (Δ̄ + β v^t)           (``nesterov: true``)

With β = 0 and η_s = 1 this is exactly FedAvg.

Departures and options:

- ``dampening`` τ (default 0, Reddi et al.'s form). τ = β gives the EMA form
  ``m ← μ m + (1 − μ) Δ`` printed in Algorithm 1 of the supplement of Chen et al., "Elastic
  Aggregation for Federated Optimization", CVPR 2023; the two differ only by rescaling η_s by
  1/(1 − β). Unlike ``torch.optim.SGD`` the dampening is also applied in the first round (the
  buffer starts at 0 rather than at Δ̄).
- ``nesterov`` (default False): the Nesterov server optimizer of Charles and Konečný,
  "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021
  (Theorem 3, Table 2), ``torch.optim.SGD(nesterov=True)`` form.
"""

from __future__ import annotations

from fedbench.algorithms.fedavg import broadcast, client_final, client_init, client_step, weighted_delta
from fedbench.algorithms.hparams import hparam
from fedbench.tree import Tree, tree_axpy, tree_scale, tree_zeros_like

HPARAMS: dict[str, float] = {"server_lr": 1.0, "momentum": 0.9, "dampening": 0.0, "nesterov": False}
BOUNDS: dict[str, str] = {"server_lr": "(0, inf)", "momentum": "[0, 1)", "dampening": "[0, 1]"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "momentum": v⁰ = 0}``."""
    return {"params": params, "momentum": tree_zeros_like(params)}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """v ← β v + (1 − τ) Δ̄;  θ ← θ + η_s v  (or θ + η_s (Δ̄ + β v) with Nesterov)."""
    return momentum_step(server_state, weighted_delta(messages, weights), hparams)


def momentum_step(server_state: dict, delta: Tree, hparams: dict) -> dict:
    """The server step on a given aggregate Δ̄ (shared with Elastic Aggregation's FedAvgM)."""
    beta, eta_s = float(hparam(hparams, HPARAMS, "momentum")), float(hparam(hparams, HPARAMS, "server_lr"))
    dampening = float(hparam(hparams, HPARAMS, "dampening"))
    v = tree_axpy(beta, server_state["momentum"], tree_scale(delta, 1.0 - dampening) if dampening else delta)
    step = tree_axpy(beta, v, delta) if hparam(hparams, HPARAMS, "nesterov") else v
    return {**server_state, "params": tree_axpy(eta_s, step, server_state["params"]), "momentum": v}
