"""Fed-Norm-SGDA+ (Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity",
TMLR 2023, Algorithm 1 with the snapshot; for nonconvex–concave and nonconvex–one-point-concave
problems, their robust-training experiments, §6).

Fed-Norm-SGDA (:mod:`.fed_norm_sgda`: normalized aggregation) with the y-gradient of every local
step taken at the snapshot x̂ (same minibatch: two gradient calls per step), x̂ refreshed to the
server's x every S = ``snapshot_period`` rounds (Algorithm 1, line 4). Details: :mod:`.sgda`.
"""

from __future__ import annotations

import torch

from fedbench.algorithms import sgda
from fedbench.tree import Tree

HPARAMS: dict = {**sgda.HPARAMS, **sgda.NORM_HPARAMS, **sgda.PLUS_HPARAMS}
BOUNDS: dict[str, str] = {**sgda.BOUNDS, **sgda.NORM_BOUNDS, **sgda.PLUS_BOUNDS}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "client_final", "client_init", "client_step",
           "server_init", "server_update"]

check_cell = sgda.check_cell
broadcast = sgda.broadcast
client_init = sgda.client_init
client_step = sgda.client_step
client_final = sgda.client_final_normalized
server_update = sgda.server_update_normalized


def server_init(params: Tree, hparams: dict, num_clients: int, client_weights=None) -> dict:
    """:func:`fedbench.algorithms.sgda.server_init` with the snapshot x̂ = x⁰, ``metrics["tau_eff"]`` = 0."""
    state = sgda.server_init(params, hparams, num_clients, client_weights, plus=True)
    return {**state, "metrics": {**state["metrics"], "tau_eff": torch.zeros((), dtype=torch.float64)}}
