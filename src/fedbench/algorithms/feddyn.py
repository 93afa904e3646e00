"""FedDyn: Federated Learning with Dynamic Regularization (Acar et al. 2021, "Federated Learning
Based on Dynamic Regularization", ICLR 2021, Algorithm 1, as
restated by Kim et al. (FedElasticNet, arXiv 2022) in eqs. (8)-(9)).

Client state: g_k, the client's gradient state (g_k⁰ = 0). Server state: θ and h (h⁰ = 0).
Round t, each sampled client k ∈ P_t approximately solves, by local SGD from θ^{t−1},

    θ_k^t ≈ argmin_θ  L_k(θ) − ⟨g_k^{t−1}, θ⟩ + (α/2) ‖θ − θ^{t−1}‖²₂                    (8)
    local step:  θ ← θ − η_l ( ∇L_k(θ; b) − g_k^{t−1} + α (θ − θ^{t−1}) )

then updates its state with the first-order condition of (8),

    g_k^t = g_k^{t−1} − α (θ_k^t − θ^{t−1})                                             (9)

and sends θ_k^t (the original FedDyn message). Non-participants keep g_k. Server, with m the
total number of clients:

    h^t = h^{t−1} − (α/m) Σ_{k∈P_t} (θ_k^t − θ^{t−1})
    θ^t = (1/|P_t|) Σ_{k∈P_t} θ_k^t − h^t / α

so that h^t = (1/m) Σ_{k∈[m]} g_k^t at every round (Lemma B.2).

Departures and choices:

- The α θ part of the local direction is applied as SGD weight decay, exactly as the FedDyn
  reference code does (``torch.optim.SGD(weight_decay=alpha + weight_decay)`` on the loss
  CE + α⟨θ, −g_k/α − θ^{t−1}⟩). The local step is therefore

      θ ← θ − η_l ( clip(∇L_k(θ; b) − g_k^{t−1} − α θ^{t−1}) + (α + weight_decay) θ ),

  identical to the rule above when ``clip_norm`` is None (up to float rounding), and identical
  to the reference code when clipping is on.
- The reference code scales α per client, α_k = α / (m n_k / n), in the local problem and in (9)
  (alpemreacar/FedDyn, utils_methods.py). That is not applied: every client uses the paper's α. (It would need
  n_k/n on the client, which the algorithm protocol does not pass to ``client_init``.) With a
  balanced partition, n_k = n/m and the two coincide.
- The server averages θ_k^t uniformly over P_t, as the paper and the reference code do.
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.tree import Tree, tree_add, tree_axpy, tree_mean, tree_scale, tree_sub, tree_sum, tree_zeros_like

HPARAMS: dict[str, float] = {"alpha": 0.01}
BOUNDS: dict[str, str] = {"alpha": "(0, inf)"}  # the server step divides by α


def _alpha(hparams: dict):
    """α, checked > 0 when it is a Python number; a 0-d tensor (per-client α in the vectorized
    engine's step, :mod:`fedbench.algorithms.hparams`) is returned unchecked: the same values were
    checked as numbers by ``server_init`` and ``client_init``."""
    alpha = number(hparam(hparams, HPARAMS, "alpha"))
    if torch.is_tensor(alpha):
        return alpha
    if not alpha > 0:
        raise ValueError(f"feddyn: alpha must be > 0 (got {alpha}); the server step divides by it")
    return alpha


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "h": 0, "num_clients": m}``."""
    _alpha(hparams)
    if num_clients < 1:
        raise ValueError(f"feddyn: num_clients must be >= 1 (got {num_clients})")
    return {"params": params, "h": tree_zeros_like(params), "num_clients": int(num_clients)}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": θ^{t−1}}``."""
    return {"params": server_state["params"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """θ_k = θ^{t−1}; keeps g_k^{t−1} and the constant part −g_k^{t−1} − α θ^{t−1} of the direction."""
    alpha = _alpha(hparams)
    theta = server_state["params"]
    g_k = client_state["g"] if client_state is not None else tree_zeros_like(theta)
    linear = tree_axpy(-alpha, theta, tree_scale(g_k, -1.0))
    return init_step_state(theta, g=g_k, linear=linear)


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """θ ← θ − η_l (clip(∇L_k(θ; b) − g_k − α θ^{t−1}) + (α + weight_decay) θ)."""
    x, y = batch
    grads, loss = grad_fn(step_state["params"], x, y)
    return dyn_sgd(step_state, tree_add(grads, step_state["linear"]), loss, hparams)


def dyn_sgd(step_state: dict, direction: Tree, loss, hparams: dict) -> dict:
    """The local step given the direction d = ∇L_k − g_k − α θ^{t−1} (+ extra terms):
    θ ← θ − η_l (clip(d) + (α + weight_decay) θ)."""
    alpha = _alpha(hparams)
    weight_decay = hparams.get("weight_decay", 0.0)
    if not torch.is_tensor(weight_decay):
        weight_decay = weight_decay or 0.0
    local_hp = {**hparams, "weight_decay": alpha + weight_decay}
    return advance(step_state, sgd_step(step_state["params"], direction, local_hp), loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, dict]:
    """Eq. (9): g_k^t = g_k^{t−1} − α (θ_k^t − θ^{t−1}). Message ``{"params": θ_k^t}``."""
    alpha = _alpha(hparams)
    delta = tree_sub(step_state["params"], server_state["params"])
    g_new = tree_axpy(-alpha, delta, step_state["g"])
    return {"params": step_state["params"]}, {"g": g_new}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """h ← h − (α/m) Σ_k (θ_k − θ^{t−1});  θ ← mean_k θ_k − h/α  (``weights`` unused)."""
    alpha = _alpha(hparams)
    theta = server_state["params"]
    thetas = [msg["params"] for msg in messages]
    sum_delta = tree_sum([tree_sub(t, theta) for t in thetas])
    h = tree_axpy(-alpha / server_state["num_clients"], sum_delta, server_state["h"])
    return {**server_state, "params": tree_axpy(-1.0 / alpha, h, tree_mean(thetas)), "h": h}
