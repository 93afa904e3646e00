"""Local SGDA+ (Deng & Mahdavi, "Local Stochastic Gradient Descent Ascent: Convergence Analysis and
Communication Efficiency", AISTATS 2021), the baseline of Sharma, Panda & Joshi, "Federated Minimax
Optimization With Client Heterogeneity", TMLR 2023, §2.4 and §6 (with ``momentum: 0.9``: "Local
SGDA+ with momentum").

Local SGDA (:mod:`.local_sgda`: naive aggregation of Δ_i) with the y-gradient of every local step
taken at a snapshot x̂ instead of the local x (same minibatch; two gradient calls per step),
x̂ refreshed to the server's x every S = ``snapshot_period`` rounds (TMLR 2023, Algorithm 1, line 4;
Deng & Mahdavi count S in iterations, we count rounds as the TMLR paper does). Details: :mod:`.sgda`.
"""

from __future__ import annotations

from fedbench.algorithms import sgda
from fedbench.tree import Tree

HPARAMS: dict = {**sgda.HPARAMS, **sgda.PLUS_HPARAMS}
BOUNDS: dict[str, str] = {**sgda.BOUNDS, **sgda.PLUS_BOUNDS}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "client_final", "client_init", "client_step",
           "server_init", "server_update"]

check_cell = sgda.check_cell
broadcast = sgda.broadcast
client_init = sgda.client_init
client_step = sgda.client_step
client_final = sgda.client_final_naive
server_update = sgda.server_update_naive


def server_init(params: Tree, hparams: dict, num_clients: int, client_weights=None) -> dict:
    """:func:`fedbench.algorithms.sgda.server_init` with the snapshot x̂ = x⁰."""
    return sgda.server_init(params, hparams, num_clients, client_weights, plus=True)
