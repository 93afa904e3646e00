"""SCAFFOLD: Stochastic Controlled Averaging (Karimireddy et al. 2020, "SCAFFOLD: Stochastic
Controlled Averaging for Federated Learning", Algorithm 1 with option II control variates,
ICML 2020; as restated by Kim et al. (FedElasticNet, arXiv 2022) in eqs. (5)-(6)).

Server state: θ and the server control variate c (c⁰ = 0). Client state: c_k (c_k⁰ = 0).
Round t, the server sends (θ^{t−1}, c^{t−1}); each sampled client k ∈ P_t runs K local steps from
θ_k = θ^{t−1}:

    θ_k ← θ_k − η_l ( ∇L_k(θ_k; b) − c_k^{t−1} + c^{t−1} )                           (5)

then updates its control variate (option II) and sends (Δ_k, Δc_k):

    c_k^t = c_k^{t−1} − c^{t−1} + (θ^{t−1} − θ_k) / (K η_l)                            (6)
    Δ_k = θ_k − θ^{t−1},   Δc_k = c_k^t − c_k^{t−1}

Server, with m the total number of clients:

    θ^t = θ^{t−1} + η_g · (1/|P_t|) Σ_{k∈P_t} Δ_k
    c^t = c^{t−1} + (1/m) Σ_{k∈P_t} Δc_k

Non-participants keep c_k. Since c and every c_k start at 0, c = (1/m) Σ_{k∈[m]} c_k holds after
every round, under full or partial participation (the paper's invariant).

Departures and choices:

- K is the number of local steps actually taken this round; η_l is this round's learning rate.
  A client with K = 0 leaves c_k unchanged and sends zeros (eq. (6) is undefined there).
- The model update is the unweighted mean of Δ_k, as in the paper. The FedDyn code weights
  Δ_k and c_k by n_k (alpemreacar/FedDyn, utils_methods.py); that variant is not implemented.
- (5) is applied through :func:`fedbench.algorithms.local.sgd_step`: ``clip_norm`` clips the whole
  corrected direction and ``weight_decay`` is added after it, as in the FedDyn code. The
  weight-decay term then sits inside θ^{t−1} − θ_k and so enters c_k through (6).
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam
from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.tree import Tree, tree_add, tree_axpy, tree_mean, tree_scale, tree_sub, tree_sum, tree_zeros_like

HPARAMS: dict[str, float] = {"server_lr": 1.0}
BOUNDS: dict[str, str] = {"server_lr": "(0, inf)"}


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "c": 0, "num_clients": m}``."""
    if num_clients < 1:
        raise ValueError(f"scaffold: num_clients must be >= 1 (got {num_clients})")
    return {"params": params, "c": tree_zeros_like(params), "num_clients": int(num_clients)}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": θ^{t−1}, "c": c^{t−1}}`` (2d floats of downlink per client)."""
    return {"params": server_state["params"], "c": server_state["c"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """θ_k = θ^{t−1}; keeps c_k^{t−1} and the correction c^{t−1} − c_k^{t−1} of eq. (5)."""
    c = server_state["c"]
    c_k = client_state["c"] if client_state is not None else tree_zeros_like(c)
    return init_step_state(server_state["params"], c_k=c_k, correction=tree_sub(c, c_k))


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """Eq. (5): θ_k ← θ_k − η_l (∇L_k(θ_k; b) − c_k + c)."""
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    direction = tree_add(grads, step_state["correction"])
    return advance(step_state, sgd_step(params, direction, hparams), loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, dict]:
    """Eq. (6). Message ``{"delta": Δ_k, "delta_c": Δc_k}``; new client state ``{"c": c_k^t}``.

    Branch-free on tensor values so it runs under :func:`torch.func.vmap`: ``steps`` K may be a
    Python int (reference engine) or a 0-d integer tensor (vectorized engine, one K per client).
    With K = 0 the client keeps c_k and Δc_k = 0 (a ``torch.where``, not a Python ``if``).
    """
    c_k = step_state["c_k"]
    c = server_state["c"]
    delta = tree_sub(step_state["params"], server_state["params"])
    first = next(iter(delta.values()))
    k_steps = step_state["steps"]
    # K as a float64 tensor (0-d, or batched under vmap); the coefficient −1/(K η_l) is formed in
    # float64, as the Python-float arithmetic of the reference would, then cast to the model dtype.
    if torch.is_tensor(k_steps):
        k = k_steps.to(torch.float64)
    else:
        k = torch.tensor(float(k_steps), dtype=torch.float64, device=first.device)
    active = k > 0
    coef = torch.where(active, -1.0 / (torch.clamp(k, min=1.0) * hparams["lr"]), 0.0)
    # c_k^t = c_k − c + (θ^{t−1} − θ_k)/(K η_l) = c_k − c − Δ_k/(K η_l)
    c_new = {
        key: torch.where(active, coef.to(delta[key].dtype) * delta[key] + (c_k[key] - c[key]), c_k[key])
        for key in c_k
    }
    return {"delta": delta, "delta_c": tree_sub(c_new, c_k)}, {"c": c_new}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """θ ← θ + η_g mean_k Δ_k (unweighted; ``weights`` unused);  c ← c + (1/m) Σ_k Δc_k."""
    eta_g = float(hparam(hparams, HPARAMS, "server_lr"))
    mean_delta = tree_mean([msg["delta"] for msg in messages])
    sum_dc = tree_sum([msg["delta_c"] for msg in messages])
    return {
        **server_state,
        "params": tree_axpy(eta_g, mean_delta, server_state["params"]),
        "c": tree_add(server_state["c"], tree_scale(sum_dc, 1.0 / server_state["num_clients"])),
    }
