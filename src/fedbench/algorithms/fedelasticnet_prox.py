"""FedElasticNet for FedAvg / FedProx (Kim et al., "Communication-Efficient and Drift-Robust
Federated Learning via Elastic Net", Algorithm 1, eq. (4); arXiv 2022).

Client k ∈ P_t approximately solves, by local SGD from θ^{t−1},

    θ_k^t ≈ argmin_θ  L_k(θ) + (λ2/2) ‖θ − θ^{t−1}‖²₂ + λ1 ‖θ − θ^{t−1}‖₁             (4)
    local step:  θ ← θ − η_l ( ∇L_k(θ; b) + λ2 (θ − θ^{t−1}) + λ1 sign(θ − θ^{t−1}) )

then thresholds and sends its update

    Δ_k^t = θ_k^t − θ^{t−1};   Δ_k^t(i) = 0 where |Δ_k^t(i)| ≤ ε

and the server aggregates as FedAvg: θ^t = θ^{t−1} + Σ_{k∈P_t} n_k Δ_k^t / Σ_{k∈P_t} n_k.
With λ1 = 0 and ε = 0 this is exactly FedProx with μ = λ2 (bitwise; and FedAvg when λ2 = 0).

Hyperparameters: ``lambda1`` (λ1), ``lambda2`` (λ2, FedProx's μ), ``epsilon`` (ε). Defaults are
Table 5's CIFAR-10 row (1e-6, 1e-4, 1e-3).

Decisions on the points the paper leaves open:

1. sign(0) = 0 (``torch.sign``): the first local step starts at θ = θ^{t−1}, where the ℓ1
   subgradient is taken as 0. Plain subgradient SGD rarely lands on exact zeros; ε does that.
2. Thresholding is applied to the transmitted Δ_k only; the client is stateless, so there is no
   client state to keep consistent (see :mod:`.fedelasticnet_feddyn` for where it matters).
3. (SCAFFOLD's Δc: not applicable here.)
4. Aggregation is normalised by Σ_{k∈P_t} n_k over the *sampled* clients, not the total n printed
   in Algorithm 1 (which would shrink the server step by ≈ |P_t|/m); the FedDyn code, whose numbers
   the paper reports, does this. Reused from :mod:`.fedavg`.
5. Client sampling is the engine's (``sampling.scheme: bernoulli`` is the FedDyn code's sampler).
6. λ1 and ε are plain hyperparameters; the paper's selection procedure is a config grid.

The ℓ1 and ℓ2 terms are part of the local direction, so ``clip_norm`` clips them together with
∇L_k (as FedProx's proximal term), and ``weight_decay`` is added after clipping.
"""

from __future__ import annotations

from fedbench.algorithms.fedavg import broadcast, server_update
from fedbench.algorithms.fedprox import client_init, server_init
from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, elastic_net_direction, sgd_step
from fedbench.tree import tree_sub, tree_threshold

HPARAMS: dict[str, float] = {"lambda1": 1e-6, "lambda2": 1e-4, "epsilon": 1e-3}
BOUNDS: dict[str, str] = {"lambda1": "[0, inf)", "lambda2": "[0, inf)", "epsilon": "[0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """θ ← θ − η_l (∇L_k(θ; b) + λ2 (θ − θ^{t−1}) + λ1 sign(θ − θ^{t−1}))."""
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    lambda1, lambda2 = (number(hparam(hparams, HPARAMS, k)) for k in ("lambda1", "lambda2"))
    direction = elastic_net_direction(grads, params, step_state["global_params"], lambda1, lambda2)
    return advance(step_state, sgd_step(params, direction, hparams), loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"delta": Δ_k}`` with |Δ_k(i)| ≤ ε set to 0; no client state."""
    delta = tree_sub(step_state["params"], server_state["params"])
    return {"delta": tree_threshold(delta, float(hparam(hparams, HPARAMS, "epsilon")))}, None
