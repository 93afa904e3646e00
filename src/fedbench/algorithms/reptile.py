"""Reptile, batched (Nichol, Achiam & Schulman, "On First-Order Meta-Learning Algorithms",
arXiv:1803.02999, 2018, Algorithm 2), as a federated algorithm.

Each sampled client i runs K steps of SGD from the broadcast model x (FedAvg's local training,
:mod:`fedbench.algorithms.fedavg`) and sends Δ_i = W_i − x; the server interpolates towards the
clients' models with the outer step size ε (``epsilon``):

    x ← x + ε Σ_i n_i Δ_i / Σ_i n_i

ε = 1 is FedAvg. In the LocalUpdate family (Charles & Konečný, "Convergence and Accuracy
Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021, Table 1 and Section 2) Reptile
is Θ_{1:K} with server gradient descent at η = εγ (γ the client learning rate), since
Δ_i = −γ Σ_k g_k: tested on the engine against :mod:`fedbench.algorithms.local_update`.

Departures: the clients' models are averaged with weights n_i (fedbench's convention; Nichol et
al. average the n tasks of a batch plainly, the same for equal n_i).
"""

from __future__ import annotations

from fedbench.algorithms.fedavg import broadcast, client_final, client_init, client_step, weighted_delta
from fedbench.algorithms.hparams import hparam
from fedbench.tree import Tree, tree_axpy

HPARAMS: dict[str, float] = {"epsilon": 1.0}
BOUNDS: dict[str, str] = {"epsilon": "(0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": x⁰}``."""
    return {"params": params}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """x ← x + ε Σ n_i Δ_i / Σ n_i."""
    eps = float(hparam(hparams, HPARAMS, "epsilon"))
    return {**server_state, "params": tree_axpy(eps, weighted_delta(messages, weights), server_state["params"])}
