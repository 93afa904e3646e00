"""Local SGDA (Deng & Mahdavi, "Local Stochastic Gradient Descent Ascent: Convergence Analysis and
Communication Efficiency", AISTATS 2021; Sharma, Zhang & Joshi, ICML 2022), the naive-aggregation
baseline of Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity",
TMLR 2023, §2 and §6 (their "Local SGDA" and, with ``momentum: 0.9``, "Local SGDA with momentum").

Each sampled client runs τ_i simultaneous SGDA steps from (x^t, y^t) (y projected onto Y after each)
and sends Δ_i = θ_i − θ^t; the server takes θ^{t+1} = θ^t + Σ_{i∈C} w̃_i Δ_i and projects y (with full
participation: iterate averaging Σ p_i θ_i). With unequal local work it implicitly weights client i
by p_i ‖a_i‖₁ (TMLR 2023, eq. 2) and converges towards a stationary point of the surrogate
Σ_i p_i ‖a_i‖₁ f_i, not of Σ_i p_i f_i (:mod:`fedbench.theory.minimax` gives the exact fixed point on
quadratics). The local step, the two players, w̃_i (``p``, ``estimator``), the projection and the
choices where the paper is silent: :mod:`.sgda`.
"""

from __future__ import annotations

from fedbench.algorithms import sgda
from fedbench.tree import Tree

HPARAMS: dict = dict(sgda.HPARAMS)
BOUNDS: dict[str, str] = dict(sgda.BOUNDS)

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "client_final", "client_init", "client_step",
           "server_init", "server_update"]

check_cell = sgda.check_cell
broadcast = sgda.broadcast
client_init = sgda.client_init
client_step = sgda.client_step
client_final = sgda.client_final_naive
server_update = sgda.server_update_naive


def server_init(params: Tree, hparams: dict, num_clients: int, client_weights=None) -> dict:
    """:func:`fedbench.algorithms.sgda.server_init` (no snapshot)."""
    return sgda.server_init(params, hparams, num_clients, client_weights)
