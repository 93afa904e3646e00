"""FedProx + Elastic Aggregation (Chen et al., CVPR 2023, supplement Algorithm 2):
FedProx's clients (:mod:`.fedprox`, proximal coefficient ``mu``) that also estimate a
parameter sensitivity Ω_k on their held-out subset B_k and send (Δ_k, Ω_k); the server step is
elastic FedAvg's:

    θ^t = θ^{t−1} + ζ ⊙ Σ_{k∈P_t} n_k Δ_k / Σ_{k∈P_t} n_k

The local step is standard FedProx, θ_k ← θ_k − η′(∇ℓ_k + μ(θ_k − θ)), not the printed
θ_k ← θ_k − η′∇ℓ_k + μ(θ − θ_k) (they differ by μ ↔ η′μ), and the
server learning rate is 1 (the printed update is θ ← θ − Δ). Everything else: :mod:`.elastic`.
With ``sensitivity: none`` (ζ ≡ 1) this is exactly FedProx.
"""

from __future__ import annotations

from fedbench.algorithms import elastic, elastic_fedavg, fedprox
from fedbench.algorithms.elastic_fedavg import server_init, server_update
from fedbench.algorithms.fedavg import broadcast

HPARAMS: dict = {**fedprox.HPARAMS, **elastic.HPARAMS}
BOUNDS: dict[str, str] = {**fedprox.BOUNDS, **elastic.BOUNDS}
STRUCTURAL_HPARAMS: tuple[str, ...] = elastic.STRUCTURAL_HPARAMS  # the held-out fraction (stacking)

__all__ = ["BOUNDS", "HPARAMS", "STRUCTURAL_HPARAMS", "broadcast", "check_cell", "client_final", "client_holdout_step",
           "client_init", "client_step", "holdout_fraction", "server_init", "server_update"]

holdout_fraction = elastic.holdout_fraction
check_cell = elastic.check_cell
client_holdout_step = elastic.client_holdout_step
client_step = fedprox.client_step
client_final = elastic_fedavg.client_final


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """FedProx's step state (θ^{t−1} kept as the proximal anchor) plus Ω_k = 0."""
    return elastic.init_omega(fedprox.client_init(server_state, client_state, hparams), hparams)
