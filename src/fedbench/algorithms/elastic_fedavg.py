"""FedAvg + Elastic Aggregation (Chen et al., "Elastic Aggregation for Federated Optimization",
CVPR 2023, supplement eq. (1) and Algorithms 1-2): FedAvg's
clients (:mod:`.fedavg`) that also estimate a parameter sensitivity Ω_k on their held-out subset
B_k (before local training, at θ^{t−1}) and send (Δ_k, Ω_k); the server rescales the n_k-weighted
mean update element-wise by ζ = 1 + τ − Ω/max Ω:

    θ^t = θ^{t−1} + ζ ⊙ Σ_{k∈P_t} n_k Δ_k / Σ_{k∈P_t} n_k

Hyperparameters, the sensitivity estimator (the held-out pass: ``holdout_fraction``,
``client_holdout_step``), ``metrics["boosted_pct"]`` and the decisions where the paper is silent:
:mod:`.elastic`.
With ``sensitivity: none`` (ζ ≡ 1) this is exactly FedAvg ("naive" aggregation).
"""

from __future__ import annotations

from fedbench.algorithms import elastic, fedavg
from fedbench.algorithms.fedavg import broadcast
from fedbench.tree import Tree, tree_add

HPARAMS: dict = dict(elastic.HPARAMS)
BOUNDS: dict[str, str] = dict(elastic.BOUNDS)
STRUCTURAL_HPARAMS: tuple[str, ...] = elastic.STRUCTURAL_HPARAMS  # the held-out fraction (stacking)

__all__ = ["BOUNDS", "HPARAMS", "STRUCTURAL_HPARAMS", "broadcast", "check_cell", "client_final", "client_holdout_step",
           "client_init", "client_step", "holdout_fraction", "server_init", "server_update"]

holdout_fraction = elastic.holdout_fraction
check_cell = elastic.check_cell
client_holdout_step = elastic.client_holdout_step
client_step = fedavg.client_step
client_final = elastic.with_omega(fedavg.client_final)


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "metrics": {"boosted_pct": 0}}``."""
    elastic.sensitivity_mode(hparams)
    return {**fedavg.server_init(params, hparams, num_clients), "metrics": elastic.init_metrics()}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """FedAvg's step state plus Ω_k = 0 (filled by the held-out pass)."""
    return elastic.init_omega(fedavg.client_init(server_state, client_state, hparams), hparams)


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """θ ← θ + ζ ⊙ Σ n_k Δ_k / Σ n_k."""
    delta, metrics = elastic.elastic_delta(messages, weights, hparams)
    return {**server_state, "params": tree_add(server_state["params"], delta), "metrics": metrics}
