"""Adaptive server optimizers of FedOpt (Reddi et al. 2021, "Adaptive Federated Optimization",
Algorithm 2): the shared server step of ``fedadam``, ``fedyogi`` and ``fedadagrad``. Not an
algorithm itself.

Clients run FedAvg's local SGD (:mod:`.fedavg`) and send Δ_k = θ_k − θ^{t−1}. The server treats
Δ_t = Σ_{k∈P_t} n_k Δ_k / Σ n_k as a pseudo-gradient (ascent direction) and, element-wise,

    m_t = β1 m_{t−1} + (1 − β1) Δ_t
    v_t = v_{t−1} + Δ_t²                                       (FedAdagrad)
    v_t = v_{t−1} − (1 − β2) Δ_t² sign(v_{t−1} − Δ_t²)         (FedYogi)
    v_t = β2 v_{t−1} + (1 − β2) Δ_t²                           (FedAdam)
    θ_t = θ_{t−1} + η m_t / (√v_t + τ)

with m_{−1} = 0 and v_{−1} = τ² (the algorithm's requirement v_{−1} ≥ τ², at its minimum).
Hyperparameters: ``server_lr`` η, ``beta1`` β1, ``beta2`` β2 (Adam and Yogi), ``tau`` τ (the
adaptivity, > 0). Defaults β1 = 0.9, β2 = 0.99, τ = 1e-3 are the paper's; η = 0.01 is a
middle value of its grids (it is tuned per task there).

Departures and choices: no bias correction (Algorithm 2 has none); Δ_t is n_k-weighted over the
sampled clients as in FedAvg (Algorithm 2 writes the unweighted mean; the two coincide for equal
n_k); β1 applies to FedAdagrad too, as Algorithm 2 writes it (β1 = 0 gives plain Adagrad).
"""

from __future__ import annotations

import torch

from fedbench.algorithms.fedavg import weighted_delta
from fedbench.algorithms.hparams import hparam
from fedbench.tree import Tree, tree_zeros_like

RULES = ("adagrad", "yogi", "adam")


def server_init(params: Tree, hparams: dict, defaults: dict) -> dict:
    """ServerState ``{"params": θ⁰, "m": 0, "v": τ²}``.

    Raises:
        ValueError: τ ≤ 0.
    """
    tau = float(hparam(hparams, defaults, "tau"))
    if not tau > 0:
        raise ValueError(f"adaptive server optimizer: tau must be > 0 (got {tau})")
    return {"params": params, "m": tree_zeros_like(params),
            "v": {k: torch.full_like(v, tau * tau) for k, v in params.items()}}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict, defaults: dict,
                  rule: str) -> dict:
    """One FedOpt server step with the second-moment ``rule`` ("adagrad", "yogi" or "adam")."""
    return adaptive_step(server_state, weighted_delta(messages, weights), hparams, defaults, rule)


def adaptive_step(server_state: dict, delta: Tree, hparams: dict, defaults: dict, rule: str) -> dict:
    """The server step on a given aggregate Δ_t (an ascent direction; shared with
    :mod:`fedbench.algorithms.local_update`'s Adam server, which passes −q̄)."""
    eta, beta1, tau = (float(hparam(hparams, defaults, k)) for k in ("server_lr", "beta1", "tau"))
    m = {k: beta1 * server_state["m"][k] + (1.0 - beta1) * d for k, d in delta.items()}
    v_prev = server_state["v"]
    sq = {k: d * d for k, d in delta.items()}
    if rule == "adagrad":
        v = {k: v_prev[k] + sq[k] for k in sq}
    elif rule == "yogi":
        beta2 = float(hparam(hparams, defaults, "beta2"))
        v = {k: v_prev[k] - (1.0 - beta2) * sq[k] * torch.sign(v_prev[k] - sq[k]) for k in sq}
    elif rule == "adam":
        beta2 = float(hparam(hparams, defaults, "beta2"))
        v = {k: beta2 * v_prev[k] + (1.0 - beta2) * sq[k] for k in sq}
    else:
        raise ValueError(f"unknown adaptive rule {rule!r}; known: {RULES}")
    theta = server_state["params"]
    params = {k: theta[k] + eta * m[k] / (torch.sqrt(v[k]) + tau) for k in theta}
    return {**server_state, "params": params, "m": m, "v": v}
