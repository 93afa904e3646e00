"""FedYogi (Reddi et al. 2021, "Adaptive Federated Optimization", Algorithm 2 with the
Yogi second-moment rule): FedAvg clients, adaptive server step. Equations, defaults and
departures: :mod:`.fedopt`. Server state: θ, first moment m, second moment v.
"""

from __future__ import annotations

from fedbench.algorithms import fedopt
from fedbench.algorithms.fedavg import broadcast, client_final, client_init, client_step
from fedbench.tree import Tree

HPARAMS: dict[str, float] = {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3}
# τ > 0: the second moment v starts at τ² (fedopt.server_init)
BOUNDS: dict[str, str] = {"server_lr": "(0, inf)", "beta1": "[0, 1)", "beta2": "[0, 1)", "tau": "(0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "m": 0, "v": τ²}``."""
    return fedopt.server_init(params, hparams, HPARAMS)


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """m ← β1 m + (1 − β1) Δ̄;  v ← yogi rule;  θ ← θ + η m / (√v + τ)."""
    return fedopt.server_update(server_state, messages, weights, hparams, HPARAMS, "yogi")
