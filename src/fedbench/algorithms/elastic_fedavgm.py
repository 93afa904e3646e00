"""FedAvgM + Elastic Aggregation (Chen et al., CVPR 2023, supplement Algorithm 1):
FedAvg clients with sensitivity (as :mod:`.elastic_fedavg`), and the server's momentum step
(:mod:`.fedavgm`) taken on the elastic aggregate:

    Δ = ζ ⊙ Σ_{k∈P_t} n_k Δ_k / Σ n_k;   v ← β v + (1 − dampening) Δ;   θ ← θ + η_s v

The printed Algorithm 1 uses the EMA form m ← μ m + (1 − μ) Δ, so the default ``dampening`` is
the momentum (0.9), not FedAvgM's 0 (Reddi et al.'s m ← μ m + Δ). Everything else:
:mod:`.elastic`. With ``sensitivity: none`` (ζ ≡ 1) this is exactly FedAvgM with the same
hyperparameters.
"""

from __future__ import annotations

from fedbench.algorithms import elastic, fedavgm
from fedbench.algorithms.elastic_fedavg import (
    broadcast,
    check_cell,
    client_final,
    client_holdout_step,
    client_init,
    client_step,
    holdout_fraction,
)
from fedbench.tree import Tree

HPARAMS: dict = {**fedavgm.HPARAMS, "dampening": 0.9, **elastic.HPARAMS}
BOUNDS: dict[str, str] = {**fedavgm.BOUNDS, **elastic.BOUNDS}
STRUCTURAL_HPARAMS: tuple[str, ...] = elastic.STRUCTURAL_HPARAMS  # the held-out fraction (stacking)

__all__ = ["BOUNDS", "HPARAMS", "STRUCTURAL_HPARAMS", "broadcast", "check_cell", "client_final", "client_holdout_step",
           "client_init", "client_step", "holdout_fraction", "server_init", "server_update"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "momentum": 0, "metrics": {"boosted_pct": 0}}``."""
    elastic.sensitivity_mode(hparams)
    return {**fedavgm.server_init(params, hparams, num_clients), "metrics": elastic.init_metrics()}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """v ← β v + (1 − τ_d) ζ ⊙ Δ̄;  θ ← θ + η_s v."""
    delta, metrics = elastic.elastic_delta(messages, weights, hparams)
    return {**fedavgm.momentum_step(server_state, delta, {**fedavgm.HPARAMS, "dampening": HPARAMS["dampening"],
                                                          **hparams}), "metrics": metrics}
