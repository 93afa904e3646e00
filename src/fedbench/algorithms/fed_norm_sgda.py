"""Fed-Norm-SGDA (Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity",
TMLR 2023, Algorithm 1 without the snapshot; eqs. 2-3; for nonconvex–strongly-concave and
nonconvex–PL problems, their fair-classification experiments, §6).

FedNova's normalized averaging (:mod:`.fednova`) carried over to descent–ascent. Client i runs τ_i
simultaneous SGDA steps (local solver with coefficients a_i: plain SGDA, or heavy-ball momentum
``momentum``), then sends d_i = (θ_i − θ^t)/‖a_i‖₁ and ‖a_i‖₁; the server takes

    θ^{t+1} = θ^t + γ τ_eff Σ_{i∈C} w̃_i d_i,     then y ← Π_Y(y)

with w̃_i = p_i n/P (eq. 3, ``estimator: unbiased``) and γ = ``server_lr`` (1 in the paper). Every
client is weighted by p_i whatever its local work, so it tends to a stationary point of
Σ_i p_i f_i (exact fixed points on quadratics: :mod:`fedbench.theory.minimax`). With equal τ_i,
P = n and γ = 1 it is Local SGDA (:mod:`.local_sgda`) exactly. The client learning rate is folded
into d_i (the paper's γ^s = 1 with η^c ≈ 0.02 in Tables 3-4 only makes sense so); τ_eff under
partial participation (``tau_eff``), the projection and the other choices: :mod:`.sgda`.
"""

from __future__ import annotations

import torch

from fedbench.algorithms import sgda
from fedbench.tree import Tree

HPARAMS: dict = {**sgda.HPARAMS, **sgda.NORM_HPARAMS}
BOUNDS: dict[str, str] = {**sgda.BOUNDS, **sgda.NORM_BOUNDS}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "client_final", "client_init", "client_step",
           "server_init", "server_update"]

check_cell = sgda.check_cell
broadcast = sgda.broadcast
client_init = sgda.client_init
client_step = sgda.client_step
client_final = sgda.client_final_normalized
server_update = sgda.server_update_normalized


def server_init(params: Tree, hparams: dict, num_clients: int, client_weights=None) -> dict:
    """:func:`fedbench.algorithms.sgda.server_init` (no snapshot), ``metrics["tau_eff"]`` = 0."""
    state = sgda.server_init(params, hparams, num_clients, client_weights)
    return {**state, "metrics": {**state["metrics"], "tau_eff": torch.zeros((), dtype=torch.float64)}}
